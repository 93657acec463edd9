"""Tool approval: a decided ToolCall waits for a person; rejected or denied calls never run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentturn import (
    Agent,
    AiMessage,
    ApprovalMessage,
    ApprovalStatus,
    ChatRequest,
    EventType,
    InvalidResumeError,
    ResumeCommand,
    ScriptedChatModel,
    Tool,
    ToolApprovalDecision,
    ToolCall,
    ToolMessage,
    Turn,
    TurnStatus,
)
from agentturn.models._history import result_text
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import ai_calls, final_from_last_tool, reply_after_tools

REFUND = ai_calls(("call-r", "issue_refund", {"orderId": "O-1001", "amount": 42.5}))


def refund_agent(
    refunds: list[dict[str, Any]], verdict: str = "require", chat_model: ScriptedChatModel | None = None
) -> Agent:
    def policy(turn: Turn, call: ToolCall, tool: Tool) -> ToolApprovalDecision:
        if verdict == "deny":
            return ToolApprovalDecision.deny("refunds are closed today")
        return ToolApprovalDecision.require_approval(f"refund {call.arguments['amount']}?")

    def issue_refund(arguments: dict[str, Any]) -> dict[str, Any]:
        refunds.append(arguments)
        return {"refunded": arguments["amount"]}

    return Agent(
        id="refund-agent",
        instructions="",
        chat_model=chat_model or ScriptedChatModel(reply_after_tools(REFUND, final_from_last_tool)),
        tools=[Tool("issue_refund", "refund", issue_refund)],
        approval_policy=policy,
    )


def test_approved_call_runs_once_after_approval(backend: Backend) -> None:
    # GIVEN a refund that needs approval
    refunds: list[dict[str, Any]] = []
    agent = refund_agent(refunds)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "refund please")

    # THEN the turn waits for approval with an approval card, and nothing was refunded
    assert waiting.status is TurnStatus.WAITING_FOR_APPROVAL
    assert waiting.suspension is not None and waiting.suspension.correlation_id == "call-r"
    assert refunds == []
    card = backend.memory("conv").get_message(f"{waiting.id}:approval:call-r")
    assert isinstance(card, ApprovalMessage)
    assert card.status is ApprovalStatus.PENDING and card.actions == ["APPROVE", "REJECT", "RESPOND"]
    assert card.arguments == {"orderId": "O-1001", "amount": 42.5}
    assert EventType.TOOL_APPROVAL_REQUESTED in [e.type for e in backend.events]

    # WHEN a person approves
    done = runner.resume(waiting.id, ResumeCommand.approve_tool("call-r").with_metadata("submittedBy", "boss"))

    # THEN the refund ran exactly once (the policy is not asked again) and the card shows who approved
    assert done.status is TurnStatus.COMPLETED
    assert refunds == [{"orderId": "O-1001", "amount": 42.5}]
    card = backend.memory("conv").get_message(f"{waiting.id}:approval:call-r")
    assert isinstance(card, ApprovalMessage)
    assert (card.status, card.decided_by, card.actions) == (ApprovalStatus.APPROVED, "boss", [])


def test_rejected_call_never_runs_and_the_model_learns_why(backend: Backend) -> None:
    # GIVEN a refund waiting for approval
    refunds: list[dict[str, Any]] = []
    agent = refund_agent(refunds)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "refund please")

    # WHEN it is rejected with a reason
    done = runner.resume(waiting.id, ResumeCommand.reject_tool("call-r", "amount too high"))

    # THEN the tool did not run; its ToolMessage carries the status and the reason for the model
    assert refunds == []
    assert done.status is TurnStatus.COMPLETED
    tool_message = next(m for m in done.messages if isinstance(m, ToolMessage))
    assert tool_message.tool_call_id == "call-r"
    assert tool_message.content == {"status": "rejected", "toolName": "issue_refund", "reason": "amount too high"}
    card = backend.memory("conv").get_message(f"{waiting.id}:approval:call-r")
    assert isinstance(card, ApprovalMessage) and card.status is ApprovalStatus.REJECTED
    assert card.reason == "amount too high"


def test_denied_call_never_runs_and_does_not_wait(backend: Backend) -> None:
    # GIVEN a policy that denies the call outright
    refunds: list[dict[str, Any]] = []
    agent = refund_agent(refunds, verdict="deny")
    # WHEN the turn runs
    done = backend.runner([agent]).run(agent, "conv", "refund please")
    # THEN it never waited, the tool never ran, and the model was told
    assert done.status is TurnStatus.COMPLETED
    assert refunds == []
    tool_message = next(m for m in done.messages if isinstance(m, ToolMessage))
    assert tool_message.content == {
        "status": "denied",
        "toolName": "issue_refund",
        "reason": "refunds are closed today",
    }


def test_approval_commands_must_name_the_pending_call(backend: Backend) -> None:
    # GIVEN a refund waiting for approval
    agent = refund_agent([])
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "refund please")
    # WHEN another call id, or a form submission, is sent
    with pytest.raises(InvalidResumeError) as wrong_id:
        runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-other"))
    with pytest.raises(InvalidResumeError) as wrong_kind:
        runner.submit_resume(waiting.id, ResumeCommand.user_input("call-r", {}))
    # THEN both are refused and the turn still waits
    assert (wrong_id.value.reason, wrong_kind.value.reason) == ("unknown_action", "wrong_command")
    assert backend.store.load(waiting.id).status is TurnStatus.WAITING_FOR_APPROVAL


def test_cancel_while_waiting_for_approval_cancels_the_card(backend: Backend) -> None:
    # GIVEN a refund waiting for approval
    refunds: list[dict[str, Any]] = []
    agent = refund_agent(refunds)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "refund please")
    # WHEN the turn is cancelled
    runner.cancel(waiting.id)
    # THEN the approval card is CANCELLED and read-only, and the refund never ran
    card = backend.memory("conv").get_message(f"{waiting.id}:approval:call-r")
    assert isinstance(card, ApprovalMessage)
    assert (card.status, card.actions) == (ApprovalStatus.CANCELLED, [])
    assert refunds == []


@pytest.mark.parametrize("answer", ["already refunded by phone", {"refunded": 0, "note": "by phone"}])
def test_a_respond_answer_reaches_the_model_marked_as_written_by_a_person(backend: Backend, answer: Any) -> None:
    # GIVEN a refund waiting for approval, and a model that records the text of every tool result it is sent
    read: list[str] = []

    def model(request: ChatRequest) -> AiMessage:
        results = [m for m in request.messages if isinstance(m, ToolMessage)]
        if not results:
            return REFUND
        read.extend(result_text(m.content) for m in results)
        return AiMessage(content="noted")

    refunds: list[dict[str, Any]] = []
    agent = refund_agent(refunds, chat_model=ScriptedChatModel(model))
    runner = backend.runner([agent])
    waiting = runner.run(agent, "conv", "refund please")

    # WHEN a person answers in the tool's place
    done = runner.resume(waiting.id, ResumeCommand.respond("call-r", answer))

    # THEN the tool never ran, and the text the model read says that a person wrote the answer, in place of the
    # tool, and holds the answer itself
    assert done.status is TurnStatus.COMPLETED and refunds == []
    [text] = read
    content = json.loads(text)
    assert content["status"] == "answered_by_person" and content["toolName"] == "issue_refund"
    assert "a person answered in place of issue_refund" in content["message"]
    assert content["response"] == answer
    # ... and the timeline's copy is the same, still marked in metadata for clients
    stored = next(
        m for m in backend.memory("conv").get_messages() if isinstance(m, ToolMessage) and m.tool_call_id == "call-r"
    )
    assert stored.content == content and stored.metadata == {"writtenBy": "person"}
