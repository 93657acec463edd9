"""Bounded attempts with exponential backoff for runs that failed for a reason that may pass.

A throttled or failing model, or an agent version this process does not have (a deployment rolling out),
may work a little later; a turn is therefore kept runnable with a not-before time in its snapshot
(:class:`agentturn.state.turn.RetryState`) and tried again, at most ``max_attempts`` times in a row, before it
ends FAILED. Delays are deterministic per turn and attempt (equal jitter from a hash, not a random draw), so
a test can predict them and a crowd of turns throttled together still spreads out.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Final

from agentturn.state.turn import Turn

#: SQS refuses a longer per-message delay; a longer backoff is still respected (see ``Worker.process``).
MAX_QUEUE_DELAY_SECONDS: Final = 900


@dataclass(frozen=True)
class RetryPolicy:
    #: attempts in a row (the first included) before the turn ends FAILED
    max_attempts: int = 5
    #: delay before the second attempt; each further one doubles it
    base_delay: float = 2.0
    #: no delay is longer (a provider's own ``retry_after`` is capped by it too)
    max_delay: float = 300.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be >= 1, not {self.max_attempts!r}")
        if not 0 < self.base_delay <= self.max_delay:
            raise ValueError("RetryPolicy needs 0 < base_delay <= max_delay")

    def delay(self, turn_id: str, attempt: int, at_least: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based): exponential, equal jitter."""
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        fraction = zlib.crc32(f"{turn_id}:{attempt}".encode()) / 0xFFFFFFFF
        delay = ceiling * (0.5 + fraction / 2)
        if at_least is not None:
            delay = max(delay, at_least)
        return min(delay, self.max_delay)


def handoff_delay(turn: Turn, now: float) -> int:
    """Whole seconds a resume message for ``turn`` should wait in the queue (0: deliver at once)."""
    not_before = turn.retry.not_before if turn.retry is not None else None
    if not_before is None or not_before <= now:
        return 0
    return min(MAX_QUEUE_DELAY_SECONDS, math.ceil(not_before - now))
