"""The ResumeQueue port: hands a runnable turn to a worker. At-least-once; workers make duplicates harmless."""

from __future__ import annotations

import threading
from collections import deque
from typing import Protocol, runtime_checkable

from pydantic import Field

from agentturn._wire import WireModel


class ResumeMessage(WireModel):
    turn_id: str = Field(min_length=1, max_length=128)
    version: int = Field(ge=0)
    #: The sender saw the timeline hold all of snapshot ``version``: a worker that finds that very version
    #: need not verify the projection again (a receipt; without it the worker checks, as after a crash).
    projected: bool = False


@runtime_checkable
class ResumeQueue(Protocol):
    def enqueue(self, turn_id: str, version: int, *, projected: bool = False, delay_seconds: int = 0) -> None:
        """Hand the turn to a worker; with ``delay_seconds``, not before that (a backoff, best effort)."""
        ...


class InMemoryResumeQueue:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: deque[ResumeMessage] = deque()
        #: The delay asked for each message sent, in order (this queue delivers at once: drain decides).
        self.delays: list[int] = []

    def enqueue(self, turn_id: str, version: int, *, projected: bool = False, delay_seconds: int = 0) -> None:
        with self._lock:
            self._messages.append(ResumeMessage(turn_id=turn_id, version=version, projected=projected))
            self.delays.append(delay_seconds)

    def drain(self) -> list[ResumeMessage]:
        with self._lock:
            drained = list(self._messages)
            self._messages.clear()
            return drained

    def __len__(self) -> int:
        with self._lock:
            return len(self._messages)
