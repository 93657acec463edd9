"""Keeping a run's lease: renewed between steps, and by a heartbeat while a step runs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from agentturn.engine.clock import Clock, Waiter
from agentturn.engine.heartbeat import Heartbeat, pacemaker
from agentturn.engine.turn_run import LeaseGone, Run
from agentturn.errors import LeaseLostError
from agentturn.ports.store import Lease, TurnStore


class LeaseKeeper:
    def __init__(
        self,
        store: TurnStore,
        clock: Clock,
        lease_seconds: float,
        wait: Waiter,
        claim: Callable[[str], Lease | None],
    ) -> None:
        self._store = store
        self._clock = clock
        self._lease_seconds = lease_seconds
        self._claim = claim
        #: one thread beats for every step on this clock in the process (started at the first step)
        self._pacemaker = pacemaker(clock, wait)

    def claim_deferred(self, run: Run) -> bool:
        """Before a tool of a run that started unclaimed runs: take the lease, or raise ``LeaseGone``. ``False``
        when the claimed turn carries a cancel request the run's copy did not (the flag is copied onto it: the
        run then ends the turn CANCELLED instead of running the tool).

        The claim fences every other holder of the same snapshot (a duplicate delivery of its message): of two,
        one claims, and the other finds the lease live, or finds the turn at another version once it is let go
        (then what it holds is stale, and it stops without keeping anything).
        """
        if not run.claim_deferred:
            return True
        lease = self._claim(run.turn.id)
        if lease is None:
            raise LeaseGone
        claimed = lease.turn if lease.turn is not None else self._store.load(run.turn.id)
        if claimed.version != run.turn.version:
            self._store.release(lease)
            raise LeaseGone
        run.lease = lease
        run.claim_deferred = False
        if claimed.cancel_requested and not run.turn.cancel_requested:
            run.turn.cancel_requested = True
            return False
        return True

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
