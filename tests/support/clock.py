"""An injected clock: time moves only when a test says so (plus a microsecond per reading, for ordering)."""

from __future__ import annotations

import threading


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            # Each reading is distinct so that timestamps taken in sequence sort in sequence.
            self._now += 1e-6
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
