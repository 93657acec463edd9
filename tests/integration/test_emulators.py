"""Smoke test of the harness: the emulators start, answer on 127.0.0.1 and behave as the code relies on."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.support.emulators import Emulator, boto3_session_kwargs

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def _dynamodb(emulator: Emulator) -> DynamoDBClient:
    return boto3.client("dynamodb", endpoint_url=emulator.endpoint_url, **boto3_session_kwargs())


@pytest.mark.parametrize("emulator_fixture", ["dynamodb_local", "moto_server"])
def test_conditional_put_fails_the_second_time_and_returns_the_old_item(
    emulator_fixture: str, request: pytest.FixtureRequest
) -> None:
    # GIVEN a fresh table on the emulator
    emulator: Emulator = request.getfixturevalue(emulator_fixture)
    client = _dynamodb(emulator)
    table = _unique("smoke")
    client.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 10})
    first = {"pk": {"S": "turn#1"}, "state": {"S": "first"}}
    second = {"pk": {"S": "turn#1"}, "state": {"S": "second"}}

    # WHEN the same key is put twice, each time only if it does not exist yet
    def put_if_absent(item: dict[str, dict[str, str]]) -> None:
        client.put_item(
            TableName=table,
            Item=item,
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )

    put_if_absent(first)
    with pytest.raises(ClientError) as failure:
        put_if_absent(second)

    # THEN the second put fails its condition, reports the stored item, and leaves it unchanged
    assert failure.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert failure.value.response.get("Item") == first
    stored = client.get_item(TableName=table, Key={"pk": {"S": "turn#1"}}, ConsistentRead=True)
    assert stored["Item"] == first


def test_sqs_queue_delivers_a_sent_message(moto_server: Emulator) -> None:
    # GIVEN a queue on moto
    sqs = boto3.client("sqs", endpoint_url=moto_server.endpoint_url, **boto3_session_kwargs())
    queue_url = sqs.create_queue(QueueName=_unique("smoke"))["QueueUrl"]

    # WHEN a message is sent and then received
    sent = sqs.send_message(QueueUrl=queue_url, MessageBody='{"turn": 1}')
    received = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)

    # THEN exactly that message comes back, and it can be deleted
    messages = received.get("Messages", [])
    assert [(m["MessageId"], m["Body"]) for m in messages] == [(sent["MessageId"], '{"turn": 1}')]
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=messages[0]["ReceiptHandle"])


def test_s3_object_round_trips(moto_server: Emulator) -> None:
    # GIVEN a bucket on moto
    s3 = boto3.client("s3", endpoint_url=moto_server.endpoint_url, **boto3_session_kwargs())
    bucket = _unique("smoke")
    s3.create_bucket(Bucket=bucket)

    # WHEN an object is put
    s3.put_object(Bucket=bucket, Key="turns/1.json", Body=b'{"turn": 1}', ContentType="application/json")

    # THEN getting it returns the same bytes and content type
    got = s3.get_object(Bucket=bucket, Key="turns/1.json")
    assert got["Body"].read() == b'{"turn": 1}'
    assert got["ContentType"] == "application/json"
