"""Lease renewal while a step runs: a model call or a tool may take longer than the lease itself.

Between steps the Runner renews the lease itself. During a step its thread is inside the model or the tool,
so a :class:`Heartbeat` thread renews the lease every third of its length until the step ends. One thread
serves every step of a run (started at the first, idle between steps, told to end with the run): starting
a thread costs more CPU than a short step itself.

If a renewal finds the lease taken over, the heartbeat says so (``lost``): the Runner then keeps nothing
of the step and makes no further side effect or write. A renewal that fails for another reason (a
throttled write) is tried again at the next beat: the lease has two more beats of life left by then.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from agentturn._clock import Waiter
from agentturn.errors import LeaseLostError
from agentturn.store import Lease

_log = logging.getLogger("agentturn.heartbeat")

#: Real seconds a step that ends waits for a renewal under way (a renewal is one conditional write).
_SETTLE_SECONDS = 5.0


class Heartbeat:
    def __init__(self, renew: Callable[[Lease], Lease], interval: float, *, wait: Waiter, name: str = "") -> None:
        self._renew = renew
        self._interval = interval
        self._wait = wait
        self._name = name
        self._lock = threading.Lock()
        self._lease: Lease | None = None
        self._lost = False
        #: set while a step runs (the thread beats), or to let the thread end
        self._active = threading.Event()
        #: cuts the thread's wait short: the step ended, or the run did
        self._interrupt = threading.Event()
        #: held while a renewal is in flight: a step that ends waits for it, to know whether the lease is still held
        self._in_flight = threading.Lock()
        self._closed = False
        self._thread: threading.Thread | None = None
        self.renewals = 0

    @property
    def lost(self) -> bool:
        with self._lock:
            return self._lost

    @property
    def lease(self) -> Lease | None:
        """The lease as last renewed."""
        with self._lock:
            return self._lease

    @contextmanager
    def step(self, lease: Lease) -> Iterator[None]:
        """Beat while the body runs."""
        with self._lock:
            self._lease = lease
        self._interrupt.clear()
        self._active.set()
        if self._thread is None:
            self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{self._name}", daemon=True)
            self._thread.start()
        try:
            yield
        finally:
            self._active.clear()
            self._interrupt.set()
            # A renewal under way may be about to find the lease taken over: know before the step's result is
            # kept (bounded: a renewal that hangs longer is treated as not lost; the store's fencing remains).
            if self._in_flight.acquire(timeout=_SETTLE_SECONDS):
                self._in_flight.release()

    def close(self) -> None:
        """End the thread (without waiting for it: a renewal still in flight fails on a released lease)."""
        self._closed = True
        self._interrupt.set()
        self._active.set()

    def _beat(self) -> None:
        while True:
            self._active.wait()
            if self._closed:
                return
            if self._wait(self._interrupt, self._interval) or not self._active.is_set():
                continue  # the step (or the run) ended: wait for the next one
            with self._lock:
                lease = self._lease
            if lease is None:
                continue
            with self._in_flight:
                self._renew_once(lease)

    def _renew_once(self, lease: Lease) -> None:
        try:
            renewed = self._renew(lease)
        except LeaseLostError:
            _log.warning("lease on turn %r was taken over during a step", lease.turn_id)
            with self._lock:
                self._lost = True
            return
        except Exception:
            # Throttled or unreachable: the lease still has two beats of life; try at the next one.
            _log.warning("could not renew the lease on turn %r; retrying", lease.turn_id, exc_info=True)
            return
        with self._lock:
            if self._lease is not None and self._lease.lease_id == renewed.lease_id:
                self._lease = renewed
            self.renewals += 1
