"""Building the AWS adapters on the emulators, for the contract suite and for the scenario suite's backend.

No fixtures here (conftest files hold those): plain functions, so ``tests/scenarios/conftest.py`` can build
a DynamoDB backend from the root ``dynamodb_local`` / ``moto_server`` fixtures with one call.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from agentturn.aws.chat_memory import DynamoDBChatMemory
from agentturn.aws.tables import CONVERSATIONS_TABLE, TURNS_TABLE, TableNames, create_tables
from agentturn.aws.turn_store import DynamoDBTurnStore
from agentturn.testing import FakeClock, new_conversation_id, unique
from tests.support.emulators import Emulator, boto3_session_kwargs

__all__ = ["CLIENT_CONFIG", "AwsSession", "aws_session", "new_conversation_id", "unique"]

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

#: Enough connections for the 8-thread races, retries for the emulators' occasional hiccup.
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, max_pool_connections=32)


def dynamodb_client(emulator: Emulator) -> DynamoDBClient:
    return boto3.client("dynamodb", endpoint_url=emulator.endpoint_url, config=CLIENT_CONFIG, **boto3_session_kwargs())


def s3_client(emulator: Emulator) -> S3Client:
    return boto3.client("s3", endpoint_url=emulator.endpoint_url, config=CLIENT_CONFIG, **boto3_session_kwargs())


def sqs_client(emulator: Emulator) -> SQSClient:
    return boto3.client("sqs", endpoint_url=emulator.endpoint_url, config=CLIENT_CONFIG, **boto3_session_kwargs())


def new_table_names() -> TableNames:
    return TableNames(
        turns_table=unique("turns"),
        conversations_table=unique("conversations"),
        idempotency_table=unique("idempotency"),
        snapshot_bucket=unique("snapshots"),
    )


@dataclass
class AwsSession:
    """One emulator pair's shared resources: clients, a bucket, a set of tables."""

    dynamodb: DynamoDBClient
    s3: S3Client
    names: TableNames

    @property
    def bucket(self) -> str:
        assert self.names.snapshot_bucket is not None
        return self.names.snapshot_bucket

    def fresh_turns_table(self) -> str:
        """A new, empty turns table (cheap: the sweeper's index then holds one test's turns only)."""
        name = unique("turns")
        create_tables(self.dynamodb, self.names.model_copy(update={"turns_table": name}), definitions=(TURNS_TABLE,))
        return name

    def fresh_conversations_table(self) -> str:
        """A new, empty conversations table (for tests that use fixed conversation ids)."""
        name = unique("conversations")
        create_tables(
            self.dynamodb,
            self.names.model_copy(update={"conversations_table": name}),
            definitions=(CONVERSATIONS_TABLE,),
        )
        return name

    def turn_store(self, table: str, clock: FakeClock, **overrides: Any) -> DynamoDBTurnStore:
        options: dict[str, Any] = {
            "client": self.dynamodb,
            "s3_client": self.s3,
            "bucket": self.bucket,
            "clock": clock,
            # Every write of the conformance suite checks that its text reads back as the turn it returns.
            "check_round_trip": True,
        }
        options.update(overrides)
        return DynamoDBTurnStore(table, **options)

    def chat_memory(self, table: str | None = None, **overrides: Any) -> DynamoDBChatMemory:
        options: dict[str, Any] = {"client": self.dynamodb, "s3_client": self.s3, "bucket": self.bucket}
        options.update(overrides)
        return DynamoDBChatMemory(table or self.names.conversations_table, **options)


_sessions: dict[tuple[str, str], AwsSession] = {}
_sessions_lock = threading.Lock()


def aws_session(dynamodb_emulator: Emulator, s3_emulator: Emulator) -> AwsSession:
    """The (cached) session for this pair of emulators: tables and bucket are made once per test run."""
    key = (dynamodb_emulator.endpoint_url, s3_emulator.endpoint_url)
    with _sessions_lock:
        session = _sessions.get(key)
        if session is None:
            names = new_table_names()
            session = AwsSession(dynamodb_client(dynamodb_emulator), s3_client(s3_emulator), names)
            create_tables(session.dynamodb, names)
            session.s3.create_bucket(Bucket=session.bucket)
            _sessions[key] = session
        return session


def fresh_dynamodb_adapters(
    dynamodb_emulator: Emulator, s3_emulator: Emulator, clock: FakeClock
) -> tuple[DynamoDBTurnStore, DynamoDBChatMemory]:
    """A turn store and a chat memory on tables no other test has touched (S3 bucket shared)."""
    session = aws_session(dynamodb_emulator, s3_emulator)
    return session.turn_store(session.fresh_turns_table(), clock), session.chat_memory(
        session.fresh_conversations_table()
    )
