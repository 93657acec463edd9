"""The Worker: claims a runnable turn with a lease and runs it. The SQS worker Lambda calls exactly this."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum

from agentturn.engine.runner import Runner, YieldProbe
from agentturn.errors import HandoffLostError, SnapshotUnreadableError, TurnNotFoundError
from agentturn.state.turn import Turn, TurnStatus


class WorkOutcome(StrEnum):
    ADVANCED = "ADVANCED"
    #: blocked, terminal or already advanced by an earlier delivery: nothing to do
    NOT_RUNNABLE = "NOT_RUNNABLE"
    #: another worker holds a live lease
    LEASE_HELD = "LEASE_HELD"
    NOT_FOUND = "NOT_FOUND"
    #: runnable, but in the backoff of a failed attempt: the message came early (a duplicate, or the
    #: sweeper's); the one sent with the backoff's delay, or a later sweep, brings it back when due
    NOT_DUE = "NOT_DUE"


@dataclass(frozen=True)
class WorkResult:
    outcome: WorkOutcome
    turn: Turn | None

    @property
    def needs_more_work(self) -> bool:
        """The run stopped with the turn still runnable (out of time, or a retry is due later): hand it on
        again (with :func:`agentturn.engine.retry.handoff_delay`)."""
        return self.turn is not None and self.outcome is WorkOutcome.ADVANCED and self.turn.status.is_runnable


class Worker:
    def __init__(self, runner: Runner, *, worker_id: str | None = None, lease_seconds: float | None = None) -> None:
        self.runner = runner
        self.worker_id = worker_id or f"worker-{uuid.uuid4().hex[:8]}"
        self.lease_seconds = lease_seconds if lease_seconds is not None else runner.lease_seconds

    def process(
        self,
        turn_id: str,
        *,
        should_yield: YieldProbe | None = None,
        snapshot: Turn | None = None,
    ) -> WorkResult:
        """Claim → run until blocked/terminal/yield → release. Duplicates and held leases are no-ops.

        With ``snapshot`` (the one a resume message carried, :mod:`agentturn.engine.handoff`) a runnable, due turn runs
        from it unclaimed, taking the lease only before a tool runs; a duplicate delivery then costs a model call
        and a refused save instead of a refused claim.

        A runnable turn whose snapshot cannot be read raises :class:`SnapshotUnreadableError` (from the claim,
        which then holds no lease): the caller counts the attempt (:meth:`Runner.record_unreadable`).
        """
        store = self.runner.store
        if snapshot is not None and snapshot.status.is_runnable and snapshot.is_due(self.runner.clock()):
            try:
                turn = self.runner.run_turn(
                    turn_id,
                    should_yield=should_yield,
                    turn=snapshot,
                    defer_claim=True,
                )
            except HandoffLostError:
                # Another worker holds the turn, or it moved on since the snapshot: as a refused claim.
                return self._not_taken(turn_id)
            return WorkResult(WorkOutcome.ADVANCED, turn)
        # Claim first: the common case (a runnable turn) then costs one conditional write and one read.
        lease = store.claim(turn_id, self.worker_id, self.lease_seconds)
        if lease is None:
            return self._not_taken(turn_id)
        claimed = lease.turn
        if claimed is not None and not claimed.is_due(self.runner.clock()):
            store.release(lease)
            return WorkResult(WorkOutcome.NOT_DUE, claimed)
        turn = self.runner.run_turn(turn_id, lease=lease, should_yield=should_yield, turn=claimed)
        return WorkResult(WorkOutcome.ADVANCED, turn)

    def _not_taken(self, turn_id: str) -> WorkResult:
        """What a worker that could not take the turn (its claim, or its run from a snapshot, was refused) reports,
        from what is stored."""
        try:
            current = self.runner.store.load(turn_id)
        except TurnNotFoundError:
            return WorkResult(WorkOutcome.NOT_FOUND, None)
        except SnapshotUnreadableError as exc:
            # Not claimable and not readable: ended (FAILED after its attempts), blocked, or held.
            held = exc.status in (TurnStatus.READY.value, TurnStatus.RUNNING.value)
            return WorkResult(WorkOutcome.LEASE_HELD if held else WorkOutcome.NOT_RUNNABLE, None)
        outcome = WorkOutcome.LEASE_HELD if current.status.is_runnable else WorkOutcome.NOT_RUNNABLE
        return WorkResult(outcome, current)
