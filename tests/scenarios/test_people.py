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
    Runner,
    Turn,
    TurnStatus,
)
from agentturn.errors import RefusalReason
from agentturn.ports.audit import OutcomeLog, ToolOutcome, fingerprint
from tests.scenarios.conftest import Backend
from tests.scenarios.people_support import ROUNDS, FixedClock, race_with_sweeper
from tests.scenarios.people_support import refund_agent as shared_refund_agent

REQUESTER = Principal("requester", frozenset({"finance"}))
ANN = Principal("ann", frozenset({"finance"}))
BEN = Principal("ben", frozenset({"finance", "oncall"}))
OUTSIDER = Principal("eve", frozenset({"sales"}))
FINANCE_TWO = Approvers(groups=("finance",), quorum=2, exclude_requester=True)


def refund_agent(refunds: list[dict[str, Any]], *, fails_with: str | None = None) -> Agent:
    """Refunds over 1,000 wait for two of finance, the requester excluded."""
    return shared_refund_agent(refunds, FINANCE_TWO, fails_with=fails_with)


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

    # AND the audit keeps both decisions as made, and beside them, once, what the approved refund did
    assert [(r.subject, r.outcome) for r in runner.audit(done.id)] == [("ann", "PENDING"), ("ben", "APPROVED")]
    (outcome,) = runner.outcomes(done.id)
    assert (outcome.action_id, outcome.tool_name, outcome.outcome) == ("call-r", "issue_refund", ToolOutcome.SUCCEEDED)
    assert outcome.result_fingerprint == fingerprint({"refunded": 4200}) and outcome.summary == ""
    # AND the outcome is never rewritten: a second put of it (a rerun after a crash) keeps the first
    memory = runner.chat_memory
    assert isinstance(memory, OutcomeLog)
    rewrite = outcome.model_copy(update={"outcome": ToolOutcome.FAILED, "summary": "forged"})
    assert memory.record_outcome(done.conversation_id, done.created_at, rewrite) is False
    assert runner.outcomes(done.id) == [outcome]
    assert [(r.subject, r.outcome) for r in runner.audit(done.id)] == [("ann", "PENDING"), ("ben", "APPROVED")]


def test_the_audit_records_a_failed_refund_by_its_error_line(backend: Backend) -> None:
    # GIVEN a refund that two of finance approve, whose tool fails
    agent = refund_agent([], fails_with="payment gateway declined")
    runner = backend.runner([agent])
    waiting = runner.run(agent, "requester/c", "refund O-1001", metadata={"ownerId": "requester"})
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(ANN))
    # WHEN the second approves and the tool runs
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(BEN))
    done = runner.run_turn(waiting.id)
    # THEN the audit's outcome says it failed, and why
    (outcome,) = runner.outcomes(done.id)
    assert outcome.outcome is ToolOutcome.FAILED
    assert outcome.summary == "RuntimeError: payment gateway declined"
    assert outcome.result_fingerprint == fingerprint("RuntimeError: payment gateway declined")


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


def test_the_deciding_approval_racing_the_deadline_has_exactly_one_winner(backend: Backend) -> None:
    # GIVEN refunds waiting for two of finance with a deadline, one approval already given
    from agentturn import ExecutionPolicy

    agent = refund_agent([])
    agent.policy = ExecutionPolicy(input_timeout=60.0)
    runner = backend.runner([agent])
    answered = expired = 0
    reasons: list[str] = []
    for round_ in range(ROUNDS):
        waiting = runner.run(agent, f"requester/race-{round_}", "refund", metadata={"ownerId": "requester"})
        runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(ANN))
        deadline = waiting.suspensions[0].expires_at
        assert deadline is not None
        # WHEN the second approval (its clock just before the deadline) and the sweeper's expiry (just after) race
        approver = Runner(
            store=backend.store, chat_memory=backend.memory, agents=[agent], clock=FixedClock(deadline - 0.5)
        )
        sweeper = Runner(
            store=backend.store, chat_memory=backend.memory, agents=[agent], clock=FixedClock(deadline + 0.5)
        )
        # (either may be scheduled first: the order they are started in alternates between rounds)
        answer = race_with_sweeper(
            approver, sweeper, waiting.id, ResumeCommand.approve_tool("call-r").by(BEN), sweeper_first=round_ % 2 == 0
        )
        # THEN exactly one wins: the card is APPROVED and the approver was told so, or EXPIRED and they were refused
        card = _card_of(backend, waiting, f"requester/race-{round_}")
        if not isinstance(answer, InvalidResumeError):
            assert card.status is ApprovalStatus.APPROVED
            answered += 1
        else:
            assert card.status is ApprovalStatus.EXPIRED, (round_, answer, card.status)
            assert answer.reason in ("action_not_pending", "input_expired", "not_waiting"), answer
            reasons.append(str(answer.reason))
            expired += 1
    assert answered + expired == ROUNDS
    won = f"the approval won {answered}, the deadline {expired} (the approver told {sorted(set(reasons))})"
    print(f"\n{ROUNDS} rounds on {backend.name}: {won}")


def _card_of(backend: Backend, turn: Turn, conversation: str) -> ApprovalMessage:
    stored = backend.store.load(turn.id)
    card = stored.cards[0]
    assert isinstance(card, ApprovalMessage)
    timeline = backend.memory(conversation).get_message(card.message_id)
    assert isinstance(timeline, ApprovalMessage) and timeline.status == card.status
    return card
