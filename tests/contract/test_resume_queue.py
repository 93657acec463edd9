"""The ResumeQueue contract (shipped in agentturn.testing) on the in-memory queue and on moto's SQS (standard
and FIFO), SqsResumeQueue's wire form, and the payload check the worker applies on receipt."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import pytest

from agentturn import InMemoryResumeQueue, ResumeMessage
from agentturn.aws.resume_queue import (
    MAX_BODY_BYTES,
    InvalidResumeMessageError,
    SqsResumeQueue,
    parse_resume_message,
)
from agentturn.testing import Capabilities, QueueKit
from agentturn.testing.memory import in_memory_queue_kit
from agentturn.testing.resume_queue_suite import ResumeQueueSuite
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


def _sqs_kit(sqs: SQSClient, *, fifo: bool) -> QueueKit:
    name = unique("resume") + (".fifo" if fifo else "")
    attributes: dict[str, str] = {"FifoQueue": "true"} if fifo else {}
    queue_url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]

    def receive(expected: int) -> list[ResumeMessage]:
        # A FIFO queue drops a duplicate: waiting the full 5 s for one that never comes would prove no more.
        bodies = receive_all(sqs, queue_url, expected, deadline_seconds=1.0 if fifo else 5.0)
        return [parse_resume_message(body) for body in bodies]

    # A standard queue may deliver out of order and twice; on a FIFO queue the adapter deduplicates by turn
    # version, and one turn's messages keep their order.
    capabilities = Capabilities(delivers_duplicates=not fifo, ordered_delivery=fifo)
    return QueueKit("sqs-fifo" if fifo else "sqs", SqsResumeQueue(queue_url, sqs), receive, capabilities)


@pytest.fixture(
    params=[
        "memory",
        pytest.param("sqs", marks=pytest.mark.integration),
        pytest.param("sqs-fifo", marks=pytest.mark.integration),
    ]
)
def queue_kit(request: pytest.FixtureRequest) -> QueueKit:
    if request.param == "memory":
        return in_memory_queue_kit()
    return _sqs_kit(request.getfixturevalue("sqs"), fifo=request.param == "sqs-fifo")


class TestResumeQueue(ResumeQueueSuite):
    pass


@pytest.mark.integration
def test_sqs_carries_the_compact_wire_form(sqs: SQSClient) -> None:
    # GIVEN a queue and the adapter on it
    queue_url = sqs.create_queue(QueueName=unique("resume"))["QueueUrl"]
    queue = SqsResumeQueue(queue_url, sqs)

    # WHEN two turns are enqueued, one with the projection receipt
    queue.enqueue("turn-1", 3)
    queue.enqueue("turn-2", 1, delay_seconds=0)

    # THEN the bodies are compact {"turnId", "version"}, the receipt only where it was given
    bodies = receive_all(sqs, queue_url, expected=2)
    assert sorted(bodies) == ['{"turnId":"turn-1","version":3}', '{"turnId":"turn-2","version":1}']


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
        (json.dumps({"turnId": "x" * (MAX_BODY_BYTES + 1), "version": 1}), "bytes"),
        ('{"turnId": "turn-1", "version": 1, "snapshot": 7}', "snapshot"),
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
