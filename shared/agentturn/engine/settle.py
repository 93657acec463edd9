"""Ending or unblocking a turn from outside its run: a cancel, an expired wait, an unfinished cancel."""

from __future__ import annotations

from collections.abc import Callable

from agentturn.engine.clock import Clock
from agentturn.engine.conflicts import TryAgain, retry_on_conflict
from agentturn.engine.deadline import default_answer, due_deadline
from agentturn.engine.events import EventType
from agentturn.engine.reminders import due_people
from agentturn.engine.resume import expire_wait
from agentturn.engine.sequencer import EventSequencer
from agentturn.engine.turn_run import Run
from agentturn.engine.turn_writer import TurnWriter
from agentturn.errors import FormValidationError, InvalidResumeError
from agentturn.ports.store import Lease, TurnStore
from agentturn.state.approvers import AtDeadline, DeadlineAction
from agentturn.state.commands import ResumeCommand
from agentturn.state.turn import Suspension, SuspensionType, Turn, TurnStatus


class Settler:
    def __init__(
        self,
        store: TurnStore,
        clock: Clock,
        claim: Callable[[str], Lease | None],
        writer: TurnWriter,
        events: EventSequencer,
        answer: Callable[[str, ResumeCommand], Turn],
    ) -> None:
        self._store = store
        self._clock = clock
        self._claim = claim
        self._writer = writer
        self._events = events
        #: how a person's answer is submitted (``Runner.submit_resume``): the deadline's default answer takes it too
        self._answer = answer

    def cancel(self, turn_id: str) -> Turn:
        """See :meth:`Runner.cancel`."""

        def attempt() -> Turn:
            turn = self._store.load(turn_id)
            if turn.status.is_terminal:
                return turn
            lease: Lease | None = None
            if turn.status.is_runnable:
                if not turn.cancel_requested:
                    self._store.request_cancel(turn_id)
                lease = self._claim(turn_id)
                if lease is None:
                    # A worker holds it and stops at its next step, unless it blocked the turn meanwhile:
                    # then the turn is ours to finish (next round).
                    current = self._store.load(turn_id)
                    if current.status.is_blocked:
                        raise TryAgain
                    return current
                turn = lease.turn if lease.turn is not None else self._store.load(turn_id)
            turn.cancel_requested = True
            run = Run(turn=turn, agent=None, lease=lease)
            try:
                self._writer.finish(run, TurnStatus.CANCELLED)
            finally:
                if run.lease is not None:
                    self._store.release(run.lease)
            return run.turn

        return retry_on_conflict(turn_id, attempt)

    def settle(self, turn_id: str, *, expire_waits: bool) -> Turn:
        """See :meth:`Runner.expire`; without ``expire_waits`` only an unfinished cancel is acted on."""

        def attempt() -> Turn:
            turn = self._store.load(turn_id)
            if not turn.status.is_blocked or not turn.suspensions:
                return turn
            run = Run(turn=turn, agent=None, lease=None)
            if turn.cancel_requested:
                self._writer.finish(run, TurnStatus.CANCELLED)
                return run.turn
            now = self._clock()
            expired = [s for s in turn.suspensions if s.is_expired(now)]
            if not expired and (due := due_deadline(turn, now)) is not None:
                return self._at_deadline(run, *due)
            if not expired:
                # Reminders and escalations (engine.reminders): one conditional write; a racing answer's
                # write makes this one fail, and the next round re-reads the turn it left.
                updated, notices = due_people(turn, now)
                if notices:
                    run.turn = updated
                    self._writer.save(run)
                    for notice in notices:
                        self._events.emit(
                            run.turn,
                            notice.type,
                            actionId=notice.action_id,
                            approvers=notice.approvers.inbox_keys(),
                            **({"escalatedFrom": notice.escalated_from.inbox_keys()} if notice.escalated_from else {}),
                        )
                    return run.turn
            if not expire_waits or not expired:
                return turn
            if any(s.on_expiry == "cancel" or not _answerable(s) for s in expired):
                self._writer.finish(run, TurnStatus.CANCELLED, "input_expired", "nobody answered in time")
                return run.turn
            run.turn = expire_wait(turn, now)
            self._writer.save(run)
            if run.turn.status.is_runnable:
                self._events.emit(
                    run.turn,
                    EventType.TURN_RESUMED,
                    actionId=expired[0].correlation_id,
                    kind="EXPIRED",
                    actionIds=[s.correlation_id for s in expired],
                )
            return run.turn

        return retry_on_conflict(turn_id, attempt)

    def _at_deadline(self, run: Run, suspension: Suspension, at: AtDeadline) -> Turn:
        """Cancel the turn, or give the wait's default answer (engine.deadline); an escalation at the deadline is
        done with the other escalations."""
        turn = run.turn
        if at.action is DeadlineAction.CANCEL:
            why = f"nobody settled {suspension.correlation_id!r} by its deadline"
            self._writer.finish(run, TurnStatus.CANCELLED, "deadline_passed", why)
            return run.turn
        try:
            return self._answer(turn.id, default_answer(suspension, at))
        except InvalidResumeError:
            # A person's answer (or a cancel) was saved first: the deadline has nothing left to decide.
            return self._store.load(turn.id)
        except FormValidationError:
            # Checked when the form was defined; a default the frozen schema refuses now is never applied.
            why = f"the default answer of {suspension.correlation_id!r} does not fit its form"
            self._writer.finish(run, TurnStatus.CANCELLED, "deadline_answer_invalid", why)
            return run.turn


def _answerable(suspension: Suspension) -> bool:
    """A form or an approval has a call whose result can say "expired"; a plain-text wait has none."""
    return suspension.is_form or suspension.type is SuspensionType.TOOL_APPROVAL
