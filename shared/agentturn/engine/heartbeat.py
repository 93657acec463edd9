"""Lease renewal while a step runs: a model call or a tool may take longer than the lease itself.

Between steps the Runner renews the lease itself. During a step its thread is inside the model or the tool,
so a :class:`Heartbeat` renews the lease every third of its length until the step ends. The beating is done
by a :class:`Pacemaker`, one thread per clock shared by every run and step in the process (the handlers make
a Runner per request): starting a thread, or even waking one, costs more CPU than a short step itself (a form
cycle has four steps in two runs). So a step only writes down when its first beat is due; the thread sleeps
until the earliest such time, and is woken only when a step is due before that. A step that ends does not
wake it: the thread finds nothing due when it wakes and sleeps on. After some idle real time the thread
ends, and the next step starts another.

If a renewal finds the lease taken over, the heartbeat says so (``lost``): the Runner then keeps nothing
of the step and makes no further side effect or write. A renewal that fails for another reason (a
throttled write) is tried again at the next beat: the lease has two more beats of life left by then.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from agentturn.engine.clock import Clock, Waiter
from agentturn.errors import LeaseLostError
from agentturn.ports.store import Lease

_log = logging.getLogger("agentturn.engine.heartbeat")

#: Real seconds a step that ends waits for a renewal under way (a renewal is one conditional write).
_SETTLE_SECONDS = 5.0
#: Real seconds the pacemaker's thread stays without any step before it ends.
_IDLE_SECONDS = 30.0


class Pacemaker:
    """The one thread that beats for every step under way on one clock (see :func:`pacemaker`)."""

    def __init__(self, clock: Clock, wait: Waiter, *, idle_seconds: float = _IDLE_SECONDS) -> None:
        self._clock = clock
        self._wait = wait
        self._idle_seconds = idle_seconds
        self._lock = threading.Lock()
        #: the steps under way, with the clock time of their next beat
        self._due: dict[Heartbeat, float] = {}
        #: the time the thread sleeps until (``None``: it is idle or not running)
        self._target: float | None = None
        #: cuts the thread's sleep short: a step is due before the time it sleeps until
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def beat_during(self, heartbeat: Heartbeat) -> None:
        """A step of ``heartbeat`` began: beat for it after its interval."""
        due = self._clock() + heartbeat.interval
        with self._lock:
            self._due[heartbeat] = due
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agentturn-heartbeat", daemon=True)
                self._thread.start()
            elif self._target is None or due < self._target:
                self._wake.set()

    def rest(self, heartbeat: Heartbeat) -> None:
        """The step ended: no more beats for it (the thread is not woken for that)."""
        with self._lock:
            self._due.pop(heartbeat, None)

    def _run(self) -> None:
        try:
            self._beat_until_idle()
        finally:
            # Ended idle, or by an error of the wait: either way the next step starts a thread again.
            with self._lock:
                if self._thread is threading.current_thread():
                    self._thread = None

    def _beat_until_idle(self) -> None:
        while True:
            with self._lock:
                self._wake.clear()
                self._target = min(self._due.values()) if self._due else None
                target = self._target
            if target is None:
                if not self._wake.wait(self._idle_seconds):
                    with self._lock:
                        if not self._due and not self._wake.is_set():
                            self._thread = None
                            return
                continue
            if self._wait(self._wake, max(0.0, target - self._clock())):
                continue  # a step is due earlier than the time slept until
            now = self._clock()
            with self._lock:
                due = [beat for beat, at in self._due.items() if at <= now]
            for beat in due:
                beat.renew_now()
                with self._lock:
                    if beat in self._due:
                        self._due[beat] = self._clock() + beat.interval


_pacemakers: weakref.WeakValueDictionary[tuple[Clock, Waiter], Pacemaker] = weakref.WeakValueDictionary()
_pacemakers_lock = threading.Lock()


def pacemaker(clock: Clock, wait: Waiter) -> Pacemaker:
    """The process's pacemaker for this clock and wait (kept while a Runner or its thread uses it)."""
    with _pacemakers_lock:
        found = _pacemakers.get((clock, wait))
        if found is None:
            found = _pacemakers[(clock, wait)] = Pacemaker(clock, wait)
        return found


class Heartbeat:
    """Renews one run's lease during its steps (beaten by the Runner's :class:`Pacemaker`)."""

    def __init__(
        self, renew: Callable[[Lease], Lease], interval: float, *, pacemaker: Pacemaker, name: str = ""
    ) -> None:
        self._renew = renew
        self.interval = interval
        self._pacemaker = pacemaker
        self._name = name
        self._lock = threading.Lock()
        self._lease: Lease | None = None
        self._lost = False
        #: true while a step runs (a beat renews only then)
        self._active = False
        #: held while a renewal is in flight: a step that ends waits for it, to know whether the lease is still held
        self._in_flight = threading.Lock()
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
            self._active = True
        self._pacemaker.beat_during(self)
        try:
            yield
        finally:
            with self._lock:
                self._active = False
            self._pacemaker.rest(self)
            # A renewal under way may be about to find the lease taken over: know before the step's result is
            # kept (bounded: a renewal that hangs longer is treated as not lost; the store's fencing remains).
            if self._in_flight.acquire(timeout=_SETTLE_SECONDS):
                self._in_flight.release()

    def close(self) -> None:
        """The run ended: no step of it beats any more."""
        with self._lock:
            self._active = False
        self._pacemaker.rest(self)

    def renew_now(self) -> None:
        """One beat (on the pacemaker's thread): renew the lease if a step is still under way."""
        with self._in_flight:
            with self._lock:
                lease = self._lease if self._active else None
            if lease is not None:
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
