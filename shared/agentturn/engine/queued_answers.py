"""Answers to PENDING cards of a turn that is running (``resume_after="each"``): kept, then applied once.

Under ``resume_after="each"`` an answer makes the turn run (the approved call runs at once) while its other
cards still wait. An answer to one of those cards is not refused for it: the submit checks it as if the turn
waited (:func:`preview`), the store keeps it beside the turn (``TurnStore.queue_answer``, no new version, so
the running worker's writes go on), and its card shows it by compare-and-set before the submit returns. The
run that holds the turn cannot then save it waiting, or ended, without taking the queued answers (the store
refuses with ``AnswersQueuedError``): it applies them (:func:`take_queued`) in the same save, as of the time
each was accepted, so each answer is applied exactly once, by the one write that removes it.
"""

from __future__ import annotations

import logging

from agentturn.engine.clock import iso
from agentturn.engine.idempotency import KEPT_DIGITS, remember_request
from agentturn.engine.redaction import REDACT_VALUES, redact_card
from agentturn.engine.resume import apply_resume
from agentturn.errors import IdempotencyConflictError, InvalidResumeError, RefusalReason
from agentturn.state.commands import ResumeCommand
from agentturn.state.messages import CardMessage, form_message_id
from agentturn.state.turn import QueuedAnswer, Turn
from agentturn.timeline.projection import full_mark

_log = logging.getLogger("agentturn.engine.runner")


def answered(turn: Turn, command: ResumeCommand, now: float) -> Turn:
    """A copy of the waiting ``turn`` with ``command`` applied as the submit applies it: the answer, the
    redaction of a model-requested form under ``redact_submitted_values``, and the idempotency record."""
    resumed = apply_resume(turn, command, now)
    waited = turn.suspension_for(command.action_id)
    if waited is not None and waited.input_target == "MODEL" and waited.metadata.get(REDACT_VALUES):
        # A model-requested form is complete once submitted: its data lives on only in the tool result.
        redact_card(resumed, form_message_id(turn.id, waited.correlation_id))
    # An approver's request id is theirs alone: another person's same key is not a replay of it.
    answerer = command.answerer
    by = answerer.subject if waited is not None and waited.people is not None and answerer else None
    remember_request(resumed, command, iso(now), by=by)
    return resumed


def pending_card(turn: Turn, action_id: str | None) -> CardMessage | None:
    """The PENDING card of ``action_id`` whose wait is still open in ``turn``."""
    if action_id is None or turn.suspension_for(action_id) is None:
        return None
    return next((c for c in turn.cards if c.action_id == action_id and c.status.value == "PENDING"), None)


def can_queue(turn: Turn, command: ResumeCommand) -> bool:
    """``command`` answers a card still PENDING on a turn that is running (a wait parked without a card, not
    yet shown to anyone, cannot be answered)."""
    return turn.status.is_runnable and pending_card(turn, command.action_id) is not None


def _as_waiting(turn: Turn) -> Turn:
    """``turn`` as if it waited on its open decisions (the rules of a waiting turn decide the answer)."""
    if not turn.status.is_runnable or not turn.suspensions:
        return turn
    waiting = turn.model_copy()
    waiting.status = turn.suspensions[0].waiting_status
    return waiting


def preview(turn: Turn, command: ResumeCommand, now: float) -> Turn:
    """What ``command`` makes of the running ``turn`` as if it waited: refused (and validated) as for a waiting
    turn; the caller keeps the card it shows, and queues the command."""
    if any(q.command.action_id == command.action_id for q in turn.queued_answers):
        raise InvalidResumeError(
            f"action {command.action_id!r} of turn {turn.id!r} is answered already (its answer is queued)",
            reason=RefusalReason.ACTION_NOT_PENDING,
        )
    return answered(_as_waiting(turn), command, now)


def queued_replay(turn: Turn, command: ResumeCommand) -> QueuedAnswer | None:
    """The queued answer ``command`` repeats (same request id, same request); a different request under the same
    id is refused (``IdempotencyConflictError``), as for an applied one."""
    request_id = command.request_id
    if request_id is None:
        return None
    for queued in turn.queued_answers:
        if queued.command.request_id == request_id:
            if queued.command.fingerprint()[:KEPT_DIGITS] != command.fingerprint()[:KEPT_DIGITS]:
                raise IdempotencyConflictError(turn.id, request_id)
            return queued
    return None


def take_queued(turn: Turn, answers: list[QueuedAnswer]) -> Turn:
    """A copy of ``turn`` (about to be saved waiting, or ended) that took ``answers`` (every answer the store
    holds beside it, oldest first; the first ``turn.answers_taken`` of them it took already).

    A turn that goes on applies each (as of when it was accepted); an ended turn, or one its rules refuse now
    (a cancel requested meanwhile), drops it with a log line, and the card its submit showed SUBMITTED moves one
    version further, so that the timeline shows what the snapshot says of it (CANCELLED, once the turn ends).
    The copy's next save removes exactly these answers (``answers_taken``).
    """
    recorded = turn.projection == full_mark(turn)
    current = turn
    refused: set[str | None] = set()
    # ``answers`` is all the store holds: those an earlier round of this save took are applied already.
    for answer in answers[turn.answers_taken :]:
        if current.status.is_terminal:
            refused.add(answer.command.action_id)
            continue
        try:
            current = answered(_as_waiting(current), answer.command, answer.accepted_at)
        except InvalidResumeError as exc:
            refused.add(answer.command.action_id)
            _log.warning("turn %r: a queued answer was not applied: %s", turn.id, exc)
    if refused:
        # The submit showed SUBMITTED on these cards at the next version: one version further, whatever the
        # snapshot says of them (CANCELLED, or PENDING until the cancel that refused them) reaches the timeline.
        current = current.model_copy(
            update={
                "cards": [
                    c.model_copy(update={"version": c.version + 1}) if c.action_id in refused else c
                    for c in current.cards
                ]
            }
        )
    current.answers_taken = len(answers)
    if recorded:
        # The save that carries these answers also projects them: its record says so.
        current.projection = full_mark(current)
    return current
