"""Reminders and escalations of a wait with approvers, on every backend, with an injected clock: the sweeper
(``Runner.expire_overdue``, what the sweeper Lambda calls) finds them through the overdue index."""

from __future__ import annotations

from typing import Any

import pytest

from agentturn import (
    Agent,
    Approvers,
    InvalidResumeError,
    Principal,
    ResumeCommand,
    Turn,
    TurnStatus,
)
from agentturn.engine.events import EventType
from agentturn.listeners.notifications import notice_of
from agentturn.timeline.inbox import Inbox
from tests.scenarios.conftest import Backend
from tests.scenarios.people_support import HOUR, race_with_sweeper
from tests.scenarios.people_support import refund_agent as shared_refund_agent

ANN = Principal("ann", frozenset({"finance"}))
BOSS = Principal("bob", frozenset({"managers"}))
FINANCE_THEN_MANAGERS = Approvers(
    groups=("finance",), remind_after=HOUR, escalate_after=4 * HOUR, escalate_to="managers"
)


def refund_agent(refunds: list[dict[str, Any]]) -> Agent:
    """Refunds over 1,000 wait for finance: reminded after an hour, escalated to managers after four."""
    return shared_refund_agent(refunds, FINANCE_THEN_MANAGERS)


def _of(backend: Backend, kind: EventType) -> list[Any]:
    return [e for e in backend.events if e.type is kind]


def _inbox_turns(backend: Backend, key: str) -> list[str]:
    memory = backend.memory
    assert isinstance(memory, Inbox)
    entries, _ = memory.pending_for(key, None, 10)
    return [e.card.message_id for e in entries]


def test_a_reminder_once_then_an_escalation_moves_the_card(backend: Backend) -> None:
    # GIVEN a refund waiting for finance: remind after 1 h, escalate to managers after 4 h
    refunds: list[dict[str, Any]] = []
    agent = refund_agent(refunds)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "requester/c", "refund O-1001", metadata={"ownerId": "requester"})
    assert waiting.status is TurnStatus.WAITING_FOR_APPROVAL
    card_id = f"{waiting.id}:approval:call-r"

    # WHEN the sweeper runs before the hour THEN nothing is told
    backend.clock.advance(HOUR - 1)
    runner.expire_overdue()
    assert _of(backend, EventType.TURN_REMINDER) == []

    # WHEN it runs after the hour, twice THEN one reminder notice, for finance, and the turn still waits
    backend.clock.advance(2)
    runner.expire_overdue()
    runner.expire_overdue()
    reminders = _of(backend, EventType.TURN_REMINDER)
    assert len(reminders) == 1
    notice = notice_of(reminders[0])
    assert notice is not None and notice.kind == "REMINDER" and notice.action_id == "call-r"
    assert notice.approvers == ["g#finance"]
    assert backend.store.load(waiting.id).status is TurnStatus.WAITING_FOR_APPROVAL
    assert _inbox_turns(backend, "g#finance") == [card_id]

    # WHEN it runs after 4 h THEN the card escalates to managers: one notice, the inbox entry moves
    backend.clock.advance(3 * HOUR)
    runner.expire_overdue()
    runner.expire_overdue()
    escalations = _of(backend, EventType.TURN_ESCALATED)
    assert len(escalations) == 1
    notice = notice_of(escalations[0])
    assert notice is not None and notice.kind == "ESCALATED"
    assert (notice.approvers, notice.escalated_from) == (["g#managers"], ["g#finance"])
    assert _inbox_turns(backend, "g#finance") == []
    assert _inbox_turns(backend, "g#managers") == [card_id]
    assert len(_of(backend, EventType.TURN_REMINDER)) == 1

    # WHEN finance's approver approves the card that escalated away from her THEN 404-like refusal, nothing changed
    version = backend.store.load(waiting.id).version
    with pytest.raises(InvalidResumeError) as refused:
        runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(ANN))
    assert refused.value.reason == "not_permitted"
    assert backend.store.load(waiting.id).version == version

    # WHEN a manager approves THEN the refund runs once
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(BOSS))
    assert runner.run_turn(waiting.id).status is TurnStatus.COMPLETED and len(refunds) == 1


def test_an_answer_racing_the_escalation_exactly_one_wins(backend: Backend) -> None:
    # GIVEN 100 rounds of a card due to escalate, answered by finance at the same moment the sweeper acts
    agent = refund_agent([])
    runner = backend.runner([agent])
    rounds = 100
    for n in range(rounds):
        waiting = runner.run(agent, f"requester/c{n}", "refund", metadata={"ownerId": "requester"})
        backend.clock.advance(4 * HOUR + 1)
        answer = race_with_sweeper(runner, runner, waiting.id, ResumeCommand.approve_tool("call-r").by(ANN))
        # WHEN both are done THEN exactly one won: approved (never escalated after), or escalated (answer refused)
        stored = backend.store.load(waiting.id)
        people = stored.suspensions[0].people if stored.suspensions else None
        answered = not isinstance(answer, InvalidResumeError)
        escalated = people is not None and people.escalated_at is not None
        assert answered != escalated, (n, answer, people)
        if answered:
            assert stored.status is not TurnStatus.WAITING_FOR_APPROVAL


class _AnswerBetweenReadAndWrite:
    """The store as the sweeper sees it, except that its first read of the turn lets ``answer`` commit before
    the sweeper writes: the interleaving where the answer wins (a free race seldom produces it)."""

    def __init__(self, store: Any, answer: Any) -> None:
        self._store = store
        self._answer = answer

    def load(self, turn_id: str) -> Turn:
        turn: Turn = self._store.load(turn_id)
        answer, self._answer = self._answer, None
        if answer is not None:
            answer()
        return turn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_an_answer_that_commits_while_the_sweeper_escalates_wins_and_the_escalation_is_dropped(
    backend: Backend,
) -> None:
    # GIVEN a card due to escalate, and the sweeper reading the turn just before finance's answer commits
    refunds: list[dict[str, Any]] = []
    agent = refund_agent(refunds)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "requester/c", "refund", metadata={"ownerId": "requester"})
    backend.clock.advance(4 * HOUR + 1)
    answered: list[Turn] = []

    def answer() -> None:
        answered.append(runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(ANN)))

    sweeper = backend.runner([agent], store=_AnswerBetweenReadAndWrite(backend.store, answer))

    # WHEN the sweeper acts on the turn it read before the answer
    swept = sweeper.expire(waiting.id)

    # THEN the answer won: the escalation's conditional write was refused, nothing escalated, no notice sent
    assert len(answered) == 1 and swept.status is not TurnStatus.WAITING_FOR_APPROVAL
    stored = backend.store.load(waiting.id)
    assert all(s.people is None or s.people.escalated_at is None for s in stored.suspensions)
    assert _of(backend, EventType.TURN_ESCALATED) == []
    assert runner.run_turn(waiting.id).status is TurnStatus.COMPLETED and len(refunds) == 1
