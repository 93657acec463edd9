"""SqsResumeQueue over moto's SQS, and the payload check the worker applies on receipt."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import pytest

from agentturn import InMemoryResumeQueue, ResumeMessage, ResumeQueue
from agentturn.aws.resume_queue import InvalidResumeMessageError, SqsResumeQueue, parse_resume_message
from tests.contract.aws_adapters import sqs_client, unique
from tests.support.emulators import Emulator

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


def receive_all(sqs: SQSClient, queue_url: str, expected: int, *, deadline_seconds: float = 5.0) -> list[str]:
    """Bodies received until ``expected`` arrived or the deadline passed (then one more empty poll)."""
    bodies: list[str] = []
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        response = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        for message in response.get("Messages", []):
            bodies.append(message["Body"])
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        if len(bodies) >= expected:
            break
    return bodies


@pytest.fixture
def sqs(moto_server: Emulator) -> SQSClient:
    return sqs_client(moto_server)


@pytest.mark.integration
def test_an_enqueued_turn_is_received_and_parsed(sqs: SQSClient) -> None:
    # GIVEN a queue and the adapter on it (it is a ResumeQueue)
    queue_url = sqs.create_queue(QueueName=unique("resume"))["QueueUrl"]
    queue = SqsResumeQueue(queue_url, sqs)
    assert isinstance(queue, ResumeQueue)

    # WHEN two turns are enqueued
    queue.enqueue("turn-1", 3)
    queue.enqueue("turn-2", 1)

    # THEN a worker receives both as compact {"turnId", "version"} and parses them back
    bodies = receive_all(sqs, queue_url, expected=2)
    assert sorted(bodies) == ['{"turnId":"turn-1","version":3}', '{"turnId":"turn-2","version":1}']
    parsed = sorted((parse_resume_message(b) for b in bodies), key=lambda m: m.turn_id)
    assert parsed == [ResumeMessage(turn_id="turn-1", version=3), ResumeMessage(turn_id="turn-2", version=1)]


@pytest.mark.integration
def test_a_fifo_queue_drops_a_duplicate_enqueue_of_the_same_version(sqs: SQSClient) -> None:
    # GIVEN a FIFO queue
    queue_url = sqs.create_queue(QueueName=unique("resume") + ".fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    queue = SqsResumeQueue(queue_url, sqs)

    # WHEN the same turn version is enqueued twice (a retried submit), then the next version
    queue.enqueue("turn-1", 2)
    queue.enqueue("turn-1", 2)
    queue.enqueue("turn-1", 3)

    # THEN the duplicate is not delivered; the versions come in order
    bodies = receive_all(sqs, queue_url, expected=3, deadline_seconds=1)
    assert [parse_resume_message(b).version for b in bodies] == [2, 3]


@pytest.mark.integration
def test_a_foreign_message_on_the_queue_is_refused_on_receipt(sqs: SQSClient) -> None:
    # GIVEN a message some other producer put on the queue
    queue_url = sqs.create_queue(QueueName=unique("resume"))["QueueUrl"]
    sqs.send_message(QueueUrl=queue_url, MessageBody='{"turn": "turn-1"}')

    # WHEN the worker receives and parses it
    (body,) = receive_all(sqs, queue_url, expected=1)

    # THEN it is refused with a typed error that names what is wrong
    with pytest.raises(InvalidResumeMessageError) as refused:
        parse_resume_message(body)
    assert "turnId" in str(refused.value)
    assert {e["path"] for e in refused.value.errors} >= {"turnId", "version", "turn"}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("", "not JSON"),
        ("turn-1", "not JSON"),
        ('["turn-1", 1]', "not an object"),
        ("null", "not an object"),
        ('{"turnId": "turn-1"}', "version"),
        ('{"version": 1}', "turnId"),
        ('{"turnId": "", "version": 1}', "turnId"),
        ('{"turnId": "turn-1", "version": -1}', "version"),
        ('{"turnId": "turn-1", "version": "3"}', "version"),
        ('{"turnId": "turn-1", "version": 3.5}', "version"),
        ('{"turnId": 7, "version": 1}', "turnId"),
        ('{"turnId": "turn-1", "version": 1, "extra": true}', "extra"),
        (json.dumps({"turnId": "x" * 5000, "version": 1}), "bytes"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_bad_payloads_are_refused(body: str | bytes, reason: str) -> None:
    # GIVEN a body that is not a valid resume message
    # WHEN it is parsed
    with pytest.raises(InvalidResumeMessageError) as refused:
        parse_resume_message(body)

    # THEN it is refused with a ValueError subclass that says why
    assert isinstance(refused.value, ValueError)
    assert reason in str(refused.value)


def test_a_valid_payload_parses_from_text_and_bytes() -> None:
    # GIVEN what SqsResumeQueue sends, as text and as bytes
    wire: dict[str, Any] = ResumeMessage(turn_id="turn-1", version=4).to_wire()
    text = json.dumps(wire)

    # WHEN it is parsed
    # THEN it is the same message either way
    assert (
        parse_resume_message(text) == parse_resume_message(text.encode()) == ResumeMessage(turn_id="turn-1", version=4)
    )


def test_the_in_memory_queue_sends_the_same_message() -> None:
    # GIVEN the in-memory queue the tests use instead of SQS
    queue = InMemoryResumeQueue()

    # WHEN a turn is enqueued
    queue.enqueue("turn-1", 3)

    # THEN its message has the wire form the SQS adapter sends
    (message,) = queue.drain()
    assert parse_resume_message(json.dumps(message.to_wire())) == message


def test_the_adapter_refuses_a_missing_url_and_bad_delays() -> None:
    # GIVEN / WHEN an adapter is configured wrongly / THEN it says so at once
    with pytest.raises(ValueError, match="queue_url"):
        SqsResumeQueue("", client=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="delay_seconds"):
        SqsResumeQueue("https://sqs.example/q", client=object(), delay_seconds=901)  # type: ignore[arg-type]
