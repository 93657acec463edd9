"""Lease renewal while a step runs: a model call or a tool may take longer than the lease itself.

Between steps the Runner renews the lease itself. During a step its thread is inside the model or the tool,
so a :class:`Heartbeat` thread renews the lease every third of its length, and stops when the step ends.
If a renewal finds the lease taken over, the heartbeat stops and says so (``lost``): the Runner then keeps
nothing of the step and makes no further side effect or write. A renewal that fails for another reason (a
throttled write) is tried again at the next beat: the lease has two more beats of life left by then.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from types import TracebackType

from agentturn._clock import Clock, Waiter
from agentturn.errors import LeaseLostError
from agentturn.store import Lease

_log = logging.getLogger("agentturn.heartbeat")

#: How long the step's thread waits for the heartbeat thread to notice it should stop (real seconds).
_JOIN_SECONDS = 5.0


class Heartbeat:
    def __init__(
        self, lease: Lease, renew: Callable[[Lease], Lease], interval: float, *, clock: Clock, wait: Waiter
    ) -> None:
        self._lease = lease
        self._renew = renew
        self._interval = interval
        self._clock = clock
        self._wait = wait
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._lost = False
        self.renewals = 0
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{lease.turn_id[:12]}", daemon=True)

    @property
    def lease(self) -> Lease:
        """The lease as last renewed."""
        with self._lock:
            return self._lease

    @property
    def lost(self) -> bool:
        with self._lock:
            return self._lost

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(_JOIN_SECONDS)

    def _beat(self) -> None:
        # Beats are timed from when the previous one fired, not from when this thread got round to waiting
        # again: a slow renewal (or a slow thread) does not push the next one later.
        due = self._clock() + self._interval
        while not self._wait(self._stop, max(0.0, due - self._clock())):
            due = self._clock() + self._interval
            try:
                renewed = self._renew(self.lease)
            except LeaseLostError:
                _log.warning("lease on turn %r was taken over during a step", self._lease.turn_id)
                with self._lock:
                    self._lost = True
                return
            except Exception:
                # Throttled or unreachable: the lease still has two beats of life; try at the next one.
                _log.warning("could not renew the lease on turn %r; retrying", self._lease.turn_id, exc_info=True)
                continue
            with self._lock:
                self._lease = renewed
                self.renewals += 1
