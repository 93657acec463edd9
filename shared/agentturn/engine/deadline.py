"""A wait's own deadline (``Approvers.deadline_after`` and ``at_deadline``): what falls due, and the deadline's
default answer.

Pure. The sweeper finds a wait whose deadline passed through the overdue index (``ports.store.wait_deadline``
keys on the earliest of a wait's times, the deadline among them), and then (``engine.settle``):

- ``AtDeadline.cancel()``: the turn ends CANCELLED, by one conditional write;
- ``AtDeadline.escalate(group)``: the card moves to the group (``engine.reminders``, as an escalation does);
- a default answer: :func:`default_answer` is submitted through ``Runner.submit_resume``, the path a person's
  answer takes, so it is applied by compare-and-set on the turn's version, resumes the turn the same way and
  writes the same audit record. Its answerer is :data:`~agentturn.state.approvers.DEADLINE_SUBJECT`, which
  :func:`deadline_decision` admits only as that wait's own default answer once its deadline has passed: a token
  that claimed the name could do nothing the deadline would not do itself.

An answer racing the deadline: both are conditional writes on the turn's version, so exactly one settles the
card; the other re-reads and finds it settled (the person gets "not pending"; the deadline does nothing).
"""

from __future__ import annotations

from typing import Final

from agentturn.engine.clock import iso
from agentturn.state.approvers import (
    DEADLINE_SUBJECT,
    AtDeadline,
    DeadlineAction,
    Decision,
    DecisionSource,
    Principal,
    Verdict,
)
from agentturn.state.commands import ResumeCommand
from agentturn.state.turn import Suspension, Turn

#: The deadline as the answerer of its default answer.
DEADLINE: Final = Principal(DEADLINE_SUBJECT)
#: The idempotency key of a deadline's answer to the wait ``<action id>``: a retried sweep replays it.
REQUEST_PREFIX: Final = "deadline:"

_VERDICTS: Final = {
    DeadlineAction.APPROVE: Verdict.APPROVE,
    DeadlineAction.REJECT: Verdict.REJECT,
    DeadlineAction.ANSWER: Verdict.ANSWER,
}


def shown_deadline(suspension: Suspension) -> str | None:
    """The deadline a card shows (and the inbox orders by): the earliest of the agent's input timeout and the
    wait's own deadline still ahead, as ISO-8601 UTC; ``None`` when neither is set."""
    people = suspension.people
    times = [t for t in (suspension.expires_at, people.deadline_at if people is not None else None) if t is not None]
    return iso(min(times)) if times else None


def due_deadline(turn: Turn, now: float) -> tuple[Suspension, AtDeadline] | None:
    """The first wait whose deadline has passed and that the deadline cancels or answers (an escalation at the
    deadline is ``engine.reminders``' business), with what it does."""
    for suspension in turn.suspensions:
        people = suspension.people
        if people is None or not people.deadline_due(now):
            continue
        at = people.approvers.at_deadline
        if at is not None and at.action is not DeadlineAction.ESCALATE:
            return suspension, at
    return None


def default_answer(suspension: Suspension, at: AtDeadline) -> ResumeCommand:
    """The deadline's answer to ``suspension``, as a person's command, given by :data:`DEADLINE`."""
    call_id = suspension.correlation_id
    if at.action is DeadlineAction.APPROVE:
        command = ResumeCommand.approve_tool(call_id)
    elif at.action is DeadlineAction.REJECT:
        command = ResumeCommand.reject_tool(call_id, at.reason)
    elif at.action is DeadlineAction.ANSWER and at.data is not None:
        command = ResumeCommand.submit_form(call_id, at.data)
    else:
        raise ValueError(f"{at.action.value!r} at the deadline is no answer")
    return command.by(DEADLINE).with_metadata("requestId", REQUEST_PREFIX + call_id)


def is_by_deadline(command: ResumeCommand) -> bool:
    answerer = command.answerer
    return answerer is not None and answerer.subject == DEADLINE_SUBJECT


def deadline_decision(suspension: Suspension, command: ResumeCommand, now: float, now_iso: str) -> Decision | None:
    """The deadline's decision when ``command`` is exactly the wait's default answer and its deadline has passed;
    ``None`` otherwise (the caller refuses it as it refuses anyone the wait does not admit)."""
    people = suspension.people
    at = people.approvers.at_deadline if people is not None else None
    if people is None or at is None or not at.is_default_answer or not people.deadline_due(now):
        return None
    if command.fingerprint() != default_answer(suspension, at).fingerprint():
        return None
    return Decision(
        subject=DEADLINE_SUBJECT,
        verdict=_VERDICTS[at.action],
        at=now_iso,
        reason=at.reason,
        source=DecisionSource.DEADLINE,
    )
