"""Services from the environment: boto3 clients, the DynamoDB/SQS/S3 adapters, the agents.

The only place that knows the deployed resources. ``TURNS_TABLE``, ``CONVERSATIONS_TABLE``,
``RESUME_QUEUE_URL`` and optionally ``SNAPSHOT_BUCKET`` name them (the names of
:mod:`agentturn.aws.tables`); ``AGENTTURN_*`` tune the handlers (see
:class:`~agentturn.api.settings.Settings`). Endpoints come from boto3's own configuration
(``AWS_ENDPOINT_URL`` and friends), which is how the local dev server and the tests point it elsewhere.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

from agentturn.api.agents import AgentCatalog
from agentturn.api.services import Services, no_handoff_key
from agentturn.api.settings import Settings, SettingsError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

    from agentturn.engine.clock import Clock


#: boto3's default session is not safe for concurrent client creation (the local server runs requests on threads).
_CREATING: Final = threading.Lock()


class LazyClient:
    """A boto3 client created on its first use, then the client itself for every attribute.

    Creating a client loads its service model: S3's costs about as much as ``import boto3`` itself. A handler
    that never spills a body to S3 (most never do) or never enqueues (the run handler, unless a turn yields)
    should not pay that on its cold start.
    """

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._client: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._client is None:
            with _CREATING:
                if self._client is None:
                    self._client = self._factory()
        return getattr(self._client, name)

    @property
    def created(self) -> bool:
        return self._client is not None


@dataclass(frozen=True)
class AwsClients:
    dynamodb: DynamoDBClient
    sqs: SQSClient
    s3: S3Client | None

    @classmethod
    def default(cls, *, with_s3: bool) -> AwsClients:
        """DynamoDB's client now (every request uses it); SQS's and S3's on their first use."""
        from agentturn.aws._support import dynamodb_client, s3_client, sqs_client

        with _CREATING:
            dynamodb = dynamodb_client()
        return cls(
            dynamodb=dynamodb,
            sqs=cast("SQSClient", LazyClient(sqs_client)),
            s3=cast("S3Client", LazyClient(s3_client)) if with_s3 else None,
        )


@dataclass(frozen=True)
class Resources:
    """The deployed resources the handlers use, from the environment the stack sets."""

    turns_table: str
    conversations_table: str
    resume_queue_url: str
    snapshot_bucket: str | None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Resources:
        from agentturn.aws import tables

        env = os.environ if environ is None else environ
        required = (tables.ENV_TURNS_TABLE, tables.ENV_CONVERSATIONS_TABLE, tables.ENV_RESUME_QUEUE_URL)
        missing = [name for name in required if not env.get(name, "").strip()]
        if missing:
            raise SettingsError(f"environment variables {missing!r} must name the agentturn resources")
        # Not TableNames.from_env: it also requires the idempotency table, which these handlers do not use
        # (idempotency lives in the turn snapshot).
        return cls(
            turns_table=env[tables.ENV_TURNS_TABLE].strip(),
            conversations_table=env[tables.ENV_CONVERSATIONS_TABLE].strip(),
            resume_queue_url=env[tables.ENV_RESUME_QUEUE_URL].strip(),
            snapshot_bucket=env.get(tables.ENV_SNAPSHOT_BUCKET, "").strip() or None,
        )


def handoff_key_from_env(environ: Mapping[str, str] | None = None) -> Callable[[], bytes | None]:
    """Where the sealing key comes from (read when first needed); a key shorter than 32 bytes is refused."""
    from agentturn.aws import tables
    from agentturn.engine.handoff import MIN_KEY_BYTES

    env = os.environ if environ is None else environ
    text, arn = env.get(tables.ENV_HANDOFF_KEY, "").strip(), env.get(tables.ENV_HANDOFF_SECRET_ARN, "").strip()

    def checked(value: str, source: str) -> bytes:
        key = value.encode()
        if len(key) < MIN_KEY_BYTES:
            raise SettingsError(f"{source} must hold at least {MIN_KEY_BYTES} bytes")
        return key

    if text:
        key = checked(text, tables.ENV_HANDOFF_KEY)
        return lambda: key
    if arn:
        from agentturn.aws.secrets import read_secret

        return functools.cache(lambda: checked(read_secret(arn), f"the secret {arn!r}"))
    return no_handoff_key


def services_from_env(
    environ: Mapping[str, str] | None = None, *, clients: AwsClients | None = None, clock: Clock | None = None
) -> Services:
    """The services a Lambda builds from its environment; ``clock`` (tests: an injected one) is the store's and
    the runners' time, else the system's."""
    from agentturn.aws.chat_memory import DynamoDBChatMemory
    from agentturn.aws.resume_queue import SqsResumeQueue
    from agentturn.aws.turn_store import DynamoDBTurnStore

    settings = Settings.from_env(environ)
    resources = Resources.from_env(environ)
    bucket = resources.snapshot_bucket
    clients = clients or AwsClients.default(with_s3=bucket is not None)
    store = DynamoDBTurnStore(
        resources.turns_table,
        client=clients.dynamodb,
        s3_client=clients.s3,
        bucket=bucket,
        terminal_ttl_seconds=settings.terminal_ttl_seconds,
        clock=clock or time.time,
    )
    memory = DynamoDBChatMemory(
        resources.conversations_table,
        client=clients.dynamodb,
        s3_client=clients.s3,
        bucket=bucket,
        inbox_owner_cards=settings.inbox_owner_cards,
    )
    queue = SqsResumeQueue(resources.resume_queue_url, clients.sqs)
    agents = AgentCatalog.from_spec(settings.agents, default_agent=settings.default_agent)
    from agentturn.api.live_wiring import live_listeners

    return Services(
        store=store,
        chat_memory=memory,
        queue=queue,
        agents=agents,
        settings=settings,
        listeners=live_listeners(environ),
        handoff_key=handoff_key_from_env(environ),
        clock=clock or time.time,
    )
