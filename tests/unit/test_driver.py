"""The loop that steps a claimed turn (in-memory store, fake clock, scripted model)."""

from __future__ import annotations

from tests.unit.conftest import Parts

from agentturn import Agent, AiMessage, ScriptedChatModel, TurnStatus
from agentturn.engine.driver import TurnDriver
from agentturn.ports.store import Lease
from agentturn.state.turn import RetryState


def driver(parts: Parts) -> TurnDriver:
    def claim(turn_id: str) -> Lease | None:
        return parts.store.claim(turn_id, "w1", parts.lease_seconds)

    steps = (parts.model_step, parts.tool_step)
    return TurnDriver(
        parts.store, parts.clock, claim, parts.agents, parts.writer, parts.leases, steps, parts.memory_for
    )


def test_a_runnable_turn_is_stepped_to_its_end(parts: Parts) -> None:
    # GIVEN a READY turn holding its conversation, and a model that answers at once
    model = ScriptedChatModel([AiMessage(content="hello")])
    run = parts.new_run(Agent("a", "x", model), leased=False)

    # WHEN a worker continues it
    done = driver(parts).continue_turn(run.turn.id, lease=None, should_yield=None, turn=None, created_here=False)

    # THEN it completed after one model call
    assert done.status is TurnStatus.COMPLETED
    assert len(model.requests) == 1


def test_a_flagged_turn_is_cancelled_before_any_step(parts: Parts) -> None:
    # GIVEN a runnable turn someone asked to cancel
    model = ScriptedChatModel([AiMessage(content="never")])
    run = parts.new_run(Agent("a", "x", model), leased=False)
    parts.store.request_cancel(run.turn.id)

    # WHEN a worker continues it
    done = driver(parts).continue_turn(run.turn.id, lease=None, should_yield=None, turn=None, created_here=False)

    # THEN it ended CANCELLED without asking the model
    assert done.status is TurnStatus.CANCELLED
    assert len(model.requests) == 0


def test_a_worker_told_to_yield_stops_before_the_next_step_and_lets_another_take_over(parts: Parts) -> None:
    # GIVEN a runnable turn and a worker that must yield (its time is up)
    model = ScriptedChatModel([AiMessage(content="hello")])
    run = parts.new_run(Agent("a", "x", model), leased=False)

    # WHEN it continues the turn
    left = driver(parts).continue_turn(
        run.turn.id, lease=None, should_yield=lambda: True, turn=None, created_here=False
    )

    # THEN no step ran, the turn is still runnable, and its lease is free for the next worker
    assert left.status.is_runnable
    assert len(model.requests) == 0
    assert parts.store.claim(left.id, "w2", parts.lease_seconds) is not None


def test_a_turn_in_its_backoff_is_not_stepped(parts: Parts) -> None:
    # GIVEN a runnable turn whose last attempt failed, due again in a minute
    model = ScriptedChatModel([AiMessage(content="hello")])
    run = parts.new_run(Agent("a", "x", model), leased=False)
    run.turn.retry = RetryState(attempts=1, reason="model_error", error="x", not_before=parts.clock() + 60)
    parts.writer.save(run)

    # WHEN a worker picks it up early
    left = driver(parts).continue_turn(run.turn.id, lease=None, should_yield=None, turn=None, created_here=False)

    # THEN the model was not called; the turn waits for its due time
    assert len(model.requests) == 0
    assert left.status.is_runnable


def test_a_ready_turn_that_never_took_its_conversation_is_never_started(parts: Parts) -> None:
    # GIVEN a READY turn whose conversation names another turn (its start failed between the two writes)
    model = ScriptedChatModel([AiMessage(content="hello")])
    run = parts.new_run(Agent("a", "x", model), leased=False)
    parts.memory("c1").set_active_turn("someone-else", expected=run.turn.id)

    # WHEN a worker picks it up
    done = driver(parts).continue_turn(run.turn.id, lease=None, should_yield=None, turn=None, created_here=False)

    # THEN it ends FAILED without running (its caller was told it failed and may have retried)
    assert done.status is TurnStatus.FAILED
    assert done.error is not None and done.error.type == "conversation_busy"
    assert len(model.requests) == 0
