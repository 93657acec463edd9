"""Every write of a running turn: save (fenced by the lease), project, end, or put off after a failure."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

from agentturn.agents.registry import AgentRegistry
from agentturn.engine.clock import Clock, iso
from agentturn.engine.events import EventType
from agentturn.engine.redaction import forget_at_end, redact_card, redacts
from agentturn.engine.resume import cancel_cards
from agentturn.engine.retry import RetryPolicy
from agentturn.engine.sequencer import EventSequencer
from agentturn.engine.turn_run import LeaseGone, Run, agent_of, policy_of
from agentturn.errors import (
    AnswersQueuedError,
    LeaseLostError,
    StorageError,
    UnknownAgentError,
    VersionConflictError,
)
from agentturn.ports.memory import ChatMemory
from agentturn.ports.store import Lease, TurnStore
from agentturn.state.messages import ApprovalMessage, FormMessage
from agentturn.state.turn import ProjectionMark, RetryState, Turn, TurnErrorInfo, TurnPhase, TurnStatus
from agentturn.timeline.projection import changes_cards, full_mark, project, record

# redact_card lived here before agentturn.engine.redaction: callers may still import it from this module.
__all__ = ["MemoryFor", "TurnWriter", "forget_projected_values", "redact_card"]

_log = logging.getLogger("agentturn.engine.runner")

#: Saves a write tries while answers keep being queued beside its turn (each round takes all it was told of).
TAKE_ROUNDS = 20

MemoryFor = Callable[[str], ChatMemory | None]

_TERMINAL_EVENTS = {
    TurnStatus.COMPLETED: EventType.TURN_COMPLETED,
    TurnStatus.CANCELLED: EventType.TURN_CANCELLED,
}


class TurnWriter:
    def __init__(
        self,
        store: TurnStore,
        clock: Clock,
        events: EventSequencer,
        memory: MemoryFor,
        agents: AgentRegistry,
        retry: RetryPolicy,
    ) -> None:
        self._store = store
        self._clock = clock
        self._events = events
        # A provider, not a memory: the runner's chat memory may be replaced after it was made.
        self._memory = memory
        self._agents = agents
        self._retry = retry

    def write(self, turn: Turn, *, lease: Lease | None, announce: bool = True) -> Turn:
        """Save ``turn`` if it is still at its version (and ``lease`` still holds it); the saved copy. The
        caller projects it (:meth:`project`); ``announce=False``: the caller emits SNAPSHOT_SAVED once it has
        (:meth:`announce`), so that a page reading the timeline on the notice finds what the save added."""
        turn.updated_at = iso(self._clock())
        self._events.reserve(turn)
        taken: list[str] = []
        for _ in range(TAKE_ROUNDS):
            try:
                saved = self._store.save(
                    turn, expected_version=turn.version, lease_id=lease.lease_id if lease is not None else None
                )
                break
            except AnswersQueuedError as exc:
                # Answers came for its other cards while it ran (resume_after="each"): it takes them in this save.
                from agentturn.engine.queued_answers import take_queued

                turn = take_queued(turn, exc.answers)
                taken = [a.command.action_id or "" for a in exc.answers]
        else:
            raise VersionConflictError(turn.id, turn.version)
        if announce:
            self.announce(saved, projected=False)
        if taken and not saved.status.is_terminal:
            pending = [s.correlation_id for s in saved.suspensions]
            self._events.emit(saved, EventType.INPUT_SUBMITTED, actionIds=taken, pending=pending, queued=True)
            if saved.status.is_runnable:
                self._events.emit(saved, EventType.TURN_RESUMED, actionIds=taken, queued=True)
        return saved

    def write_and_project(self, turn: Turn, *, lease: Lease | None, strict: bool = False) -> Turn:
        """:meth:`write` with the record of its projection, then the projection (see :meth:`project`)."""
        forget_projected_values(turn)
        since = record(turn)
        saved = self.write(turn, lease=lease, announce=False)
        try:
            whole = self.project(saved, since=since, strict=strict)
        except Exception:
            self.announce(saved, projected=False)
            raise
        self.announce(saved, projected=whole and since != full_mark(saved))
        return saved

    def announce(self, saved: Turn, *, projected: bool) -> None:
        """SNAPSHOT_SAVED for ``saved``, after its projection: ``projected`` says whether it added entries to the
        timeline (the live feed tells a page to read it only then, or when the status changed)."""
        self._events.emit(
            saved, EventType.SNAPSHOT_SAVED, version=saved.version, status=saved.status.value, projected=projected
        )

    def save(self, run: Run, *, project_later: bool = False) -> None:
        """Write the run's turn under its lease, then project it; ``LeaseGone`` if the lease was lost.

        ``project_later``: a save between two steps of a turn that stays runnable here, and that changes no card,
        leaves its projection to the run's next save (or to :meth:`settle_projection` when the run stops first),
        so that the new messages of several steps reach the timeline in one batch.
        """
        forget_projected_values(run.turn)
        later = project_later and run.turn.status.is_runnable and not changes_cards(run.turn)
        since = run.turn.projection if later else record(run.turn)
        try:
            run.turn = self.write(run.turn, lease=run.lease, announce=False)
            run.unsaved = False
        except LeaseLostError as exc:
            run.lease = None
            raise LeaseGone from exc
        if not run.turn.status.is_runnable:
            run.lease = None  # the store ended the lease with this write
        if later:
            run.projection_owed = True
            self.announce(run.turn, projected=False)
            return
        run.projection_owed = False
        saved = run.turn
        whole = self.project(saved, since=since)
        # Told once the timeline holds what the save added (a page reads it on the notice), not before.
        self.announce(saved, projected=whole and since != full_mark(saved))
        if not whole and not run.turn.status.is_runnable:
            run.turn = self._save_record(run.turn)

    def _save_record(self, turn: Turn) -> Turn:
        """Save a blocked or ended turn again with the record its failed projection left (see :meth:`project`):
        no later save of this process would carry it, and the next writer (a submit, a start taking over) then
        writes what is missing. Only on a failure; a refusal leaves the repair to the next read."""
        try:
            return self.write(turn, lease=None)
        except (VersionConflictError, StorageError) as exc:
            _log.warning("turn %r: the record of its failed projection was not saved: %s", turn.id, exc)
            return turn

    def settle_projection(self, run: Run) -> None:
        """Project what the run's last save left to a next save that did not come (the run stopped). Its record
        was not saved: the turn's next save writes these messages again (an append of what is there is a no-op)."""
        if run.projection_owed:
            run.projection_owed = False
            self.project(run.turn, since=run.turn.projection)

    def project(self, turn: Turn, *, since: ProjectionMark, strict: bool = False) -> bool:
        """Write what ``turn`` holds beyond the record ``since``; whether the timeline now holds all of it.

        A failure leaves the saved record ahead of the timeline: ``turn`` (this process's copy) gets ``since``
        back, so that its next save writes the difference again; without one, a read of the timeline repairs it.
        ``strict``: raise the failure instead (a decision must not return before its card shows it).
        """
        memory = self._memory(turn.conversation_id)
        if memory is None:
            return True
        try:
            project(turn, memory, since=since)
        except Exception as exc:
            turn.projection = since
            if strict:
                raise
            _log.warning("projection of turn %r failed: %s", turn.id, exc)
            self._events.emit(turn, EventType.PROJECTION_FAILED, error=f"{type(exc).__name__}: {exc}")
            return False
        return True

    def finish(self, run: Run, status: TurnStatus, error_type: str | None = None, message: str = "") -> None:
        """End the turn with ``status``: cards cancelled, form data dropped (and, redacting, the answered cards'
        values: :mod:`agentturn.engine.redaction`), conversation let go."""
        turn = run.turn
        policy = policy_of(run, self._agents)
        redact = redacts(turn, policy)  # before the waits go: their frozen terms count
        kept = [
            (call.name, copy.deepcopy(state.round_state))
            for call in turn.pending_tool_calls
            if (state := turn.tool_states.get(call.id)) is not None and state.round_state is not None
        ]
        turn.status = status
        turn.phase = TurnPhase.FINISHED
        turn.suspension = None
        if error_type is not None:
            turn.error = TurnErrorInfo(type=error_type, message=message)
        cancel_cards(turn)
        forget_at_end(turn, redact=redact)
        retention = policy.retention
        turn.retain_until = self._clock() + retention if retention is not None else None
        self.save(run)
        self._abandon(run, kept)
        memory = self._memory(turn.conversation_id)
        if memory is not None and not run.projection_owed and run.turn.projection == full_mark(run.turn):
            # Let go of the conversation only once its timeline is whole: a turn still named there is
            # repaired by whoever comes next (the next turn's start, or a read of the timeline).
            memory.set_active_turn(None, expected=turn.id)
        event = _TERMINAL_EVENTS.get(status, EventType.TURN_FAILED)
        self._events.emit(run.turn, event, status=status.value, error=error_type)

    def _abandon(self, run: Run, kept: list[tuple[str, dict[str, Any]]]) -> None:
        """Calls that kept state when the turn ended: their tools let go of outside work (after the save: a turn
        that lost its write race is not ended, and its work goes on). Best effort: the turn's end stands."""
        if not kept:
            return
        try:
            tools = agent_of(run, self._agents).tools
        except UnknownAgentError:
            return
        for name, state in kept:
            tool = tools.get(name)
            if tool is None:
                continue
            try:
                tool.abandon(state)
            except Exception:  # the team's code or a server: the turn has ended whatever it does
                _log.warning("tool %r of turn %r could not let go of its work", name, run.turn.id, exc_info=True)

    def retry_later(
        self, run: Run, reason: str, message: str, *, at_least: float | None = None, exhausted: str | None = None
    ) -> None:
        """Save the turn runnable, due after a backoff; after the last allowed attempt, end it FAILED."""
        turn = run.turn
        attempt = (turn.retry.attempts if turn.retry is not None else 0) + 1
        if attempt >= self._retry.max_attempts:
            self.finish(run, TurnStatus.FAILED, exhausted or reason, f"{message} (gave up after {attempt} attempts)")
            return
        delay = self._retry.delay(turn.id, attempt, at_least)
        turn.retry = RetryState(attempts=attempt, reason=reason, error=message, not_before=self._clock() + delay)
        turn.status = TurnStatus.RUNNING
        self.save(run)
        self._events.emit(
            run.turn,
            EventType.RETRY_SCHEDULED,
            reason=reason,
            attempt=attempt,
            maxAttempts=self._retry.max_attempts,
            delaySeconds=round(delay, 3),
            error=message,
        )

    def retry_later_now(self, run: Run, reason: str, error: BaseException) -> Turn:
        """:meth:`retry_later` outside the loop: under the run's lease, released after."""
        try:
            self.retry_later(run, reason, f"{type(error).__name__}: {error}")
        except (LeaseGone, VersionConflictError):
            return self._store.load(run.turn.id)
        finally:
            if run.lease is not None:
                self._store.release(run.lease)
                run.lease = None
        return run.turn


def forget_projected_values(turn: Turn) -> None:
    """Invariant 8 for the snapshot's copy of answered cards: once the record says that the timeline holds a
    final card at its version (the answer's own save wrote it there before it returned), the snapshot keeps no
    copy of the values. A card whose tool still holds the data keeps them until that tool completes."""
    kept: list[FormMessage | ApprovalMessage] = []
    for card in turn.cards:
        recorded = turn.projection.cards.get(card.message_id) == card.version
        state = turn.tool_states.get(card.action_id)
        done = state is None or state.submitted_form_data is None
        if isinstance(card, FormMessage) and card.status != "PENDING" and recorded and done and card.submitted_values:
            kept.append(card.model_copy(update={"submitted_values": None}))
        else:
            kept.append(card)
    turn.cards = kept
