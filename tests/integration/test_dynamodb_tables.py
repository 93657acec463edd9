"""The table definitions: created as described, idempotently, with TTL; names read from the environment."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentturn.aws.tables import (
    CONVERSATIONS_TABLE,
    IDEMPOTENCY_TABLE,
    TABLES,
    TURNS_TABLE,
    TableNames,
    TableSchemaMismatchError,
    create_tables,
)
from tests.contract.aws_adapters import dynamodb_client, new_table_names
from tests.support.emulators import Emulator


@pytest.mark.integration
@pytest.mark.parametrize("emulator_fixture", ["dynamodb_local", "moto_server"])
def test_create_tables_makes_the_described_tables_and_is_idempotent(
    emulator_fixture: str, request: pytest.FixtureRequest
) -> None:
    # GIVEN an emulator and fresh names
    client = dynamodb_client(request.getfixturevalue(emulator_fixture))
    names = new_table_names()

    # WHEN the tables are created twice
    create_tables(client, names)
    create_tables(client, names)

    # THEN each exists once, ACTIVE, keyed and indexed as described, billed on demand, with TTL on
    for definition in (TURNS_TABLE, CONVERSATIONS_TABLE, IDEMPOTENCY_TABLE):
        table = client.describe_table(TableName=names.table_name(definition))["Table"]
        assert table["TableStatus"] == "ACTIVE"
        assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
        assert {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]} == {
            definition.partition_key.name: "HASH",
            **({definition.sort_key.name: "RANGE"} if definition.sort_key else {}),
        }
        assert {i["IndexName"] for i in table.get("GlobalSecondaryIndexes", [])} == {
            i.name for i in definition.global_indexes
        }
        assert {i["IndexName"] for i in table.get("LocalSecondaryIndexes", [])} == {
            i.name for i in definition.local_indexes
        }
        ttl = client.describe_time_to_live(TableName=names.table_name(definition))["TimeToLiveDescription"]
        assert (ttl["TimeToLiveStatus"], ttl.get("AttributeName")) == ("ENABLED", definition.ttl_attribute)
    # Powertools' idempotency layer expects its default key and TTL attribute names
    idempotency = client.describe_time_to_live(TableName=names.idempotency_table)["TimeToLiveDescription"]
    assert idempotency["AttributeName"] == "expiration"


@pytest.mark.integration
def test_an_existing_table_with_other_keys_is_refused(dynamodb_local: Emulator) -> None:
    # GIVEN a table under the turns table's name, keyed differently
    client = dynamodb_client(dynamodb_local)
    names = new_table_names()
    client.create_table(
        TableName=names.turns_table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )

    # WHEN the tables are created
    # THEN it refuses to run on a table the adapters would misuse, naming it
    with pytest.raises(TableSchemaMismatchError, match=names.turns_table):
        create_tables(client, names, definitions=(TURNS_TABLE,))


def test_the_definitions_are_plain_data_for_the_cdk_stack() -> None:
    # GIVEN the definitions
    # WHEN the CDK stack reads them
    # THEN every key attribute is declared once, with a type; the request shape is what boto3 takes
    assert set(TABLES) == {"Turns", "Conversations", "Idempotency"}
    request = TURNS_TABLE.create_table_request("turns")
    assert request["BillingMode"] == "PAY_PER_REQUEST"
    assert {a["AttributeName"] for a in request["AttributeDefinitions"]} == {
        "turnId",
        "runnableShard",
        "runnableSince",
        "overdueShard",
        "waitExpiresAt",
    }
    assert {i["IndexName"]: i["Projection"]["ProjectionType"] for i in request["GlobalSecondaryIndexes"]} == {
        "runnable": "KEYS_ONLY",
        "overdue": "INCLUDE",
    }
    # The timeline has no local index (its key tells model entries from cards); the global indexes are the
    # sparse conversations list, which projects only the title, and the sparse inbox of pending cards, which
    # projects what an inbox page shows (the card's body)
    conversations = CONVERSATIONS_TABLE.create_table_request("conversations")
    assert "LocalSecondaryIndexes" not in conversations
    [listing, inbox] = conversations["GlobalSecondaryIndexes"]
    assert listing["IndexName"] == "byOwner"
    assert listing["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["title"]}
    assert inbox["IndexName"] == "byAssignee"
    assert [k["AttributeName"] for k in inbox["KeySchema"]] == ["assignee", "inboxDue"]
    assert inbox["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["messageId", "body", "bodyRef"]}
    assert IDEMPOTENCY_TABLE.partition_key.name == "id"
    assert IDEMPOTENCY_TABLE.ttl_attribute == "expiration"


def test_importing_the_definitions_does_not_import_boto3() -> None:
    # GIVEN a fresh interpreter
    # WHEN it imports agentturn, agentturn.aws and the table definitions
    code = "import sys, agentturn, agentturn.aws, agentturn.aws.tables; print('boto3' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout

    # THEN boto3 was not imported (the CDK app and cold starts do not pay for it)
    assert out.strip() == "False"


def test_table_names_come_from_the_environment() -> None:
    # GIVEN a Lambda's environment
    env = {
        "TURNS_TABLE": "agentturn-turns",
        "CONVERSATIONS_TABLE": "agentturn-conversations",
        "IDEMPOTENCY_TABLE": "agentturn-idempotency",
        "SNAPSHOT_BUCKET": "agentturn-snapshots",
        "RESUME_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/resume",
    }

    # WHEN the names are read, and written back
    names = TableNames.from_env(env)

    # THEN they round-trip; optional ones may be absent or empty
    assert names.turns_table == "agentturn-turns"
    assert names.snapshot_bucket == "agentturn-snapshots"
    assert names.to_env() == env
    minimal = TableNames.from_env({**env, "SNAPSHOT_BUCKET": "", "RESUME_QUEUE_URL": ""})
    assert (minimal.snapshot_bucket, minimal.resume_queue_url) == (None, None)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TURNS_TABLE": "t-turns", "CONVERSATIONS_TABLE": "t-conv"}, "IDEMPOTENCY_TABLE"),
        ({"TURNS_TABLE": "x", "CONVERSATIONS_TABLE": "t-conv", "IDEMPOTENCY_TABLE": "t-idem"}, "turns_table"),
        (
            {
                "TURNS_TABLE": "t-turns",
                "CONVERSATIONS_TABLE": "t-conv",
                "IDEMPOTENCY_TABLE": "t-idem",
                "SNAPSHOT_BUCKET": "Bad_Bucket",
            },
            "snapshot_bucket",
        ),
    ],
)
def test_missing_or_invalid_names_are_refused(env: dict[str, str], message: str) -> None:
    # GIVEN an environment missing a table or naming one that AWS would refuse
    # WHEN the names are read
    # THEN a clear error names the problem (moto would accept a one-character table; AWS would not)
    with pytest.raises(ValueError, match=message):
        TableNames.from_env(env)
