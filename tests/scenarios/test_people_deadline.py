"""A wait's own deadline (``Approvers.deadline_after`` / ``at_deadline``) and the quorum rule across an
escalation, on every backend, with an injected clock: the sweeper (``Runner.expire_overdue``) finds due waits
through the overdue index."""

from __future__ import annotations

from typing import Any

import pytest

from agentturn import (
    Agent,
    ApprovalMessage,
    ApprovalStatus,
    Approvers,
    AtDeadline,
    FormDefinition,
    FormMessage,
    FormStatus,
    InvalidResumeError,
    Principal,
    ResumeCommand,
    Runner,
    ScriptedChatModel,
    Turn,
    TurnStatus,
    UserInputTool,
)
from agentturn.engine.clock import iso
from agentturn.engine.events import EventType
from agentturn.errors import RefusalReason
from agentturn.state.approvers import DEADLINE_SUBJECT, DecisionSource
from tests.scenarios.conftest import Backend
from tests.scenarios.people_support import HOUR, ROUNDS, FixedClock, race_with_sweeper, refund_agent
from tests.scenarios.scripts import MEETING_SCHEMA, ai_calls, final_from_last_tool, reply_after_tools

ANN = Principal("ann", frozenset({"finance"}))
CARL = Principal("carl", frozenset({"finance", "managers"}))
BOSS = Principal("bob", frozenset({"managers"}))
DANA = Principal("dana", frozenset({"managers"}))


def _approval(backend: Backend, turn: Turn, conversation: str = "requester/c") -> ApprovalMessage:
    """The card as the timeline holds it, checked to be the one the stored turn holds."""
    card = backend.memory(conversation).get_message(f"{turn.id}:approval:call-r")
    assert isinstance(card, ApprovalMessage)
    stored = backend.store.load(turn.id).card(card.message_id)
    assert stored is not None and stored.status == card.status
    return card


def _start(runner: Runner, agent: Agent, conversation: str = "requester/c") -> Turn:
    waiting = runner.run(agent, conversation, "refund O-1001", metadata={"ownerId": "requester"})
    assert waiting.status is TurnStatus.WAITING_FOR_APPROVAL
    return waiting


def test_the_deadline_approves_by_default_through_the_answer_path_and_is_recorded_as_the_deadline(
    backend: Backend,
) -> None:
    # GIVEN a refund waiting for two of finance, approving by default after 24 h; one approval given
    refunds: list[dict[str, Any]] = []
    approvers = Approvers(groups=("finance",), quorum=2, deadline_after=24 * HOUR, at_deadline=AtDeadline.approve())
    agent = refund_agent(refunds, approvers)
    runner = backend.runner([agent])
    waiting = _start(runner, agent)
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(ANN))

    # AND the card shows the deadline (the inbox orders by it)
    people = waiting.suspensions[0].people
    assert people is not None and people.deadline_at is not None
    assert _approval(backend, waiting).expires_at == iso(people.deadline_at)

    # WHEN the sweeper runs just before the deadline THEN nothing happens
    backend.clock.advance(24 * HOUR - 1)
    assert runner.expire_overdue() == []
    assert _approval(backend, waiting).status is ApprovalStatus.PENDING

    # WHEN it runs after the deadline, twice THEN the deadline's approval settles the card alone (quorum 2), once
    backend.clock.advance(2)
    [resumed] = runner.expire_overdue()
    assert runner.expire_overdue() == []
    assert resumed.status is TurnStatus.RUNNING
    card = _approval(backend, waiting)
    assert card.status is ApprovalStatus.APPROVED and card.decided_by == DEADLINE_SUBJECT
    assert card.people is not None and card.people.waiting_for == "answered by deadline (approve)"
    assert [(d.subject, d.source) for d in card.people.decisions] == [
        ("ann", DecisionSource.PERSON),
        (DEADLINE_SUBJECT, DecisionSource.DEADLINE),
    ]
    # AND the same notices as a person's answer: submitted, resumed
    resumed_events = [e for e in backend.events if e.type is EventType.TURN_RESUMED]
    assert len(resumed_events) == 1

    # AND the audit record names the deadline, not a person
    audit = runner.audit(waiting.id)
    assert [(r.subject, r.source, r.groups, r.outcome) for r in audit] == [
        ("ann", DecisionSource.PERSON, ["finance"], "PENDING"),
        (DEADLINE_SUBJECT, DecisionSource.DEADLINE, [], "APPROVED"),
    ]

    # AND the turn runs on as after a person's approval: the refund, once
    assert runner.run_turn(waiting.id).status is TurnStatus.COMPLETED and len(refunds) == 1

    # AND a person's late approval is refused as an answer to a settled card
    with pytest.raises(InvalidResumeError):
        runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(CARL))


def test_past_the_deadline_a_late_answer_is_refused_and_an_outsider_still_learns_nothing(backend: Backend) -> None:
    # GIVEN a refund whose deadline passed, the sweeper not yet there
    approvers = Approvers(groups=("finance",), deadline_after=HOUR, at_deadline=AtDeadline.reject("too late"))
    agent = refund_agent([], approvers)
    runner = backend.runner([agent])
    waiting = _start(runner, agent)
    backend.clock.advance(HOUR + 1)
    version = backend.store.load(waiting.id).version

    # WHEN finance approves late, and a manager (not admitted) approves THEN expired, and the 404 of outsiders
    with pytest.raises(InvalidResumeError) as late:
        runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(ANN))
    assert late.value.reason is RefusalReason.INPUT_EXPIRED
    with pytest.raises(InvalidResumeError) as outsider:
        runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(BOSS))
    assert outsider.value.reason is RefusalReason.NOT_PERMITTED
    # AND a forged "deadline" answer other than the wait's own default is refused like an outsider's
    from agentturn.engine.deadline import DEADLINE

    with pytest.raises(InvalidResumeError) as forged:
        runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(DEADLINE))
    assert forged.value.reason is RefusalReason.NOT_PERMITTED
    assert backend.store.load(waiting.id).version == version

    # WHEN the sweeper runs THEN the deadline rejects it with its reason
    runner.expire_overdue()
    card = _approval(backend, waiting)
    assert card.status is ApprovalStatus.REJECTED and card.reason == "too late"
    assert card.decided_by == DEADLINE_SUBJECT


def test_the_deadline_cancels_the_turn(backend: Backend) -> None:
    # GIVEN a refund cancelled at its deadline
    refunds: list[dict[str, Any]] = []
    approvers = Approvers(groups=("finance",), deadline_after=HOUR, at_deadline=AtDeadline.cancel())
    agent = refund_agent(refunds, approvers)
    runner = backend.runner([agent])
    waiting = _start(runner, agent)

    # WHEN the sweeper runs after it THEN the turn ends CANCELLED, its card cancelled, nothing refunded
    backend.clock.advance(HOUR + 1)
    assert runner.expire_overdue() == []
    stored = backend.store.load(waiting.id)
    assert stored.status is TurnStatus.CANCELLED
    assert stored.error is not None and stored.error.type == "deadline_passed"
    assert _approval(backend, waiting).status is ApprovalStatus.CANCELLED
    assert [e.type for e in backend.events].count(EventType.TURN_CANCELLED) == 1
    assert refunds == []


def test_the_deadline_escalates_after_an_earlier_escalation(backend: Backend) -> None:
    # GIVEN finance, escalating to managers after 4 h and to directors at the 24 h deadline
    approvers = Approvers(
        groups=("finance",),
        escalate_after=4 * HOUR,
        escalate_to="managers",
        deadline_after=24 * HOUR,
        at_deadline=AtDeadline.escalate("directors"),
    )
    agent = refund_agent([], approvers)
    runner = backend.runner([agent])
    waiting = _start(runner, agent)

    # WHEN the sweeper runs after 4 h THEN managers; after 24 h THEN directors, with one notice each
    backend.clock.advance(4 * HOUR + 1)
    runner.expire_overdue()
    people = _approval(backend, waiting).people
    assert people is not None and people.approvers.groups == ("managers",) and people.deadline_at is not None
    backend.clock.advance(20 * HOUR)
    runner.expire_overdue()
    runner.expire_overdue()
    people = _approval(backend, waiting).people
    assert people is not None and people.approvers.groups == ("directors",)
    assert people.deadline_at is None and people.deadline_passed_at is not None
    assert _approval(backend, waiting).expires_at is None  # no deadline left to show
    assert people.escalated_from is not None and people.escalated_from.groups == ("managers",)
    escalations = [e for e in backend.events if e.type is EventType.TURN_ESCALATED]
    assert len(escalations) == 2
    # AND nothing is due any more: the turn leaves the overdue index, and only directors may answer
    assert backend.store.find_overdue() == []
    with pytest.raises(InvalidResumeError):
        runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(BOSS))
    director = Principal("dir", frozenset({"directors"}))
    assert runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(director)).status.is_runnable


def _form_agent(form: FormDefinition) -> Agent:
    return Agent(
        id="booking",
        instructions="",
        chat_model=ScriptedChatModel(
            reply_after_tools(
                ai_calls(("call-f", "request_user_input", {"formKey": form.form_key})), final_from_last_tool
            )
        ),
        tools=[UserInputTool(forms=[form])],
    )


def test_a_forms_default_answer_is_submitted_at_the_deadline(backend: Backend) -> None:
    # GIVEN a booking form for the front desk, filled in by default at the deadline
    default = {"topic": "Standing slot", "attendees": 2}
    form = FormDefinition(
        "meeting_room_booking",
        "book a room",
        MEETING_SCHEMA,
        approvers=Approvers(groups=("desk",), deadline_after=HOUR, at_deadline=AtDeadline.answer(default)),
    )
    agent = _form_agent(form)
    runner = backend.runner([agent])
    waiting = runner.run(agent, "requester/c", "book a room", metadata={"ownerId": "requester"})
    assert waiting.status is TurnStatus.WAITING_FOR_USER

    # WHEN the deadline passes THEN the form is submitted with the default, by the deadline, and the model reads it
    backend.clock.advance(HOUR + 1)
    [resumed] = runner.expire_overdue()
    card = backend.memory("requester/c").get_message(f"{waiting.id}:input:call-f")
    assert isinstance(card, FormMessage)
    assert card.status is FormStatus.SUBMITTED and card.submitted_by == DEADLINE_SUBJECT
    assert card.people is not None and card.people.waiting_for == "answered by deadline (answer)"
    done = runner.run_turn(resumed.id)
    assert done.status is TurnStatus.COMPLETED and "Standing slot" in (done.final_output or "")
    [record] = runner.audit(waiting.id)
    assert (record.subject, record.source, record.outcome) == (DEADLINE_SUBJECT, DecisionSource.DEADLINE, "SUBMITTED")


def test_an_answer_racing_the_default_answer_has_exactly_one_winner(backend: Backend) -> None:
    # GIVEN refunds waiting for finance, rejected by default at the deadline
    approvers = Approvers(groups=("finance",), deadline_after=HOUR, at_deadline=AtDeadline.reject("nobody answered"))
    agent = refund_agent([], approvers)
    runner = backend.runner([agent])
    won = {"person": 0, "deadline": 0}
    for round_ in range(ROUNDS):
        conversation = f"requester/race-{round_}"
        waiting = _start(runner, agent, conversation)
        people = waiting.suspensions[0].people
        assert people is not None and people.deadline_at is not None
        # WHEN finance's approval (its clock just before the deadline) and the sweeper (just after) race
        approver = Runner(backend.store, backend.memory, [agent], clock=FixedClock(people.deadline_at - 0.5))
        sweeper = Runner(backend.store, backend.memory, [agent], clock=FixedClock(people.deadline_at + 0.5))
        answer = race_with_sweeper(
            approver, sweeper, waiting.id, ResumeCommand.approve_tool("call-r").by(ANN), sweeper_first=round_ % 2 == 0
        )
        # THEN exactly one decided the card: the person (APPROVED) or the deadline (REJECTED, the person refused)
        card = _approval(backend, waiting, conversation)
        assert card.people is not None
        deciders = [d.subject for d in card.people.decisions]
        if not isinstance(answer, InvalidResumeError):
            assert card.status is ApprovalStatus.APPROVED and deciders == ["ann"], (round_, card)
            won["person"] += 1
        else:
            assert card.status is ApprovalStatus.REJECTED and deciders == [DEADLINE_SUBJECT], (round_, card)
            assert answer.reason in (RefusalReason.ACTION_NOT_PENDING, RefusalReason.NOT_WAITING), answer
            won["deadline"] += 1
        assert len(runner.audit(waiting.id)) == 1
    assert won["person"] + won["deadline"] == ROUNDS
    print(f"\n{ROUNDS} rounds on {backend.name}: {won}")


def test_approvals_by_the_group_escalated_away_from_stop_counting_unless_also_in_the_new_one(
    backend: Backend,
) -> None:
    # GIVEN a refund waiting for three approvals of finance, escalating to managers after 4 h
    refunds: list[dict[str, Any]] = []
    approvers = Approvers(groups=("finance",), quorum=3, escalate_after=4 * HOUR, escalate_to="managers")
    agent = refund_agent(refunds, approvers)
    runner = backend.runner([agent])
    waiting = _start(runner, agent)
    # AND two approvals of finance before the escalation: ann (finance only), carl (finance and managers)
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(ANN))
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(CARL))
    people = _approval(backend, waiting).people
    assert people is not None and people.waiting_for == "waiting for finance (2 of 3)"

    # WHEN the card escalates THEN only carl's approval counts (he may answer it now); ann's stays on record
    backend.clock.advance(4 * HOUR + 1)
    runner.expire_overdue()
    people = _approval(backend, waiting).people
    assert people is not None and people.waiting_for == "waiting for managers (1 of 3)"
    assert [d.subject for d in people.decisions] == ["ann", "carl"]
    assert [d.subject for d in people.counted()] == ["carl"]

    # WHEN carl tries again THEN refused (one decision a person); two managers approve THEN it settles at the third
    with pytest.raises(InvalidResumeError) as again:
        runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(CARL))
    assert again.value.reason is RefusalReason.ALREADY_DECIDED
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(BOSS))
    assert _approval(backend, waiting).status is ApprovalStatus.PENDING
    runner.submit_resume(waiting.id, ResumeCommand.approve_tool("call-r").by(DANA))
    card = _approval(backend, waiting)
    assert card.status is ApprovalStatus.APPROVED
    assert card.people is not None and [d.subject for d in card.people.decisions] == ["ann", "carl", "bob", "dana"]
    # AND every decision has its audit record, ann's included
    assert [r.subject for r in runner.audit(waiting.id)] == ["ann", "carl", "bob", "dana"]
    assert runner.run_turn(waiting.id).status is TurnStatus.COMPLETED and len(refunds) == 1
