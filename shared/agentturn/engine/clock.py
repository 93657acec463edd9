"""Time as the runtime sees it: an injectable clock of epoch seconds, shown as ISO-8601 UTC."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], float]
#: ``wait(stop, seconds)``: block until ``stop`` is set (``True``) or ``seconds`` of the same time as the
#: clock's have passed (``False``). Tests pair a fake clock with a wait that its ``advance`` releases.
Waiter = Callable[[threading.Event, float], bool]


def real_wait(stop: threading.Event, seconds: float) -> bool:
    return stop.wait(seconds)


def iso(epoch_seconds: float) -> str:
    return datetime.fromtimestamp(epoch_seconds, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
