"""Stopping a turn for a person, and the round trip through resume (pure: no store)."""

from __future__ import annotations

import pytest

from agentturn import AiMessage, ExecutionPolicy, ResumeCommand, Suspension, ToolCall, Turn, TurnStatus
from agentturn.agents.agent import ToolApprovalDecision
from agentturn.engine.resume import apply_resume, expire_wait
from agentturn.engine.suspend import suspend_for_approval, suspend_for_form, suspend_for_text
from agentturn.errors import InvalidResumeError
from agentturn.forms.definitions import FormDefinition
from agentturn.state.messages import ToolMessage
from agentturn.state.turn import SuspensionType, TurnPhase

NOW = 1_800_000_000.0
ADDRESS = FormDefinition(
    "address", "Where to ship", {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
)


def turn_calling(call: ToolCall) -> Turn:
    turn = Turn(id="t1", conversation_id="c", agent_id="a", agent_version="1", status=TurnStatus.RUNNING)
    turn.messages.append(AiMessage(tool_calls=[call]))
    turn.pending_tool_calls = [call]
    turn.phase = TurnPhase.TOOLS
    return turn


def test_a_model_requested_form_waits_with_a_pending_card_and_a_submit_answers_the_model() -> None:
    # GIVEN a turn whose model asked for the address form
    call = ToolCall(id="call-1", name="request_user_input", arguments={"formKey": "address"})
    turn = turn_calling(call)

    # WHEN it is suspended for the form
    suspend_for_form(turn, call, ADDRESS, "MODEL", ExecutionPolicy(), NOW)

    # THEN it waits for a person, on that call, with one pending card for it
    assert turn.status is TurnStatus.WAITING_FOR_USER
    assert turn.suspension is not None and turn.suspension.correlation_id == "call-1"
    assert turn.suspension.resume_phase is TurnPhase.MODEL
    assert [card.action_id for card in turn.pending_cards()] == ["call-1"]
    # ... and the person's answer closes the card and reaches the model as the call's result
    resumed = apply_resume(turn, ResumeCommand.submit_form("call-1", {"city": "Oslo"}), NOW + 1)
    assert resumed.pending_cards() == []
    result = resumed.messages[-1]
    assert isinstance(result, ToolMessage)
    assert result.content == {"status": "submitted", "formKey": "address", "data": {"city": "Oslo"}}


def test_a_tool_requested_form_resumes_into_the_tool_not_the_model() -> None:
    # GIVEN a business tool that asked for a form
    call = ToolCall(id="call-1", name="ship", arguments={})
    turn = turn_calling(call)
    suspend_for_form(turn, call, ADDRESS, "TOOL", ExecutionPolicy(), NOW)

    # WHEN the person submits
    resumed = apply_resume(turn, ResumeCommand.submit_form("call-1", {"city": "Oslo"}), NOW + 1)

    # THEN the call is still pending (the tool runs again with the data), and the model saw nothing yet
    assert turn.suspension is not None and turn.suspension.resume_phase is TurnPhase.TOOLS
    assert [c.id for c in resumed.pending_tool_calls] == ["call-1"]
    assert resumed.tool_state("call-1").submitted_form_data == {"city": "Oslo"}
    assert not any(isinstance(m, ToolMessage) for m in resumed.messages)


def test_the_wait_ends_when_the_policy_says_unless_the_turn_says_otherwise() -> None:
    # GIVEN a policy with a one-hour input timeout, and a turn that asks for ten minutes
    call = ToolCall(id="call-1", name="ship", arguments={})
    policy = ExecutionPolicy(input_timeout=3600)
    by_policy, by_turn = turn_calling(call), turn_calling(call)
    by_turn.input_timeout = 600

    # WHEN both are suspended
    suspend_for_form(by_policy, call, ADDRESS, "TOOL", policy, NOW)
    suspend_for_form(by_turn, call, ADDRESS, "TOOL", policy, NOW)

    # THEN each wait expires when its own terms say, and not before
    assert by_policy.suspension is not None and by_turn.suspension is not None
    assert by_policy.suspension.expires_at == NOW + 3600
    assert by_turn.suspension.expires_at == NOW + 600
    with pytest.raises(InvalidResumeError):
        expire_wait(by_turn, NOW + 599)
    assert expire_wait(by_turn, NOW + 601).status is TurnStatus.RUNNING


def test_an_approval_waits_with_the_call_s_arguments_and_a_rejection_tells_the_model_why() -> None:
    # GIVEN a call that the policy wants a person to approve
    call = ToolCall(id="call-1", name="refund", arguments={"amount": 90})
    turn = turn_calling(call)

    # WHEN it is suspended for approval
    suspend_for_approval(turn, call, ToolApprovalDecision.require_approval("over 50"), ExecutionPolicy(), NOW)

    # THEN the person sees what would run, and why they are asked
    assert turn.status is TurnStatus.WAITING_FOR_APPROVAL
    assert turn.suspension is not None and turn.suspension.type is SuspensionType.TOOL_APPROVAL
    assert turn.suspension.metadata["arguments"] == {"amount": 90}
    assert turn.suspension.message == "over 50"
    # ... and a rejection reaches the model as the call's result, with the reason
    resumed = apply_resume(turn, ResumeCommand.reject_tool("call-1", "too much"), NOW + 1)
    result = resumed.messages[-1]
    assert isinstance(result, ToolMessage)
    assert result.content == {"status": "rejected", "toolName": "refund", "reason": "too much"}


def test_a_plain_text_wait_is_put_only_on_a_turn_that_is_neither_ended_nor_waiting() -> None:
    # GIVEN a running turn, a finished one and one already waiting
    running = Turn(id="t1", conversation_id="c", agent_id="a", agent_version="1", status=TurnStatus.RUNNING)
    finished = running.model_copy(update={"status": TurnStatus.COMPLETED})
    waiting = running.model_copy(update={"status": TurnStatus.WAITING_FOR_USER})

    # WHEN a plain-text wait is put on each
    suspend_for_text(running, Suspension.user_input("Which size?"))

    # THEN the running one waits for text; the others are refused and left as they were
    assert running.status is TurnStatus.WAITING_FOR_USER
    for refused in (finished, waiting):
        with pytest.raises(InvalidResumeError):
            suspend_for_text(refused, Suspension.user_input("Which size?"))
    assert finished.status is TurnStatus.COMPLETED and finished.suspension is None


def test_a_form_or_approval_suspension_is_not_a_plain_text_wait() -> None:
    # GIVEN a running turn and a suspension that is not plain text
    turn = Turn(id="t1", conversation_id="c", agent_id="a", agent_version="1", status=TurnStatus.RUNNING)
    approval = Suspension(type=SuspensionType.TOOL_APPROVAL, correlation_id="call-1")

    # WHEN it is put on the turn THEN it is refused and the turn is untouched
    with pytest.raises(ValueError, match="plain-text"):
        suspend_for_text(turn, approval)
    assert turn.status is TurnStatus.RUNNING
