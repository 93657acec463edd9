"""At-least-once delivery: the worker entry point (``SqsWorker.handle``, what the worker Lambda wraps) on real
SQS messages from moto's server, over DynamoDB adapters on DynamoDB Local (atomic conditional writes, which
concurrent deliveries need; moto's are not).

Complements tests/functional/test_worker_and_sweeper.py (one turn delivered 3 times; poison records among
one good one): here many turns, every message delivered 2-5 times (seeded), some deliveries concurrent, and a
full batch of 10 with one poison message driven through the queue's redrive to the dead-letter queue.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from agentturn import Event, EventType, TurnStatus
from agentturn.api.ownership import conversation_key
from agentturn.api.telemetry import NullTelemetry
from agentturn.api.worker import SqsWorker
from agentturn.aws.resume_queue import SqsResumeQueue
from agentturn.engine.handoff import pack_snapshot, unpack_snapshot
from agentturn.ports.serializer import JSON
from tests.contract.aws_adapters import aws_session
from tests.functional.harness import DEFAULT_SUB, Deployment, FakeLambdaContext
from tests.reliability.figures import record
from tests.reliability.kit import HANDOFF_KEY, VALID_TICKET, Stack
from tests.support.clock import FakeClock
from tests.support.emulators import Emulator

pytestmark = pytest.mark.integration

TURNS = 9


@pytest.fixture
def deployment(moto_server: Emulator, monkeypatch: pytest.MonkeyPatch) -> Deployment:
    return Deployment(moto_server, monkeypatch, max_receive_count=3)


@pytest.fixture
def stack(deployment: Deployment, dynamodb_local: Emulator, moto_server: Emulator) -> Stack:
    session = aws_session(dynamodb_local, moto_server)
    clock = FakeClock()
    store = session.turn_store(session.fresh_turns_table(), clock)
    memory = session.chat_memory(session.fresh_conversations_table())
    return Stack(store, memory, clock, ports=(store, memory, SqsResumeQueue(deployment.queue_url, deployment.sqs)))


def _submitted_turns(stack: Stack, count: int) -> list[str]:
    turns = []
    for n in range(count):
        view = stack.start_ticket(f"delivery-{n}")
        answer = stack.submit(
            stack.submit_event(view["turnId"], view["suspension"]["actionId"], {"data": VALID_TICKET}, f"k-{n}")
        )
        assert answer.status == 202, answer.body
        turns.append(view["turnId"])
    return turns


def _handle(stack: Stack, deployment: Deployment, messages: list[dict[str, Any]]) -> set[str]:
    """One invocation of the worker entry point; returns the ids it reported as failed."""
    result = SqsWorker(stack.services, NullTelemetry()).handle(deployment.sqs_event(messages), FakeLambdaContext())
    return {f["itemIdentifier"] for f in result["batchItemFailures"]}


def _receive_all(deployment: Deployment, expected: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for _ in range(10):
        messages += deployment.receive()
        if len(messages) >= expected:
            break
    assert len(messages) == expected, messages
    return messages


def test_every_message_delivered_two_to_five_times_advances_each_turn_once(
    stack: Stack, deployment: Deployment
) -> None:
    # GIVEN nine submitted turns, each with its resume message on the queue
    turns = _submitted_turns(stack, TURNS)
    events: list[Event] = []
    stack.services.listeners.append(events.append)
    messages = _receive_all(deployment, TURNS)
    assert sorted(m["Body"].split('"')[3] for m in messages) == sorted(turns)

    # WHEN each message is delivered 2-5 times (seeded), in shuffled batches of up to 10 records, four
    # invocations of the worker at a time, so that duplicates of one message race each other
    rng = random.Random(20261201)
    copies = [m for m in messages for _ in range(rng.randint(2, 5))]
    rng.shuffle(copies)
    batches: list[list[dict[str, Any]]] = []
    taken = 0
    while taken < len(copies):
        size = rng.randint(1, 4)
        batches.append(copies[taken : taken + size])
        taken += size
    assert Counter(m["MessageId"] for b in batches for m in b) == Counter(m["MessageId"] for m in copies)
    with ThreadPoolExecutor(max_workers=4) as pool:
        failures = list(pool.map(lambda batch: _handle(stack, deployment, batch), batches))

    # THEN every record was acknowledged (a duplicate is a no-op, never a failure)
    assert all(not failed for failed in failures), failures
    # AND each turn completed once, its ticket made once; the ticket tool is declared idempotent, so copies that
    # raced (each started from the snapshot its message carries, unclaimed) may each have run it under the
    # call's one idempotency key, never more often than its message was delivered
    per_turn = Counter((e.turn_id, e.type) for e in events)
    copies_of = Counter(json.loads(m["Body"])["turnId"] for m in copies)
    for turn_id in turns:
        assert stack.store.load(turn_id).status is TurnStatus.COMPLETED
        assert per_turn[(turn_id, EventType.TURN_COMPLETED)] == 1, turn_id
        assert 1 <= per_turn[(turn_id, EventType.TOOL_STARTED)] <= copies_of[turn_id], turn_id
    assert len(stack.ledger.entries) == TURNS
    assert sum(stack.ledger.attempts.values()) == sum(per_turn[(t, EventType.TOOL_STARTED)] for t in turns)
    # AND each timeline holds each entry of its snapshot once, and nothing else
    for n, turn_id in enumerate(turns):
        turn = stack.store.load(turn_id)
        stored = stack.memory(conversation_key(DEFAULT_SUB, f"delivery-{n}")).get_messages()
        ids = [m.message_id for m in stored]
        assert len(ids) == len(set(ids))
        assert sorted(ids) == sorted([m.message_id for m in turn.messages] + [c.message_id for c in turn.cards])
    record(
        "duplicate delivery",
        turns=TURNS,
        deliveries=len(copies),
        invocations=len(batches),
        turns_advanced_twice=0,
        timeline_duplicates=0,
        idempotent_tool_reruns=sum(stack.ledger.attempts.values()) - TURNS,
    )


@pytest.mark.parametrize(("receive_count", "runs"), [("1", 1), ("2", 0)])
def test_a_message_received_before_is_worked_by_a_claim_not_from_its_snapshot(
    stack: Stack, deployment: Deployment, receive_count: str, runs: int
) -> None:
    # GIVEN a submitted turn that another worker holds (it claimed the turn after the message was sent)
    [turn_id] = _submitted_turns(stack, 1)
    [message] = _receive_all(deployment, 1)
    assert "snapshot" in json.loads(message["Body"])
    before = stack.store.load(turn_id)
    assert stack.store.claim(turn_id, "another-worker", 60) is not None
    events: list[Event] = []
    stack.services.listeners.append(events.append)

    # WHEN the worker gets the message on its first delivery, or on a later one (SQS counts them)
    delivered = {**message, "Attributes": {**message.get("Attributes", {}), "ApproximateReceiveCount": receive_count}}
    failed = _handle(stack, deployment, [delivered])

    # THEN it is acknowledged and the turn is as the holder has it; a first delivery ran from the snapshot (the
    # model was called, the save refused), a redelivery only tried a claim (a worker failed with it before, so
    # the snapshot is likely stale: one refused write instead of a model call)
    assert failed == set()
    assert stack.store.load(turn_id).version == before.version
    assert sum(event.type is EventType.MODEL_STARTED for event in events) == runs


def test_a_snapshot_edited_on_the_queue_runs_nothing_of_its_own(stack: Stack, deployment: Deployment) -> None:
    # GIVEN a submitted ticket, and its message as someone who may send to the queue rewrote it: the snapshot
    # edited (another scope in the data the tool replays with), packed again and sealed with a key of their
    # own, since they do not have the deployment's
    [turn_id] = _submitted_turns(stack, 1)
    [message] = _receive_all(deployment, 1)
    body = json.loads(message["Body"])
    carried = unpack_snapshot(body["snapshot"], body["seal"], turn_id, body["version"], JSON, HANDOFF_KEY)
    assert carried is not None
    state = carried.tool_states["call-1"]
    assert state.submitted_form_data is not None
    state.submitted_form_data = {**state.submitted_form_data, "impactScope": "SINGLE_USER"}
    forged_snapshot, forged_seal = pack_snapshot(carried, JSON, b"not-the-deployments-key-" + b"0" * 32) or ("", "")
    forged = {**message, "Body": json.dumps({**body, "snapshot": forged_snapshot, "seal": forged_seal})}

    # WHEN the worker gets the forged message
    failed = _handle(stack, deployment, [forged])

    # THEN it was a wake-up only: the worker claimed and ran the stored turn, whose tool made the ticket with the
    # data the person submitted
    assert failed == set()
    assert stack.store.load(turn_id).status is TurnStatus.COMPLETED
    [ticket] = stack.ledger.entries.values()
    assert (ticket["affectedSystem"], ticket["impactScope"]) == (VALID_TICKET["affectedSystem"], "ALL_USERS")


def test_a_poison_message_in_a_batch_of_ten_fails_alone_and_ends_in_the_dlq(
    stack: Stack, deployment: Deployment
) -> None:
    # GIVEN nine resume messages and one poison message, received as one batch of ten
    turns = _submitted_turns(stack, TURNS)
    deployment.sqs.send_message(QueueUrl=deployment.queue_url, MessageBody='{"turnId": 7}')
    batch = _receive_all(deployment, TURNS + 1)
    poison = next(m["MessageId"] for m in batch if m["Body"] == '{"turnId": 7}')

    # WHEN the worker gets the batch (and the event source mapping deletes what succeeded)
    failed = _handle(stack, deployment, batch)
    for message in batch:
        if message["MessageId"] not in failed:
            deployment.sqs.delete_message(QueueUrl=deployment.queue_url, ReceiptHandle=message["ReceiptHandle"])

    # THEN only the poison record is reported; the nine turns ran
    assert failed == {poison}
    assert all(stack.store.load(t).status is TurnStatus.COMPLETED for t in turns)
    # AND each retry brings back the poison message alone (the batch is never re-driven), until the
    # queue's redrive policy (maxReceiveCount 3) moves it to the dead-letter queue
    retried = [m for m in batch if m["MessageId"] == poison]
    redeliveries = 0
    for _ in range(6):
        deployment.expire_visibility(retried)
        retried = deployment.receive()
        if not retried:
            break
        assert [m["MessageId"] for m in retried] == [poison]
        redeliveries += 1
        assert _handle(stack, deployment, retried) == {poison}
    dead = deployment.sqs.receive_message(QueueUrl=deployment.dlq_url, MaxNumberOfMessages=10).get("Messages", [])
    assert [m["MessageId"] for m in dead] == [poison]
    assert deployment.queue_depth() == 0
    assert sorted(stack.ledger.attempts.values()) == [1] * TURNS
    record(
        "poison batch",
        batch=len(batch),
        processed=len(batch) - len(failed),
        reported=len(failed),
        redeliveries=redeliveries,
        in_dlq=len(dead),
        good_records_redriven=0,
    )
