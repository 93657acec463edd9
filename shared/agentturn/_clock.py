"""Time as the runtime sees it: an injectable clock of epoch seconds, shown as ISO-8601 UTC."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], float]


def iso(epoch_seconds: float) -> str:
    return datetime.fromtimestamp(epoch_seconds, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
