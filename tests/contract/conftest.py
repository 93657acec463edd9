"""The adapter sets the shipped conformance suites (agentturn.testing) run against here.

Every store suite test takes the ``store_kit`` fixture (the ChatMemory suite ``memory_kit``, the same kit)
and runs once per adapter set:

* ``memory``: the in-memory reference adapters;
* ``dynamodb-local``: DynamoDB adapters on Amazon DynamoDB Local, S3 on moto's server;
* ``dynamodb-moto``: DynamoDB adapters on moto's server (the local console's emulator), S3 on moto.

Each kit declares its capabilities; nothing is skipped by a backend's name. All AWS traffic is boto3 over
HTTP to 127.0.0.1. Each test gets a fresh turns table (cheap), so ``find_runnable`` sees only that test's
turns; the conversations table is shared per session, which is safe because every test uses fresh
conversation ids (``new_conversation_id``).
"""

from __future__ import annotations

import dataclasses

import pytest

from agentturn.aws.turn_store import DynamoDBTurnStore
from agentturn.ports.store import TurnStore
from agentturn.testing import Capabilities, FakeClock, StoreKit, new_conversation_id, new_turn, unique
from agentturn.testing.aws import DYNAMODB_CAPABILITIES, DynamoDBInspector, break_dynamodb_snapshot
from agentturn.testing.memory import in_memory_store_kit
from tests.contract.aws_adapters import AwsSession, aws_session
from tests.support.emulators import Emulator

__all__ = ["AwsSession", "new_conversation_id", "new_turn", "unique"]

#: moto's DynamoDB evaluates a condition and applies the write without isolation from concurrent requests:
#: in a probe, 8 concurrent claims of one turn granted two leases in 1 of 30 rounds. Races are proven on
#: DynamoDB Local (AWS's own implementation) and on the in-memory reference.
MOTO_CAPABILITIES = dataclasses.replace(DYNAMODB_CAPABILITIES, atomic_conditional_writes=False)


@pytest.fixture(scope="session")
def dynamodb_local_session(dynamodb_local: Emulator, moto_server: Emulator) -> AwsSession:
    return aws_session(dynamodb_local, moto_server)


@pytest.fixture(scope="session")
def dynamodb_moto_session(moto_server: Emulator) -> AwsSession:
    return aws_session(moto_server, moto_server)


def _aws_kit(name: str, session: AwsSession, capabilities: Capabilities) -> StoreKit:
    clock = FakeClock()
    # A fresh turns table per test: the sweeper's index then holds this test's turns only. The
    # conversations table is shared: every test uses new conversation ids.
    turns_table = session.fresh_turns_table()

    def new_store() -> TurnStore:
        return session.turn_store(turns_table, clock)

    kit = StoreKit(
        name,
        clock,
        new_store,
        session.chat_memory(),
        capabilities,
        break_snapshot=break_dynamodb_snapshot,
    )
    assert isinstance(kit.store, DynamoDBTurnStore)
    kit.inspector = DynamoDBInspector(kit.store, session.s3, session.bucket)
    return kit


@pytest.fixture(
    params=[
        "memory",
        pytest.param("dynamodb-local", marks=pytest.mark.integration),
        pytest.param("dynamodb-moto", marks=pytest.mark.integration),
    ]
)
def store_kit(request: pytest.FixtureRequest) -> StoreKit:
    if request.param == "memory":
        return in_memory_store_kit()
    if request.param == "dynamodb-local":
        return _aws_kit(request.param, request.getfixturevalue("dynamodb_local_session"), DYNAMODB_CAPABILITIES)
    return _aws_kit(request.param, request.getfixturevalue("dynamodb_moto_session"), MOTO_CAPABILITIES)


@pytest.fixture
def memory_kit(store_kit: StoreKit) -> StoreKit:
    return store_kit
