"""The Worker: claims a runnable turn with a lease and runs it. The SQS worker Lambda calls exactly this."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum

from agentturn.errors import TurnNotFoundError
from agentturn.runner import Runner, YieldProbe
from agentturn.state import Turn


class WorkOutcome(StrEnum):
    ADVANCED = "ADVANCED"
    #: blocked, terminal or already advanced by an earlier delivery: nothing to do
    NOT_RUNNABLE = "NOT_RUNNABLE"
    #: another worker holds a live lease
    LEASE_HELD = "LEASE_HELD"
    NOT_FOUND = "NOT_FOUND"


@dataclass(frozen=True)
class WorkResult:
    outcome: WorkOutcome
    turn: Turn | None

    @property
    def needs_more_work(self) -> bool:
        """The run yielded (time budget) with the turn still runnable: hand it on again."""
        return self.turn is not None and self.outcome is WorkOutcome.ADVANCED and self.turn.status.is_runnable


class Worker:
    def __init__(self, runner: Runner, *, worker_id: str | None = None, lease_seconds: float | None = None) -> None:
        self.runner = runner
        self.worker_id = worker_id or f"worker-{uuid.uuid4().hex[:8]}"
        self.lease_seconds = lease_seconds if lease_seconds is not None else runner.lease_seconds

    def process(
        self, turn_id: str, *, should_yield: YieldProbe | None = None, projected_version: int | None = None
    ) -> WorkResult:
        """Claim → run until blocked/terminal/yield → release. Duplicates and held leases are no-ops."""
        store = self.runner.store
        # Claim first: the common case (a runnable turn) then costs one conditional write and one read.
        lease = store.claim(turn_id, self.worker_id, self.lease_seconds)
        if lease is None:
            try:
                current = store.load(turn_id)
            except TurnNotFoundError:
                return WorkResult(WorkOutcome.NOT_FOUND, None)
            outcome = WorkOutcome.LEASE_HELD if current.status.is_runnable else WorkOutcome.NOT_RUNNABLE
            return WorkResult(outcome, current)
        turn = self.runner.run_turn(
            turn_id, lease=lease, should_yield=should_yield, turn=lease.turn, projected_version=projected_version
        )
        return WorkResult(WorkOutcome.ADVANCED, turn)
