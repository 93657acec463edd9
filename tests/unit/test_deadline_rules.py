"""The pure rules of a wait's own deadline and of the quorum across an escalation: what is refused when the wait
is defined, and which decisions count."""

from __future__ import annotations

from typing import Any

import pytest

from agentturn import Approvers, AtDeadline, FormDefinition, ToolApprovalDecision
from agentturn.state.approvers import Decision, DecisionSource, Principal, Verdict, counted, waiting_for

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"topic": {"type": "string"}, "attendees": {"type": "integer", "minimum": 1}},
    "required": ["topic", "attendees"],
}


def _form(at: AtDeadline) -> FormDefinition:
    approvers = Approvers(groups=("desk",), deadline_after=60, at_deadline=at)
    return FormDefinition("booking", "book a room", SCHEMA, approvers=approvers)


def test_a_forms_default_answer_is_checked_against_its_schema_when_the_form_is_defined() -> None:
    # GIVEN defaults that the schema accepts, and ones it refuses
    assert _form(AtDeadline.answer({"topic": "x", "attendees": 1})).approvers is not None
    # WHEN the default misses a field or breaks a bound THEN the form is refused, naming the field
    with pytest.raises(ValueError, match="/attendees"):
        _form(AtDeadline.answer({"topic": "x", "attendees": 0}))
    with pytest.raises(ValueError, match="does not fit the form"):
        _form(AtDeadline.answer({"topic": "x"}))
    # AND a verdict is no answer to a form; cancel and escalate are
    with pytest.raises(ValueError, match=r"AtDeadline\.answer"):
        _form(AtDeadline.approve())
    assert _form(AtDeadline.cancel()).approvers is not None
    assert _form(AtDeadline.escalate("managers")).approvers is not None


def test_an_approvals_default_answer_is_a_verdict() -> None:
    approve = Approvers(groups=("finance",), deadline_after=60, at_deadline=AtDeadline.approve())
    assert ToolApprovalDecision.require_approval("ok?", approvers=approve).approvers == approve
    data = Approvers(groups=("finance",), deadline_after=60, at_deadline=AtDeadline.answer({"x": 1}))
    with pytest.raises(ValueError, match=r"approve\(\) or AtDeadline\.reject"):
        ToolApprovalDecision.require_approval("ok?", approvers=data)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"deadline_after": 60}, "go together"),
        ({"at_deadline": AtDeadline.cancel()}, "go together"),
        ({"deadline_after": 0, "at_deadline": AtDeadline.cancel()}, "must be > 0"),
        ({"deadline_after": 60, "at_deadline": AtDeadline.cancel(), "remind_after": 60}, "before deadline_after"),
        (
            {"deadline_after": 60, "at_deadline": AtDeadline.cancel(), "escalate_after": 90, "escalate_to": "m"},
            "before deadline_after",
        ),
    ],
)
def test_a_deadline_that_could_not_work_is_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Approvers(groups=("finance",), **kwargs)


@pytest.mark.parametrize(
    "build",
    [
        lambda: AtDeadline(action="answer"),
        lambda: AtDeadline(action="escalate"),
        lambda: AtDeadline(action="cancel", to="managers"),
        lambda: AtDeadline(action="approve", reason="because"),
        lambda: AtDeadline.escalate(" managers"),
    ],
)
def test_an_at_deadline_missing_or_mixing_its_parts_is_refused(build: Any) -> None:
    with pytest.raises(ValueError, match="AtDeadline"):
        build()


def _decision(subject: str, groups: list[str], also_in: tuple[str, ...] = ()) -> Decision:
    return Decision(subject=subject, groups=groups, also_in=list(also_in), verdict=Verdict.APPROVE, at="t")


def test_only_decisions_of_people_who_may_answer_now_count() -> None:
    # GIVEN approvals made for finance: ann (finance only), carl (also in managers), and the card now with managers
    before = Approvers(groups=("finance",), quorum=3, escalate_after=60, escalate_to="managers")
    now = before.escalated()
    decisions = [_decision("ann", ["finance"]), _decision("carl", ["finance"], ["managers"])]
    # THEN before the escalation both count; after it only carl's, and the wording says so
    assert [d.subject for d in counted(before, None, decisions)] == ["ann", "carl"]
    assert [d.subject for d in counted(now, None, decisions)] == ["carl"]
    assert waiting_for(now, decisions) == "waiting for managers (1 of 3)"
    # AND a user named on the card counts while named; the requester never counts where excluded
    named = Approvers(users=("ann", "zed"), quorum=2, exclude_requester=True)
    assert [d.subject for d in counted(named, "zed", [_decision("ann", []), _decision("zed", [])])] == ["ann"]
    # AND the deadline's decision is the deadline's, counted as made
    by_deadline = Decision(subject="agentturn:deadline", verdict=Verdict.REJECT, at="t", source=DecisionSource.DEADLINE)
    assert counted(now, None, [by_deadline]) == [by_deadline]
    assert waiting_for(now, [*decisions, by_deadline]) == "answered by deadline (reject)"


def test_a_decision_keeps_only_the_groups_the_card_may_move_to() -> None:
    approvers = Approvers(
        groups=("finance",),
        escalate_after=60,
        escalate_to="managers",
        deadline_after=120,
        at_deadline=AtDeadline.escalate("directors"),
    )
    assert approvers.later_groups() == {"managers", "directors"}
    person = Principal("p", frozenset({"finance", "managers", "golf-club"}))
    assert sorted(person.groups & approvers.later_groups()) == ["managers"]
