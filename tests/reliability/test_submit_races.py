"""Races through the submit path on Amazon DynamoDB Local (whose conditional writes are atomic, unlike moto's).

100 threads answer one waiting support-ticket form through the submit HTTP entry point at once; then every
message the accepted submissions enqueued is worked, also concurrently, as duplicate SQS deliveries would be.
"""

from __future__ import annotations

import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from agentturn import TurnStatus
from agentturn.engine.worker import WorkOutcome
from tests.contract.aws_adapters import aws_session
from tests.functional.harness import HttpResponse
from tests.reliability.figures import record
from tests.reliability.kit import VALID_TICKET, Stack
from tests.support.clock import FakeClock
from tests.support.emulators import Emulator

pytestmark = pytest.mark.integration

SUBMITTERS = 100


@pytest.fixture
def ddb_stack(dynamodb_local: Emulator, moto_server: Emulator) -> Stack:
    session = aws_session(dynamodb_local, moto_server)
    clock = FakeClock()
    return Stack(
        session.turn_store(session.fresh_turns_table(), clock),
        session.chat_memory(session.fresh_conversations_table()),
        clock,
    )


@pytest.fixture(autouse=True)
def _switch_threads_often() -> Iterator[None]:
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(previous)


def _all_at_once(stack: Stack, events: list[dict[str, Any]]) -> list[HttpResponse]:
    with ThreadPoolExecutor(max_workers=32) as pool:
        return list(pool.map(stack.submit, events))


def _work_every_message(stack: Stack) -> Counter[WorkOutcome]:
    """Each enqueued message worked by its own worker, all at once (duplicates included)."""
    messages = stack.queue.drain()
    with ThreadPoolExecutor(max_workers=16) as pool:
        outcomes = list(
            pool.map(lambda m: stack.work(m.turn_id, worker_id=f"w-{uuid.uuid4().hex[:6]}", message=m), messages)
        )
    assert not stack.queue.drain(), "a worker re-enqueued a turn that had nothing left to run"
    return Counter(outcomes)


def _timeline_ids(stack: Stack, conversation: str) -> list[str]:
    from agentturn.api.ownership import conversation_key
    from tests.functional.harness import DEFAULT_SUB

    return [m.message_id for m in stack.memory(conversation_key(DEFAULT_SUB, conversation)).get_messages()]


def test_distinct_keys_one_accepted_the_rest_refused(ddb_stack: Stack) -> None:
    # GIVEN a support turn waiting for its ticket form
    view = ddb_stack.start_ticket("race-distinct")
    turn_id, action = view["turnId"], view["suspension"]["actionId"]

    # WHEN 100 submissions of that action, each with its own Idempotency-Key, arrive at once
    events = [
        ddb_stack.submit_event(turn_id, action, {"data": VALID_TICKET}, f"key-{n:03d}") for n in range(SUBMITTERS)
    ]
    answers = _all_at_once(ddb_stack, events)

    # THEN exactly one is accepted and 99 are refused with 409, none with anything else
    statuses = Counter(a.status for a in answers)
    assert statuses == {202: 1, 409: SUBMITTERS - 1}, [
        (a.status, a.body) for a in answers if a.status not in (202, 409)
    ]
    # AND the turn resumes once and creates its ticket once
    outcomes = _work_every_message(ddb_stack)
    assert outcomes[WorkOutcome.ADVANCED] == 1, outcomes
    turn = ddb_stack.store.load(turn_id)
    assert turn.status is TurnStatus.COMPLETED
    key = f"{turn_id}:{action}"
    assert list(ddb_stack.ledger.entries) == [key]
    assert ddb_stack.ledger.attempts == {key: 1}
    winner = next(n for n, a in enumerate(answers) if a.status == 202)
    assert list(turn.accepted_requests) == [f"key-{winner:03d}"]
    ids = _timeline_ids(ddb_stack, "race-distinct")
    assert len(ids) == len(set(ids))
    record(
        "submit race, distinct keys",
        submits=SUBMITTERS,
        accepted=statuses[202],
        refused_409=statuses[409],
        resumes=outcomes[WorkOutcome.ADVANCED],
        side_effects=len(ddb_stack.ledger.entries),
    )


def test_same_key_same_body_one_resume_identical_answers(ddb_stack: Stack) -> None:
    # GIVEN a support turn waiting for its ticket form
    view = ddb_stack.start_ticket("race-same")
    turn_id, action = view["turnId"], view["suspension"]["actionId"]

    # WHEN 100 retries of one submission (same key, same body) arrive at once
    event = ddb_stack.submit_event(turn_id, action, {"data": VALID_TICKET}, "one-key")
    answers = _all_at_once(ddb_stack, [event] * SUBMITTERS)

    # THEN every answer is the same 202 with the same body
    assert {(a.status, a.body) for a in answers} == {(answers[0].status, answers[0].body)}, Counter(
        (a.status, a.body) for a in answers
    )
    assert answers[0].status == 202
    # AND however many messages they enqueued, the turn resumes once and the ticket is created once: only the
    # submit that applied the answer sent the snapshot (its worker runs unclaimed), the replays' workers claim,
    # so the (idempotent) ticket tool ran at most twice — never once per retry
    outcomes = _work_every_message(ddb_stack)
    assert outcomes[WorkOutcome.ADVANCED] == 1, outcomes
    assert ddb_stack.store.load(turn_id).status is TurnStatus.COMPLETED
    assert list(ddb_stack.ledger.entries) == [f"{turn_id}:{action}"]
    assert 1 <= ddb_stack.ledger.attempts[f"{turn_id}:{action}"] <= 2
    ids = _timeline_ids(ddb_stack, "race-same")
    assert len(ids) == len(set(ids))
    record(
        "submit race, same key+body",
        submits=SUBMITTERS,
        distinct_answers=len({a.body for a in answers}),
        resumes=outcomes[WorkOutcome.ADVANCED],
        side_effects=len(ddb_stack.ledger.entries),
    )


def test_same_key_different_body_is_refused_and_changes_nothing(ddb_stack: Stack) -> None:
    # GIVEN a submission accepted under a key (not yet worked)
    view = ddb_stack.start_ticket("race-reuse")
    turn_id, action = view["turnId"], view["suspension"]["actionId"]
    first = ddb_stack.submit(ddb_stack.submit_event(turn_id, action, {"data": VALID_TICKET}, "reused"))
    assert first.status == 202, first.body
    before = ddb_stack.stored(turn_id)

    # WHEN 100 requests reuse that key with another body, at once
    other = {"data": {**VALID_TICKET, "impactScope": "ONE_USER"}}
    answers = _all_at_once(ddb_stack, [ddb_stack.submit_event(turn_id, action, other, "reused")] * SUBMITTERS)

    # THEN each is refused with 422 and nothing stored changed
    assert Counter(a.status for a in answers) == {422: SUBMITTERS}
    assert {a.json["type"].rsplit("/", 1)[-1] for a in answers} == {"idempotency-key-reused"}
    assert ddb_stack.stored(turn_id) == before
    record("submit race, key reused with another body", submits=SUBMITTERS, refused_422=SUBMITTERS, changed=0)


BATCH_MEETING = {"topic": "Incident review", "date": "2026-12-02", "startTime": "10:30", "attendees": 6}
BATCH_ROUNDS = 5


def _answer_event(turn_id: str, pending: dict[str, Any], key: str) -> dict[str, Any]:
    """The answer a person gives to one card of the demo batch, through that card's own route."""
    from tests.functional.harness import http_event

    action = pending["actionId"]
    if pending["type"] == "TOOL_APPROVAL":
        body: dict[str, Any] = {"argumentsFingerprint": pending["argumentsFingerprint"]}
        return http_event(
            "http_approve.json",
            path=f"/turns/{turn_id}/actions/{action}/approve",
            body=body,
            headers={"idempotency-key": key},
        )
    data = VALID_TICKET if pending["inputTarget"] == "TOOL" else BATCH_MEETING
    return Stack.submit_event(turn_id, action, {"data": data}, key)


def test_answers_to_different_cards_of_one_turn_race_and_all_are_kept(
    ddb_stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import agentturn.engine.runner
    from agentturn.errors import VersionConflictError
    from tests.functional.harness import http_event

    # Counted, to show the answers really collided (each lost write is decided again on what is stored).
    lost_writes = Counter[str]()
    save = ddb_stack.store.save

    def counting_save(*args: Any, **kwargs: Any) -> Any:
        try:
            return save(*args, **kwargs)
        except VersionConflictError:
            lost_writes["conflicts"] += 1
            raise

    monkeypatch.setattr(ddb_stack.store, "save", counting_save)
    assert agentturn.engine.runner.ANSWER_ROUNDS >= 4

    for round_ in range(BATCH_ROUNDS):
        # GIVEN a turn waiting on four decisions at once (two approvals, a model's form, a tool's form)
        conversation = f"race-batch-{round_}"
        started = ddb_stack.run(
            http_event(
                "http_start_turn.json",
                path=f"/conversations/{conversation}/turns",
                body={"input": "do these at once", "agentId": "assistant"},
            )
        )
        assert started.status == 200, started.body
        view = started.json
        turn_id, pending = view["turnId"], view["pendingActions"]
        assert len(pending) == 4
        events = [_answer_event(turn_id, p, f"batch-{round_}-{n}") for n, p in enumerate(pending)]

        # WHEN the four answers, one per card, are sent by four threads released together
        barrier = threading.Barrier(len(events))

        def send(event: dict[str, Any], barrier: threading.Barrier = barrier) -> HttpResponse:
            barrier.wait()
            return ddb_stack.submit(event)

        with ThreadPoolExecutor(max_workers=len(events)) as pool:
            answers = list(pool.map(send, events))

        # THEN every answer is accepted, every one is kept in the snapshot, and the turn was handed on once
        assert [a.status for a in answers] == [202] * 4, [a.body for a in answers]
        stored = ddb_stack.store.load(turn_id)
        assert sorted(stored.accepted_requests) == sorted(f"batch-{round_}-{n}" for n in range(4))
        assert stored.suspensions == [] and stored.status is TurnStatus.RUNNING
        assert sorted(c.status.value for c in stored.cards) == ["APPROVED", "APPROVED", "SUBMITTED", "SUBMITTED"]
        outcomes = _work_every_message(ddb_stack)
        assert outcomes[WorkOutcome.ADVANCED] == 1, outcomes
        done = ddb_stack.store.load(turn_id)
        assert done.status is TurnStatus.COMPLETED, done.error
        # AND each side effect happened once: two refunds and the ticket
        mine = {k: v for k, v in ddb_stack.ledger.attempts.items() if k.startswith(turn_id)}
        assert sorted(mine) == [f"{turn_id}:call-1-1", f"{turn_id}:call-1-2", f"{turn_id}:call-1-4"]
        assert set(mine.values()) == {1}
        ids = _timeline_ids(ddb_stack, conversation)
        assert len(ids) == len(set(ids))
    # The answers did collide: some writes lost to another card's answer and were decided again, not refused.
    assert lost_writes["conflicts"] > 0, lost_writes
    record(
        "answer race, four cards of one turn",
        rounds=BATCH_ROUNDS,
        answers_kept=4 * BATCH_ROUNDS,
        resumes=BATCH_ROUNDS,
        writes_lost_and_decided_again=lost_writes["conflicts"],
    )
