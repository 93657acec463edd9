"""Approvals by other people, through the library on every backend: three identities (the requester, two
approvers of finance) and an outsider; quorum 2 of a group with the requester excluded."""

from __future__ import annotations

from typing import Any

import pytest

from agentturn import (
    Agent,
    ApprovalMessage,
    ApprovalStatus,
    Approvers,
    InvalidResumeError,
    Principal,
    ResumeCommand,
    ScriptedChatModel,
    Tool,
    ToolApprovalDecision,
    ToolCall,
    Turn,
    TurnStatus,
)
from agentturn.errors import RefusalReason
from tests.scenarios.conftest import Backend
from tests.scenarios.scripts import ai_calls, final_from_last_tool, reply_after_tools

REQUESTER = Principal("requester", frozenset({"finance"}))
ANN = Principal("ann", frozenset({"finance"}))
BEN = Principal("ben", frozenset({"finance", "oncall"}))
OUTSIDER = Principal("eve", frozenset({"sales"}))
REFUND = ai_calls(("call-r", "issue_refund", {"orderId": "O-1001", "amount": 4200}))


def refund_agent(refunds: list[dict[str, Any]]) -> Agent:
    def policy(turn: Turn, call: ToolCall, tool: Tool) -> ToolApprovalDecision:
        return ToolApprovalDecision.require_approval(
            "refund over 1,000", approvers=Approvers(groups=("finance",), quorum=2, exclude_requester=True)
        )

    def issue_refund(arguments: dict[str, Any]) -> dict[str, Any]:
        refunds.append(arguments)
        return {"refunded": arguments["amount"]}

    return Agent(
        id="refund-agent",
        instructions="",
        chat_model=ScriptedChatModel(reply_after_tools(REFUND, final_from_last_tool)),
        tools=[Tool("issue_refund", "refund", issue_refund)],
        approval_policy=policy,
    )


def _card(backend: Backend, turn: Turn) -> ApprovalMessage:
    card = backend.memory("requester/c").get_message(f"{turn.id}:approval:call-r")
    assert isinstance(card, ApprovalMessage)
    return card


def _refused(runner: Any, turn_id: str, command: ResumeCommand) -> RefusalReason:
    with pytest.raises(InvalidResumeError) as refused:
        runner.submit_resume(turn_id, command)
    return refused.value.reason


def test_two_of_finance_approve_the_requester_and_an_outsider_cannot(backend: Backend) -> None:
    # GIVEN the requester's refund, waiting for two of finance (the requester, though in finance, excluded)
    refunds: list[dict[str, Any]] = []
    agent = refund_agent(refunds)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "requester/c", "refund O-1001", metadata={"ownerId": "requester"})
    assert waiting.status is TurnStatus.WAITING_FOR_APPROVAL
    people = _card(backend, waiting).people
    assert people is not None and people.waiting_for == "waiting for finance (0 of 2)"
    assert people.requested_by == "requester"

    # WHEN the requester, the outsider, or a caller who names nobody answers THEN each is refused as for a card
    # that does not exist, and nothing is stored
    version = backend.store.load(waiting.id).version
    assert _refused(runner, waiting.id, ResumeCommand.approve_tool("call-r").by(REQUESTER)) == "not_permitted"
    assert _refused(runner, waiting.id, ResumeCommand.approve_tool("call-r").by(OUTSIDER)) == "not_permitted"
    assert _refused(runner, waiting.id, ResumeCommand.approve_tool("call-r")) == "not_permitted"
    assert backend.store.load(waiting.id).version == version

    # WHEN the first approver approves THEN the turn still waits and the card reads "(1 of 2)" for the owner
    once = runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(ANN))
    assert once.status is TurnStatus.WAITING_FOR_APPROVAL and refunds == []
    card = _card(backend, once)
    assert card.status is ApprovalStatus.PENDING and card.people is not None
    assert card.people.waiting_for == "waiting for finance (1 of 2)"
    assert [(d.subject, d.groups, d.verdict.value) for d in card.people.decisions] == [("ann", ["finance"], "approve")]

    # WHEN she approves again THEN she is refused: one decision per person
    assert _refused(runner, waiting.id, ResumeCommand.approve_tool("call-r").by(ANN)) == "already_decided"

    # WHEN a second person of finance approves THEN the refund runs once and the card shows both decisions
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(BEN))
    done = runner.run_turn(waiting.id)
    assert done.status is TurnStatus.COMPLETED and len(refunds) == 1
    card = _card(backend, done)
    assert card.status is ApprovalStatus.APPROVED and card.decided_by == "ben"
    assert card.people is not None and [d.subject for d in card.people.decisions] == ["ann", "ben"]


def test_one_rejection_of_finance_rejects(backend: Backend) -> None:
    refunds: list[dict[str, Any]] = []
    agent = refund_agent(refunds)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "requester/c", "refund O-1001", metadata={"ownerId": "requester"})
    # WHEN one approver rejects THEN the call is rejected, never runs, and the model is told
    runner.submit_resume(waiting.id, ResumeCommand.reject_tool("call-r", "over budget").by(BEN))
    done = runner.run_turn(waiting.id)
    assert done.status is TurnStatus.COMPLETED and refunds == []
    card = _card(backend, done)
    assert card.status is ApprovalStatus.REJECTED and card.reason == "over budget"
    assert card.people is not None and [(d.subject, d.verdict.value) for d in card.people.decisions] == [
        ("ben", "reject")
    ]
