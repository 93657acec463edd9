"""Counting attempts on a turn whose stored snapshot cannot be read, until it ends FAILED."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from agentturn.agents.agent import ExecutionPolicy
from agentturn.engine.clock import Clock
from agentturn.engine.conversation_lock import stored_status
from agentturn.engine.events import EventType
from agentturn.engine.retry import RetryPolicy
from agentturn.engine.sequencer import EventSequencer
from agentturn.errors import SnapshotUnreadableError
from agentturn.ports.memory import ChatMemory
from agentturn.ports.store import SNAPSHOT_UNREADABLE, TurnStore
from agentturn.state.turn import TurnStatus

_log = logging.getLogger("agentturn.engine.runner")


@dataclass(frozen=True)
class UnreadableAttempt:
    """What :meth:`Runner.record_unreadable` did with a turn whose snapshot cannot be read."""

    turn_id: str
    #: this attempt was written (``False``: not due yet, already ended, or someone else counted it first)
    counted: bool
    #: the turn ended FAILED with this attempt
    failed: bool
    #: seconds until the next attempt is due (hand the turn on with this delay); 0 when there is none
    retry_in: float = 0.0


def record_unreadable(
    error: SnapshotUnreadableError,
    *,
    at_once: bool,
    store: TurnStore,
    retry: RetryPolicy,
    clock: Clock,
    events: EventSequencer,
    memory: Callable[[str], ChatMemory | None],
) -> UnreadableAttempt:
    """See :meth:`Runner.record_unreadable`. Nothing here reads the body: the store counts and ends the turn
    on the item's own attributes."""
    turn_id, now = error.turn_id, clock()
    status = stored_status(error)
    if status is None or status.is_terminal:
        return UnreadableAttempt(turn_id, counted=False, failed=status is TurnStatus.FAILED)
    if not at_once and error.not_before is not None and error.not_before > now:
        # A duplicate message or an early sweep: the attempt that set this backoff handed the turn on.
        return UnreadableAttempt(turn_id, counted=False, failed=False, retry_in=error.not_before - now)
    attempt = error.attempts + 1
    _log.error("turn %r cannot be read (attempt %d of %d): %s", turn_id, attempt, retry.max_attempts, error)
    if attempt < retry.max_attempts and not at_once:
        delay = retry.delay(turn_id, attempt)
        counted = store.mark_unreadable(
            turn_id, version=error.version, attempts=attempt, fail=False, not_before=now + delay
        )
        if counted:
            events.emit_for(
                turn_id,
                0,
                EventType.RETRY_SCHEDULED,
                reason=SNAPSHOT_UNREADABLE,
                attempt=attempt,
                maxAttempts=retry.max_attempts,
                delaySeconds=round(delay, 3),
                error=error.detail,
            )
        return UnreadableAttempt(turn_id, counted=counted, failed=False, retry_in=delay if counted else 0.0)
    # The agent's own retention is in the body that cannot be read: the default policy's applies.
    retention = ExecutionPolicy().retention
    ended = store.mark_unreadable(
        turn_id,
        version=error.version,
        attempts=attempt,
        fail=True,
        message=f"{error} (gave up after {attempt} attempts)",
        retain_until=now + retention if retention is not None else None,
    )
    if not ended:
        return UnreadableAttempt(turn_id, counted=False, failed=False)
    # Told first: should letting go of the conversation fail, the next start in it still takes over (it
    # finds this turn ended), but nothing would tell the alarm about this one again.
    events.emit_for(
        turn_id,
        0,
        EventType.TURN_FAILED,
        conversation_id=error.conversation_id,
        status=TurnStatus.FAILED.value,
        error=SNAPSHOT_UNREADABLE,
    )
    conversation = memory(error.conversation_id) if error.conversation_id else None
    if conversation is not None:
        # Its timeline cannot be made whole from a body nobody can read: the conversation is let go as is.
        conversation.set_active_turn(None, expected=turn_id)
    return UnreadableAttempt(turn_id, counted=True, failed=True)
