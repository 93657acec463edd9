"""Answers from people beyond the owner: who may answer a wait, and a decision that waits for others.

Pure, like :mod:`agentturn.engine.resume`, which calls it before it changes anything: a wait frozen with
approvers (``Suspension.people``) admits only the people they name (:func:`admit`), each once; a decision that
leaves the quorum unmet is recorded on the wait and its card while the turn keeps waiting (:func:`hold`); the
decision that meets it is recorded and then applied as any answer is.
"""

from __future__ import annotations

from agentturn.engine.deadline import deadline_decision, is_by_deadline
from agentturn.errors import FormValidationError, InvalidResumeError, RefusalReason
from agentturn.state.approvers import (
    Assignment,
    Decision,
    DecisionSource,
    Verdict,
    approvals,
    permitting_groups,
    rejections,
)
from agentturn.state.commands import ResumeCommand, ResumeKind
from agentturn.state.turn import Suspension, Turn

_VERDICTS = {
    ResumeKind.APPROVE_TOOL: Verdict.APPROVE,
    ResumeKind.REJECT_TOOL: Verdict.REJECT,
    ResumeKind.DECLINE_INPUT: Verdict.REJECT,
    ResumeKind.FORM_INPUT: Verdict.ANSWER,
    ResumeKind.RESPOND_TOOL: Verdict.ANSWER,
}


def not_found(turn: Turn, action_id: str | None) -> InvalidResumeError:
    """The refusal of a caller who may not answer: worded as for an action that does not exist, so that it says
    nothing about the action (the HTTP layer answers both with the same 404)."""
    return InvalidResumeError(f"turn {turn.id!r} has no action {action_id!r}", reason=RefusalReason.NOT_PERMITTED)


def may_answer(suspension: Suspension, command: ResumeCommand) -> list[str] | None:
    """The groups that let ``command``'s answerer answer ``suspension`` (``[]``: named as a user); ``None``
    when they may not. A wait without approvers admits whoever reached it (the owner's check is the caller's)."""
    people = suspension.people
    if people is None:
        return []
    principal = command.answerer
    if principal is None:
        return None
    return permitting_groups(people.approvers, people.requested_by, principal)


def admit(turn: Turn, suspension: Suspension, command: ResumeCommand, now: float, now_iso: str) -> Decision | None:
    """The decision ``command`` records on a wait with approvers (``None`` for a wait without); raises when its
    answerer may not answer it, has decided on it already, or gives an answer a quorum cannot share."""
    people = suspension.people
    if people is None:
        return None
    if is_by_deadline(command):
        # The deadline's default answer (engine.deadline): admitted only as the wait's own, once it is due.
        decision = deadline_decision(suspension, command, now, now_iso)
        if decision is None:
            raise not_found(turn, command.action_id)
        return decision
    groups = may_answer(suspension, command)
    principal = command.answerer
    if groups is None or principal is None:
        raise not_found(turn, command.action_id)
    if people.deadline_due(now):
        # Past the wait's own deadline a person's answer is late (told only to those the card admits), as past the
        # agent's input timeout, even before the sweeper acted: what happens now is Approvers.at_deadline's.
        raise InvalidResumeError(
            f"the deadline of action {suspension.correlation_id!r} of turn {turn.id!r} has passed",
            reason=RefusalReason.INPUT_EXPIRED,
        )
    if people.decided_by(principal.subject) is not None:
        raise InvalidResumeError(
            f"{principal.subject!r} already decided on action {suspension.correlation_id!r} of turn {turn.id!r}",
            reason=RefusalReason.ALREADY_DECIDED,
        )
    verdict = _VERDICTS.get(command.kind)
    if verdict is None:
        raise InvalidResumeError(
            f"action {suspension.correlation_id!r} of turn {turn.id!r} takes no {command.kind.value}",
            reason=RefusalReason.WRONG_COMMAND,
        )
    shown = suspension.arguments_fingerprint
    if command.arguments_fingerprint is not None and command.arguments_fingerprint != shown:
        raise InvalidResumeError(
            f"action {suspension.correlation_id!r} of turn {turn.id!r} shows other arguments than the ones this "
            f"answer was given for (fingerprint {command.arguments_fingerprint!r}, the card's is {shown!r})",
            reason=RefusalReason.ARGUMENTS_CHANGED,
        )
    if people.approvers.quorum > 1:
        # Several people approve one call: each must approve the same arguments, and none answers alone.
        if verdict is Verdict.ANSWER:
            raise InvalidResumeError(
                f"action {suspension.correlation_id!r} of turn {turn.id!r} waits for {people.approvers.quorum} "
                "approvals: approve or reject it",
                reason=RefusalReason.WRONG_COMMAND,
            )
        if command.arguments is not None and command.arguments != suspension.arguments:
            raise FormValidationError(
                [{"path": "/arguments", "message": "a call several people approve runs with its arguments as shown"}]
            )
    # Kept for the quorum rule after an escalation (state.approvers.counted): only the groups the card may move to.
    also_in = sorted(principal.groups.intersection(people.approvers.later_groups()).difference(groups))
    return Decision(
        subject=principal.subject, groups=groups, verdict=verdict, at=now_iso, reason=command.reason, also_in=also_in
    )


def decides(people: Assignment, decision: Decision) -> bool:
    """Whether ``decision``, added to those before it, settles the wait: by the decisions that count now
    (``state.approvers.counted``, the quorum rule); a decision by the deadline settles it alone."""
    if decision.source is DecisionSource.DEADLINE:
        return True
    after = people.model_copy(update={"decisions": [*people.decisions, decision]}).counted()
    if decision.verdict is Verdict.APPROVE:
        return approvals(after) >= people.approvers.quorum
    if decision.verdict is Verdict.REJECT:
        return rejections(after) >= people.approvers.rejections
    return True


def record(turn: Turn, suspension: Suspension, decision: Decision, *, bump: bool) -> None:
    """Add ``decision`` to the wait (in ``turn.suspensions``) and its pending card; ``bump`` the card's version
    when nothing else will (a decision that leaves the wait open)."""
    assert suspension.people is not None
    people = suspension.people.with_decision(decision)
    turn.suspensions = [
        s.model_copy(update={"people": people}) if s.correlation_id == suspension.correlation_id else s
        for s in turn.suspensions
    ]
    for index, card in enumerate(turn.cards):
        if card.action_id == suspension.correlation_id and card.status == "PENDING":
            update: dict[str, object] = {"people": people}
            if bump:
                update["version"] = card.version + 1
            turn.cards[index] = card.model_copy(update=update)
