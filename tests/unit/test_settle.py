"""Cancels and expiries from outside a run (in-memory store, fake clock)."""

from __future__ import annotations

from tests.unit.conftest import Parts

from agentturn import Agent, ExecutionPolicy, ScriptedChatModel, Suspension, ToolCall, TurnStatus
from agentturn.agents.agent import ToolApprovalDecision
from agentturn.engine.settle import Settler
from agentturn.engine.suspend import suspend_for_approval
from agentturn.ports.store import Lease
from agentturn.state.commands import ResumeCommand
from agentturn.state.messages import AiMessage, ToolMessage
from agentturn.state.turn import Turn, TurnPhase
from agentturn.timeline.identity import stamp


def settler(parts: Parts) -> Settler:
    def claim(turn_id: str) -> Lease | None:
        return parts.store.claim(turn_id, "sweeper", parts.lease_seconds)

    def no_answers(turn_id: str, command: ResumeCommand) -> Turn:
        raise AssertionError(f"no wait here has a default answer, yet {command.kind.value} was given to {turn_id!r}")

    return Settler(parts.store, parts.clock, claim, parts.writer, parts.sequencer, no_answers)


def waiting_for_approval(parts: Parts, policy: ExecutionPolicy) -> str:
    run = parts.new_run(Agent("a", "x", ScriptedChatModel([]), policy=policy), leased=False)
    call = ToolCall(id="c1", name="refund", arguments={})
    run.turn.messages.append(stamp(run.turn, AiMessage(tool_calls=[call])))
    run.turn.pending_tool_calls = [call]
    run.turn.phase = TurnPhase.TOOLS
    suspend_for_approval(run.turn, call, ToolApprovalDecision.require_approval(), policy, parts.clock())
    parts.writer.save(run)
    return run.turn.id


def test_a_waiting_turn_is_cancelled_at_once_with_its_card(parts: Parts) -> None:
    # GIVEN a turn waiting for an approval
    turn_id = waiting_for_approval(parts, ExecutionPolicy())

    # WHEN it is cancelled
    cancelled = settler(parts).cancel(turn_id)

    # THEN it ended CANCELLED, its card can no longer be answered, and the conversation is free
    assert cancelled.status is TurnStatus.CANCELLED
    assert cancelled.pending_cards() == []
    assert parts.memory("c1").get_active_turn() is None


def test_a_turn_a_worker_holds_only_gets_the_flag(parts: Parts) -> None:
    # GIVEN a runnable turn a worker is running
    run = parts.new_run(Agent("a", "x", ScriptedChatModel([])))

    # WHEN it is cancelled from outside
    after = settler(parts).cancel(run.turn.id)

    # THEN it is flagged (the worker stops at its next step) but not ended under the worker's feet
    assert after.cancel_requested
    assert after.status is TurnStatus.READY


def test_an_expired_approval_answers_the_model_and_leaves_the_turn_runnable(parts: Parts) -> None:
    # GIVEN a turn waiting for an approval that times out after 10 minutes
    turn_id = waiting_for_approval(parts, ExecutionPolicy(input_timeout=600))
    sweep = settler(parts)

    # WHEN the sweeper looks before and after the deadline
    early = sweep.settle(turn_id, expire_waits=True)
    parts.clock.advance(601)
    late = sweep.settle(turn_id, expire_waits=True)

    # THEN nothing happened early; late, the call got an "expired" result and the turn runs on
    assert early.status is TurnStatus.WAITING_FOR_APPROVAL
    assert late.status is TurnStatus.RUNNING
    result = late.messages[-1]
    assert isinstance(result, ToolMessage) and isinstance(result.content, dict)
    assert result.content["status"] == "expired"


def test_an_expired_wait_set_to_cancel_ends_the_turn(parts: Parts) -> None:
    # GIVEN a turn whose wait cancels it on expiry
    turn_id = waiting_for_approval(parts, ExecutionPolicy(input_timeout=60, on_input_timeout="cancel"))

    # WHEN the sweeper finds it expired, but is told to leave expired waits alone
    parts.clock.advance(61)
    sweep = settler(parts)
    untouched = sweep.settle(turn_id, expire_waits=False)
    settled = sweep.settle(turn_id, expire_waits=True)

    # THEN only the sweep that expires waits ended it, as not answered in time
    assert untouched.status is TurnStatus.WAITING_FOR_APPROVAL
    assert settled.status is TurnStatus.CANCELLED
    assert settled.error is not None and settled.error.type == "input_expired"


def test_a_plain_text_wait_has_nothing_to_answer_so_its_expiry_cancels(parts: Parts) -> None:
    # GIVEN a turn waiting for text with a deadline
    run = parts.new_run(Agent("a", "x", ScriptedChatModel([])), leased=False)
    run.turn.status = TurnStatus.WAITING_FOR_USER
    run.turn.suspension = Suspension.user_input("Which size?").model_copy(update={"expires_at": parts.clock() + 5})
    parts.writer.save(run)

    # WHEN it expires
    parts.clock.advance(6)
    settled = settler(parts).settle(run.turn.id, expire_waits=True)

    # THEN it ended CANCELLED
    assert settled.status is TurnStatus.CANCELLED
