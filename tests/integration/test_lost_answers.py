"""Writes whose answer is lost (DESIGN invariant 10), one adapter call at a time, inside the SDK.

Each test makes one DynamoDB/S3 request land and lose its response (a botocore ``before-send`` hook sends it,
then raises a read timeout), so botocore's own retry sends it again and meets the first attempt's result.
DynamoDB adapters on DynamoDB Local, S3 on moto's server. For every conditional write the adapters make:
the call answers as if nothing had gone wrong, and everything stored stays readable; when even the retries
fail (``after_exhausted``), the caller gets an error and still nothing stored is unreadable.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from agentturn import AiMessage, FormStatus, ResumeCommand, Runner, TurnStatus, UserMessage, Worker
from agentturn.aws.chat_memory import DynamoDBChatMemory
from agentturn.aws.resume_queue import SqsResumeQueue, parse_resume_message
from agentturn.aws.turn_store import DynamoDBTurnStore
from agentturn.demo import demo_agents
from agentturn.errors import StorageUnavailableError
from agentturn.state.messages import FormMessage
from agentturn.timeline.identity import stamp
from tests.contract.aws_adapters import (
    AwsSession,
    aws_session,
    dynamodb_client,
    new_conversation_id,
    s3_client,
    sqs_client,
    unique,
)
from tests.contract.conftest import new_turn
from tests.contract.test_chat_memory import form, submitted, user
from tests.contract.test_large_snapshot import incompressible
from tests.contract.test_turn_store import advanced
from tests.reliability.kit import VALID_TICKET
from tests.support.clock import FakeClock
from tests.support.emulators import Emulator
from tests.support.sdk_faults import FaultKind, Scripted, SdkFaultInjector, no_backoff

pytestmark = pytest.mark.integration

LEASE = 60.0


@dataclass
class Faulty:
    """Adapters on their own clients (so the hooks stay with this test), and the injector in them."""

    session: AwsSession
    clock: FakeClock
    injector: SdkFaultInjector
    store: DynamoDBTurnStore
    spilling_store: DynamoDBTurnStore
    memory: DynamoDBChatMemory
    spilling_memory: DynamoDBChatMemory

    def fail(self, operation: str, kind: FaultKind = "after", n: int = 1) -> None:
        """Fail the ``n``-th next call of ``operation`` (``"dynamodb.PutItem"``) with ``kind``."""
        self.injector.plan = Scripted(operation, kind, n)

    def objects(self, prefix: str) -> list[str]:
        listing = self.session.s3.list_objects_v2(Bucket=self.session.bucket, Prefix=prefix)
        return [o["Key"] for o in listing.get("Contents", [])]


@pytest.fixture
def faulty(dynamodb_local: Emulator, moto_server: Emulator) -> Iterator[Faulty]:
    session = aws_session(dynamodb_local, moto_server)
    injector = SdkFaultInjector(plan=lambda _: None)
    dynamodb = injector.attach(dynamodb_client(dynamodb_local))
    s3 = injector.attach(s3_client(moto_server))
    clock = FakeClock()
    table = session.fresh_turns_table()
    conversations = session.names.conversations_table
    options = {"client": dynamodb, "s3_client": s3, "bucket": session.bucket}
    with no_backoff():
        yield Faulty(
            session,
            clock,
            injector,
            DynamoDBTurnStore(table, clock=clock, **options),  # type: ignore[arg-type]
            DynamoDBTurnStore(table, clock=clock, inline_limit=1024, **options),  # type: ignore[arg-type]
            DynamoDBChatMemory(conversations, **options),  # type: ignore[arg-type]
            DynamoDBChatMemory(conversations, inline_limit=64, **options),  # type: ignore[arg-type]
        )


def _landed_twice(faulty: Faulty, operation: str) -> None:
    assert faulty.injector.fired == {f"{operation}:after": 1}, faulty.injector.fired


# ------------------------------------------------------------------------------------------ turn store


@pytest.mark.parametrize("spilled", [False, True], ids=["inline", "spilled"])
def test_a_create_whose_answer_is_lost_is_a_create(faulty: Faulty, spilled: bool) -> None:
    # GIVEN a new turn (its body inline, or large enough to go to S3)
    store = faulty.spilling_store if spilled else faulty.store
    turn = new_turn(text=incompressible(4000) if spilled else "hi")

    # WHEN its PutItem lands and the answer is lost, so botocore puts it again
    faulty.fail("dynamodb.PutItem")
    created = store.create(turn)

    # THEN the create answers version 1 (not "the id exists"), and the stored turn is that one
    _landed_twice(faulty, "dynamodb.PutItem")
    assert created.version == 1
    assert store.load(turn.id) == created


@pytest.mark.parametrize("spilled", [False, True], ids=["inline", "spilled"])
@pytest.mark.parametrize("leased", [False, True], ids=["submit", "worker"])
def test_a_save_whose_answer_is_lost_is_a_save_and_its_body_stays(faulty: Faulty, spilled: bool, leased: bool) -> None:
    # GIVEN a stored turn, leased to a worker or not (a submit saves without a lease)
    store = faulty.spilling_store if spilled else faulty.store
    created = store.create(new_turn(text=incompressible(4000) if spilled else "hi"))
    lease = store.claim(created.id, "worker", LEASE) if leased else None

    # WHEN a save's UpdateItem lands and its answer is lost
    faulty.fail("dynamodb.UpdateItem")
    text = incompressible(4000) if spilled else "step"
    saved = store.save(
        advanced(created, TurnStatus.RUNNING, text),
        expected_version=1,
        lease_id=lease.lease_id if lease is not None else None,
    )

    # THEN the save answers version 2 (not a conflict), the turn loads as saved, and its S3 body is there
    _landed_twice(faulty, "dynamodb.UpdateItem")
    assert saved.version == 2
    assert store.load(created.id) == saved
    if spilled:
        item = store.client.get_item(TableName=store.table_name, Key={"turnId": {"S": created.id}})["Item"]
        assert item["bodyRef"]["S"] in faulty.objects(f"turns/{created.id}/")
    # AND the writer can go on: its lease is still its own
    if lease is not None:
        assert store.renew(lease, LEASE).lease_id == lease.lease_id


def test_a_save_whose_answer_is_lost_after_a_cancel_was_requested_carries_the_flag(faulty: Faulty) -> None:
    # GIVEN a turn a submit is about to save, and a cancel requested meanwhile
    created = faulty.store.create(new_turn())
    faulty.store.request_cancel(created.id)

    # WHEN the save (which retries carrying the flag) loses the answer of that second UpdateItem
    faulty.fail("dynamodb.UpdateItem", n=2)
    saved = faulty.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1)

    # THEN it succeeded, and the turn it returns carries the cancel request
    assert saved.version == 2 and saved.cancel_requested
    assert faulty.store.load(created.id) == saved


def test_a_claim_whose_answer_is_lost_is_the_callers_lease(faulty: Faulty) -> None:
    # GIVEN a runnable turn
    created = faulty.store.create(new_turn())

    # WHEN a worker's claim lands and its answer is lost
    faulty.fail("dynamodb.UpdateItem")
    lease = faulty.store.claim(created.id, "worker", LEASE)

    # THEN the worker holds the lease (rather than seeing the turn "held by someone" until the lease ends),
    # with the snapshot, and can save under it
    _landed_twice(faulty, "dynamodb.UpdateItem")
    assert lease is not None and lease.turn == created
    saved = faulty.store.save(advanced(created, TurnStatus.COMPLETED), expected_version=1, lease_id=lease.lease_id)
    assert saved.version == 2
    # AND another worker still cannot claim it meanwhile (the claim of the first one was real)
    again = faulty.store.create(new_turn())
    faulty.fail("dynamodb.UpdateItem")
    first = faulty.store.claim(again.id, "worker", LEASE)
    assert first is not None and faulty.store.claim(again.id, "other", LEASE) is None


@pytest.mark.parametrize("operation", ["renew", "request_cancel", "release"])
def test_idempotent_turn_writes_whose_answer_is_lost_change_nothing_more(faulty: Faulty, operation: str) -> None:
    # GIVEN a leased turn
    created = faulty.store.create(new_turn())
    lease = faulty.store.claim(created.id, "worker", LEASE)
    assert lease is not None

    # WHEN a renew / cancel request / release lands and its answer is lost
    faulty.fail("dynamodb.UpdateItem")
    if operation == "renew":
        faulty.clock.advance(10)
        renewed = faulty.store.renew(lease, LEASE)
        # THEN the lease is extended, once, and still the caller's
        assert renewed.expires_at == pytest.approx(lease.expires_at + 10)
        assert faulty.store.claim(created.id, "other", LEASE) is None
    elif operation == "request_cancel":
        faulty.store.request_cancel(created.id)
        # THEN the flag is set and nothing else changed
        stored = faulty.store.load(created.id)
        assert stored.cancel_requested and stored.version == 1
    else:
        faulty.store.release(lease)
        # THEN the turn is free for the next claim (the answer itself may be "not ours": nobody acts on it)
        assert faulty.store.claim(created.id, "next", LEASE) is not None
    _landed_twice(faulty, "dynamodb.UpdateItem")


def test_a_save_whose_retries_all_fail_after_it_landed_leaves_a_readable_turn(faulty: Faulty) -> None:
    # GIVEN a large turn (its body in S3)
    store = faulty.spilling_store
    created = store.create(new_turn(text=incompressible(4000)))

    # WHEN a save lands and then every retry fails: the caller gets an error for a write that took effect
    faulty.fail("dynamodb.UpdateItem", "after_exhausted")
    with pytest.raises(StorageUnavailableError) as failure:
        store.save(advanced(created, TurnStatus.RUNNING, incompressible(4000)), expected_version=1)
    assert failure.value.retryable

    # THEN the stored turn is version 2 and readable: its body object was not deleted by the failure
    loaded = store.load(created.id)
    assert loaded.version == 2 and loaded.status is TurnStatus.RUNNING


@pytest.mark.parametrize("kind", ["after", "throttle", "before_exhausted"])
def test_the_sweepers_read_of_its_candidates_under_sdk_faults(faulty: Faulty, kind: FaultKind) -> None:
    # GIVEN an idle READY turn and one leased by a live worker, both in the keys-only runnable index
    idle = faulty.store.create(new_turn())
    held = faulty.store.create(new_turn())
    faulty.clock.advance(300)
    assert faulty.store.claim(held.id, "live-worker", LEASE) is not None

    # WHEN the sweeper's BatchGetItem of the candidates loses its answer, is throttled, or fails every attempt
    faulty.fail("dynamodb.BatchGetItem", kind)
    if kind == "before_exhausted":
        # THEN a read that never got through is a retryable storage error (the next sweep reads again)
        with pytest.raises(StorageUnavailableError):
            faulty.store.find_runnable(idle_seconds=60)
        found = faulty.store.find_runnable(idle_seconds=60)
    else:
        found = faulty.store.find_runnable(idle_seconds=60)

    # THEN (after botocore's retry) the sweep finds the idle turn and not the held one, with its version
    assert faulty.injector.fired == {f"dynamodb.BatchGetItem:{kind}": 1}, faulty.injector.fired
    assert [(r.turn_id, r.version) for r in found] == [(idle.id, 1)]


# ------------------------------------------------------------------------------------------ chat memory


@pytest.mark.parametrize("spilled", [False, True], ids=["inline", "spilled"])
def test_an_append_whose_answer_is_lost_is_an_append(faulty: Faulty, spilled: bool) -> None:
    # GIVEN a conversation, and a card (spilled to S3 with a small inline limit) and a message
    memory = (faulty.spilling_memory if spilled else faulty.memory)(new_conversation_id())
    card, message = form(0), user(0)

    # WHEN each append lands and its answer is lost
    faulty.fail("dynamodb.PutItem")
    appended_card = memory.append(card)
    faulty.fail("dynamodb.PutItem")
    appended_message = memory.append(message)

    # THEN both count as appended (not "already there"), and the timeline reads back whole
    assert (appended_card, appended_message) == (True, True)
    assert memory.get_message(card.message_id) == card
    assert memory.get_messages() == [message, card]
    # AND appending them again (a re-projection) reports them present
    assert (memory.append(card), memory.append(message)) == (False, False)


@pytest.mark.parametrize("spilled", [False, True], ids=["inline", "spilled"])
def test_a_card_update_whose_answer_is_lost_is_an_update_and_the_card_stays_readable(
    faulty: Faulty, spilled: bool
) -> None:
    # GIVEN a pending card in the timeline
    memory = (faulty.spilling_memory if spilled else faulty.memory)(new_conversation_id())
    card = form(0)
    assert memory.append(card)

    # WHEN the update to SUBMITTED lands and its answer is lost
    faulty.fail("dynamodb.PutItem")
    answered = submitted(card)
    updated = memory.update_message(answered, expected_version=1)

    # THEN the update succeeded, and the card reads back as submitted (its S3 body was not deleted)
    _landed_twice(faulty, "dynamodb.PutItem")
    assert updated is True
    stored = memory.get_message(card.message_id)
    assert isinstance(stored, FormMessage) and stored.status is FormStatus.SUBMITTED
    assert memory.get_messages() == [answered]
    # AND a stale writer at the old version is still refused
    assert memory.update_message(answered, expected_version=1) is False


def test_a_batch_append_whose_answer_is_lost_stores_each_entry_once(faulty: Faulty) -> None:
    # GIVEN a turn's messages (more than one: a group, one conditional PutItem)
    memory = faulty.memory(new_conversation_id())
    turn = new_turn()
    turn.messages.append(stamp(turn, AiMessage(content="a")))
    turn.messages.append(stamp(turn, UserMessage(content="b")))

    # WHEN the group lands and its answer is lost (the SDK's retry meets the group it wrote)
    faulty.fail("dynamodb.PutItem")
    memory.append_all(turn.messages)

    # THEN the append succeeded, and every entry is there once
    _landed_twice(faulty, "dynamodb.PutItem")
    assert memory.get_messages() == turn.messages


def test_taking_the_conversation_when_the_answer_is_lost_takes_it(faulty: Faulty) -> None:
    # GIVEN a free conversation
    memory = faulty.memory(new_conversation_id())

    # WHEN a turn's take lands and its answer is lost
    faulty.fail("dynamodb.UpdateItem")
    taken = memory.set_active_turn("turn-1", expected=None)

    # THEN the take succeeded (not "busy, held by turn-1"), and other turns are refused
    _landed_twice(faulty, "dynamodb.UpdateItem")
    assert taken is True and memory.get_active_turn() == "turn-1"
    assert memory.set_active_turn("turn-2", expected=None) is False


def test_a_start_whose_take_of_the_conversation_lost_its_answer_runs_its_turn(faulty: Faulty) -> None:
    # GIVEN the support agent on the DynamoDB adapters
    agents = demo_agents()
    support = next(a for a in agents if a.id == "support-agent")
    runner = Runner(store=faulty.store, chat_memory=faulty.memory, agents=agents, clock=faulty.clock)
    conversation_id = new_conversation_id()

    # WHEN the run's create is answered, but its take of the conversation (the first UpdateItem) lands and its
    # answer is lost
    faulty.fail("dynamodb.UpdateItem")
    turn = runner.run(support, conversation_id, "create a high priority login incident ticket")

    # THEN the turn ran to its form (it was not deleted and refused as "busy, held by itself")
    assert turn.status is TurnStatus.WAITING_FOR_USER
    memory = faulty.memory(conversation_id)
    assert memory.get_active_turn() == turn.id
    stored = faulty.store.load(turn.id)
    assert (stored.version, stored.status) == (turn.version, turn.status)
    assert [m.message_id for m in memory.get_messages()][-1] == f"{turn.id}:input:call-1"


# ---------------------------------------------------------------------------------------------- the queue


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_a_resume_message_whose_send_lost_its_answer_advances_the_turn_once(
    faulty: Faulty, moto_server: Emulator, fifo: bool
) -> None:
    # GIVEN a turn waiting for its form, answered, and a resume queue (standard or FIFO) on moto
    sqs = faulty.injector.attach(sqs_client(moto_server))
    attributes = {"FifoQueue": "true"} if fifo else {}
    url = sqs.create_queue(QueueName=unique("resume") + (".fifo" if fifo else ""), Attributes=attributes)["QueueUrl"]
    queue = SqsResumeQueue(url, sqs)
    ledger_agents = demo_agents()
    support = next(a for a in ledger_agents if a.id == "support-agent")
    runner = Runner(store=faulty.store, chat_memory=faulty.memory, agents=ledger_agents, clock=faulty.clock)
    waiting = runner.run(support, new_conversation_id(), "create a high priority login incident ticket")
    assert waiting.suspension is not None
    resumed = runner.submit_resume(
        waiting.id, ResumeCommand.user_input(waiting.suspension.correlation_id, VALID_TICKET)
    )

    # WHEN the SendMessage lands and its answer is lost, so botocore sends it again
    faulty.fail("sqs.SendMessage")
    queue.enqueue(resumed.id, resumed.version)

    # THEN a standard queue holds two copies, a FIFO queue one (the retry carries the same deduplication id)
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    if not fifo:
        received += sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    assert len(received) == (1 if fifo else 2)
    # AND delivering every copy advances the turn once: it completes, with one ticket
    outcomes = [Worker(runner).process(parse_resume_message(m["Body"]).turn_id).outcome.value for m in received]
    assert outcomes[0] == "ADVANCED" and set(outcomes[1:]) <= {"NOT_RUNNABLE"}
    done = faulty.store.load(resumed.id)
    assert done.status is TurnStatus.COMPLETED
    tickets = [m for m in done.messages if getattr(m, "tool_name", "") == "create_support_ticket"]
    assert len(tickets) == 1
