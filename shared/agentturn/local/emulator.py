"""The embedded AWS: moto's server on 127.0.0.1, and the resources a deployment has (tables from the
shared definitions in :mod:`agentturn.aws.tables`, the snapshot bucket, the resume queue and its DLQ).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from agentturn.aws.tables import TableNames, create_tables
from agentturn.listeners.trace import TracePoint, mark

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

LOOPBACK: Final = "127.0.0.1"
#: Names are fixed (not random) so that a persisted state finds its tables again after a restart.
PREFIX: Final = "agentturn-dev"
#: Worker "timeout" locally, and the queue's visibility timeout at the 6x the deployed stack uses.
WORKER_TIMEOUT_SECONDS: Final = 60
VISIBILITY_TIMEOUT_SECONDS: Final = 6 * WORKER_TIMEOUT_SECONDS
MAX_RECEIVE_COUNT: Final = 5
#: Credentials for the emulator when the environment has none: moto accepts any, and with these set
#: botocore never goes looking for others (no instance-metadata lookups off this machine).
_DEV_CREDENTIALS: Final = {"AWS_ACCESS_KEY_ID": "agentturn-dev", "AWS_SECRET_ACCESS_KEY": "agentturn-dev"}


def region(environ: MutableMapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"


class SerialDynamoDB:
    """WSGI middleware: moto serves one DynamoDB request at a time; SQS and S3 stay concurrent.

    moto evaluates a condition and applies the write without isolation from concurrent requests (8
    concurrent lease claims of one turn once granted two), while real DynamoDB is atomic per item and the
    runtime's fencing relies on it. The dev server does send concurrent requests (console, submit, worker),
    so it serialises DynamoDB operations; SQS long polls must not wait behind them, nor they behind a poll.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
        if not target.startswith("DynamoDB_"):
            return self.app(environ, start_response)
        operation = target.rsplit(".", 1)[-1]
        mark(TracePoint.DYNAMODB_REQUEST, operation=operation)
        try:
            with self.lock:
                # Consumed inside the lock: a WSGI app may do its work lazily, while the body is iterated.
                return list(self.app(environ, start_response))
        finally:
            mark(TracePoint.DYNAMODB_ANSWERED, operation=operation)


def _atomic_moto_server(port: int) -> Any:
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    class AtomicMotoServer(ThreadedMotoServer):
        """ThreadedMotoServer (moto is pinned at 5.2.5) with :class:`SerialDynamoDB` around its app; the
        rest of its start and stop is moto's own."""

        def _server_entry(self) -> None:
            app = SerialDynamoDB(DomainDispatcherApplication(create_backend_app))
            self._server = make_server(self._ip_address, self._port, app, True, request_handler=MotoRequestHandler)
            self._server_ready_event.set()
            self._server.serve_forever()

    return AtomicMotoServer(ip_address=LOOPBACK, port=port, verbose=False)


class MotoEmulator:
    """moto's threaded server bound to loopback on a free port, quiet, with atomic DynamoDB writes and a
    bounded stop."""

    def __init__(self, port: int = 0) -> None:
        self._port = port
        self._server: Any = None

    def start(self) -> str:
        # moto logs every request through werkzeug; the dev server prints what matters itself.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server = _atomic_moto_server(self._port)
        self._server.start()
        return self.endpoint_url

    @property
    def endpoint_url(self) -> str:
        host, port = self._server.get_host_and_port()
        return f"http://{host}:{port}"

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop serving; ``False`` if it did not stop within ``timeout`` (its thread is a daemon)."""
        if self._server is None:
            return True
        stopper = threading.Thread(target=self._server.stop, name="moto-stop", daemon=True)
        stopper.start()
        stopper.join(timeout)
        self._server = None
        return not stopper.is_alive()


def point_environment_at(endpoint_url: str, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Point this process's AWS SDK at the emulator for DynamoDB, SQS and S3 only.

    Service-specific endpoint variables (not ``AWS_ENDPOINT_URL``) so that a real model adapter (Bedrock)
    still reaches AWS with the developer's own credentials. Returns what was set.
    """
    env = os.environ if environ is None else environ
    settings = {
        "AWS_ENDPOINT_URL_DYNAMODB": endpoint_url,
        "AWS_ENDPOINT_URL_SQS": endpoint_url,
        "AWS_ENDPOINT_URL_S3": endpoint_url,
        "AWS_REGION": region(env),
        "AWS_DEFAULT_REGION": region(env),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    if not (env.get("AWS_ACCESS_KEY_ID") or env.get("AWS_PROFILE")):
        settings.update(_DEV_CREDENTIALS)
    env.update(settings)
    return settings


@dataclass(frozen=True)
class Clients:
    dynamodb: DynamoDBClient
    sqs: SQSClient
    s3: S3Client

    @classmethod
    def for_endpoint(cls, endpoint_url: str) -> Clients:
        import boto3

        kwargs: dict[str, Any] = {"endpoint_url": endpoint_url, "region_name": region()}
        return cls(
            dynamodb=boto3.client("dynamodb", **kwargs),
            sqs=boto3.client("sqs", **kwargs),
            s3=boto3.client("s3", **kwargs),
        )


@dataclass(frozen=True)
class Resources:
    names: TableNames
    queue_url: str
    queue_arn: str
    dead_letter_queue_url: str


def provision(clients: Clients, prefix: str = PREFIX) -> Resources:
    """Create (idempotently) everything the handlers' environment names."""
    sqs = clients.sqs
    dlq_url = sqs.create_queue(QueueName=f"{prefix}-resume-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    queue_url = sqs.create_queue(
        QueueName=f"{prefix}-resume",
        Attributes={
            "VisibilityTimeout": str(VISIBILITY_TIMEOUT_SECONDS),
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVE_COUNT)}),
        },
    )["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    names = TableNames(
        turns_table=f"{prefix}-turns",
        conversations_table=f"{prefix}-conversations",
        idempotency_table=f"{prefix}-idempotency",
        snapshot_bucket=f"{prefix}-snapshots",
        resume_queue_url=queue_url,
    )
    create_tables(clients.dynamodb, names)
    bucket = names.snapshot_bucket or ""
    if region() == "us-east-1":
        clients.s3.create_bucket(Bucket=bucket)
    else:
        clients.s3.create_bucket(
            Bucket=bucket,
            CreateBucketConfiguration={"LocationConstraint": region()},  # type: ignore[typeddict-item]
        )
    return Resources(names=names, queue_url=queue_url, queue_arn=queue_arn, dead_letter_queue_url=dlq_url)
