"""An injected clock: time moves only when a test says so (plus a microsecond per reading, for ordering)."""

from __future__ import annotations

import threading

#: Real seconds a waiter re-checks its stop flag (it is woken at once by ``advance``; this only bounds how
#: long a stopped waiter lingers).
_RECHECK = 0.01


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._changed = threading.Condition()
        self._waiting = 0

    def __call__(self) -> float:
        with self._changed:
            # Each reading is distinct so that timestamps taken in sequence sort in sequence.
            self._now += 1e-6
            return self._now

    def advance(self, seconds: float) -> None:
        with self._changed:
            self._now += seconds
            self._changed.notify_all()

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        """The Runner's ``wait`` in this clock's time: returns once ``advance`` has moved it ``seconds`` on
        (``False``), or once ``stop`` is set (``True``)."""
        with self._changed:
            until = self._now + seconds
            self._waiting += 1
            self._changed.notify_all()
            try:
                while self._now < until:
                    if stop.is_set():
                        return True
                    self._changed.wait(_RECHECK)
                return stop.is_set()
            finally:
                self._waiting -= 1

    def await_waiter(self, timeout: float) -> None:
        """Block (at most ``timeout`` real seconds) until some thread waits on this clock: a test moving time
        on for a waiter must not do it before the waiter has started counting."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._waiting > 0, timeout):
                raise TimeoutError("nobody started waiting on the clock in time")
