"""Keeping a run's lease: renewed between steps, and by a heartbeat while a step runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from agentturn._clock import Clock, Waiter
from agentturn.errors import LeaseLostError
from agentturn.heartbeat import Heartbeat, pacemaker
from agentturn.store import TurnStore
from agentturn.turn_run import LeaseGone, Run


class LeaseKeeper:
    def __init__(self, store: TurnStore, clock: Clock, lease_seconds: float, wait: Waiter) -> None:
        self._store = store
        self._clock = clock
        self._lease_seconds = lease_seconds
        #: one thread beats for every step on this clock in the process (started at the first step)
        self._pacemaker = pacemaker(clock, wait)

    def renew(self, run: Run) -> None:
        """Between steps: renew a lease past half its life; raise ``LeaseGone`` if it was taken over."""
        lease = run.lease
        if lease is None:
            return
        if lease.expires_at - self._clock() < self._lease_seconds / 2:
            try:
                run.lease = self._store.renew(lease, self._lease_seconds)
            except LeaseLostError as exc:
                run.lease = None
                raise LeaseGone from exc

    @contextmanager
    def heartbeat(self, run: Run) -> Iterator[None]:
        """Keep the run's lease alive while the body (a model call, a tool) runs; raise ``LeaseGone`` after
        it if the lease was taken over meanwhile, so that nothing the step produced is kept or acted on."""
        lease = run.lease
        if lease is None:
            yield
            return
        if run.heartbeat is None:
            run.heartbeat = Heartbeat(
                lambda held: self._store.renew(held, self._lease_seconds),
                self._lease_seconds / 3,
                pacemaker=self._pacemaker,
                name=lease.turn_id[:12],
            )
        beat = run.heartbeat
        try:
            with beat.step(lease):
                yield
        finally:
            run.lease = None if beat.lost else beat.lease
        if beat.lost:
            raise LeaseGone
