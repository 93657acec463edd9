"""Reminders and escalations of a wait with approvers, acted on by the sweeper when they fall due.

Pure: :func:`due_people` returns the turn with what fell due applied (the reminder marked sent, or the card
moved to ``Approvers.escalate_to``) and what to tell; the caller saves it with the turn's version as the
condition, so an answer racing a reminder or an escalation is decided by compare-and-set: exactly one write
wins, the other is re-read and tried again (an answer then meets the escalated card and the 404 of outsiders).

No per-turn timer: each wait's next due time is part of the key of the sweeper's overdue index
(``ports.store.wait_deadline``), which a write re-keys on what is due next.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentturn.engine.clock import iso
from agentturn.engine.deadline import shown_deadline
from agentturn.engine.events import EventType
from agentturn.state.approvers import Approvers, Assignment, DeadlineAction, waiting_for
from agentturn.state.turn import Turn


@dataclass(frozen=True)
class PeopleNotice:
    """One thing to tell: a reminder or an escalation of the wait ``action_id``."""

    type: EventType
    action_id: str
    approvers: Approvers
    escalated_from: Approvers | None = None


def due_people(turn: Turn, now: float) -> tuple[Turn, list[PeopleNotice]]:
    """``turn`` with each due reminder and escalation of its waits applied (a copy; the same turn when none is
    due), and the notices they make. An escalation due at the same sweep as a reminder supersedes it; so does an
    escalation at the deadline (``AtDeadline.escalate``), which also supersedes an earlier escalation not yet made.
    """
    notices: list[PeopleNotice] = []
    changed: dict[str, Assignment] = {}
    for suspension in turn.suspensions:
        people = suspension.people
        if people is None:
            continue
        at = people.approvers.at_deadline
        to_at_deadline = at.to if at is not None and at.action is DeadlineAction.ESCALATE else None
        deadline = people.deadline_due(now) and to_at_deadline is not None
        if deadline or (people.escalate_at is not None and now >= people.escalate_at):
            moved = people.approvers.escalated(to_at_deadline if deadline else None)
            update: dict[str, object] = {
                "approvers": moved,
                "escalated_from": people.approvers,
                "escalated_at": iso(now),
                "escalate_at": None,
                "remind_at": None,
                "waiting_for": waiting_for(moved, people.decisions, people.requested_by),
            }
            if deadline:
                update.update({"deadline_at": None, "deadline_passed_at": iso(now)})
            people = people.model_copy(update=update)
            notices.append(
                PeopleNotice(EventType.TURN_ESCALATED, suspension.correlation_id, moved, people.escalated_from)
            )
        elif people.remind_at is not None and now >= people.remind_at:
            people = people.model_copy(update={"remind_at": None, "reminded_at": iso(now)})
            notices.append(PeopleNotice(EventType.TURN_REMINDER, suspension.correlation_id, people.approvers))
        else:
            continue
        changed[suspension.correlation_id] = people
    if not changed:
        return turn, []
    updated = turn.model_copy(deep=True)
    updated.suspensions = [
        s.model_copy(update={"people": changed[s.correlation_id]}) if s.correlation_id in changed else s
        for s in updated.suspensions
    ]
    waits = {s.correlation_id: s for s in updated.suspensions}
    for index, card in enumerate(updated.cards):
        if card.action_id in changed and card.status == "PENDING":
            # A new card version: the projection rewrites the card, and with it its entries in the inbox index
            # (an escalated card leaves the earlier approvers' inboxes and enters the new group's; one escalated at
            # its deadline shows the deadline left, if any).
            shown = shown_deadline(waits[card.action_id])
            updated.cards[index] = card.model_copy(
                update={"people": changed[card.action_id], "version": card.version + 1, "expires_at": shown}
            )
    return updated, notices
