"""A turn whose stored snapshot cannot be read (corrupt, a newer schemaVersion): like any turn that cannot
run, it is tried a bounded number of times, then ends FAILED (``snapshot_unreadable``), its conversation free
and nothing left for the sweeper. Every adapter set; time is the backend's fake clock."""

from __future__ import annotations

import pytest

from agentturn import Agent, ExecutionPolicy, SnapshotUnreadableError, TurnStatus, Worker, WorkOutcome
from agentturn.api.telemetry import metrics_listener
from agentturn.engine.retry import RetryPolicy
from agentturn.engine.runner import Runner, UnreadableAttempt
from agentturn.ports.store import SNAPSHOT_UNREADABLE
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import form_asking_agent
from tests.scenarios.test_retries import CountingTelemetry, submitted_turn
from tests.support.broken_snapshots import Breakage, break_snapshot

POLICY = RetryPolicy(max_attempts=3, base_delay=2.0, max_delay=60.0)


def _stored_error(backend: Backend, turn_id: str) -> SnapshotUnreadableError:
    with pytest.raises(SnapshotUnreadableError) as caught:
        backend.store.load(turn_id)
    return caught.value


def _pick_up(worker: Worker, turn_id: str) -> UnreadableAttempt:
    """What the SQS worker does with a message for the turn: the claim refuses it, the attempt is counted."""
    with pytest.raises(SnapshotUnreadableError) as caught:
        worker.process(turn_id)
    return worker.runner.record_unreadable(caught.value)


@pytest.mark.parametrize("how", ["garbage", "newer_schema"])
def test_a_runnable_turn_that_cannot_be_read_ends_failed_after_its_attempts_and_frees_its_conversation(
    backend: Backend, how: Breakage
) -> None:
    # GIVEN a submitted turn whose stored snapshot then breaks
    agent, turn_id = submitted_turn(backend)
    break_snapshot(backend.store, turn_id, how)
    telemetry = CountingTelemetry()
    runner = backend.runner([agent], retry=POLICY, listeners=[backend.events.append, metrics_listener(telemetry)])
    worker = Worker(runner)

    # WHEN a worker picks it up each time it is due, and a duplicate message comes early after each attempt
    attempts, early = [], []
    while not (attempts and attempts[-1].failed):
        attempts.append(_pick_up(worker, turn_id))
        assert len(attempts) <= POLICY.max_attempts, "never ended"
        if not attempts[-1].failed:
            early.append(_pick_up(worker, turn_id))
            backend.clock.advance(attempts[-1].retry_in)

    # THEN exactly max_attempts were counted (each handed on with a growing backoff), the early ones none
    assert [(a.counted, a.failed) for a in attempts] == [(True, False), (True, False), (True, True)]
    assert 1.0 <= attempts[0].retry_in <= 2.0 <= attempts[1].retry_in <= 4.0
    assert [a.counted for a in early] == [False, False]
    # ... the turn is FAILED with its code and stays readable as such to the store, not to a worker
    error = _stored_error(backend, turn_id)
    assert (error.status, error.error_type) == ("FAILED", SNAPSHOT_UNREADABLE)
    assert worker.process(turn_id).outcome is WorkOutcome.NOT_RUNNABLE
    assert runner.record_unreadable(error).counted is False
    # ... nothing is left for the sweeper, the metric the alarm watches fired once, and the conversation takes
    # a new turn
    assert backend.store.find_runnable(idle_seconds=0) == []
    assert (telemetry.counts.get("TurnsUnrunnable"), telemetry.counts.get("TurnRetriesScheduled")) == (1, 2)
    assert backend.memory("conv").get_active_turn() is None
    fresh = runner.start(agent, "conv", "another ticket")
    assert fresh.status is TurnStatus.READY
    assert backend.memory("conv").get_active_turn() == fresh.id


def test_a_waiting_turn_that_cannot_be_read_is_ended_by_the_sweeper_not_retried_forever(backend: Backend) -> None:
    # GIVEN a turn waiting for a form with a deadline, whose stored snapshot then breaks, and whose wait expires
    base = form_asking_agent()
    agent = Agent(
        base.id,
        base.instructions,
        base.chat_model,
        tools=list(base.tools.values()),
        policy=ExecutionPolicy(input_timeout=60),
    )
    runner: Runner = backend.runner([agent], retry=POLICY)
    waiting = runner.run(agent, "conv", "ticket please")
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    break_snapshot(backend.store, waiting.id, "garbage")
    backend.clock.advance(61)

    # WHEN the sweeper runs each time the next attempt is due
    sweeps = 0
    while backend.store.find_overdue():
        # (meanwhile a read of the timeline does not fail on the turn it names)
        assert runner.repair_timeline("conv") is False
        assert runner.expire_overdue() == []
        sweeps += 1
        assert sweeps <= POLICY.max_attempts, "still overdue after every attempt"
        error = _stored_error(backend, waiting.id)
        if error.not_before is not None:
            backend.clock.advance(error.not_before - backend.clock())

    # THEN after max_attempts sweeps it is FAILED, out of the overdue index, its conversation free
    assert sweeps == POLICY.max_attempts
    error = _stored_error(backend, waiting.id)
    assert (error.status, error.error_type, error.attempts) == ("FAILED", SNAPSHOT_UNREADABLE, POLICY.max_attempts)
    assert backend.memory("conv").get_active_turn() is None
    assert runner.start(agent, "conv", "another ticket").status is TurnStatus.READY
