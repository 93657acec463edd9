"""The ResumeQueue port: hands a runnable turn to a worker. At-least-once; workers make duplicates harmless."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Protocol, TypeGuard, runtime_checkable

from pydantic import Field, model_validator

from agentturn.engine.handoff import MAX_SNAPSHOT_CHARS
from agentturn.state.wire import WireModel


class ResumeMessage(WireModel):
    turn_id: str = Field(min_length=1, max_length=128)
    version: int = Field(ge=0)
    #: The snapshot the sender saved as ``version``, packed (:mod:`agentturn.engine.handoff`): the worker starts from it
    #: without a claim. Absent: the worker claims the turn and reads it.
    snapshot: str | None = Field(default=None, max_length=MAX_SNAPSHOT_CHARS)
    #: The snapshot's seal (:func:`agentturn.engine.handoff.seal`): a worker runs from the snapshot only if it
    #: checks.
    seal: str | None = Field(default=None, pattern="^[0-9a-f]{64}$")

    @model_validator(mode="before")
    @classmethod
    def _earlier_receipt(cls, data: Any) -> Any:
        """A message sent by an earlier release may carry ``projected``, which nothing reads any more: a deploy
        must not dead-letter what is in flight."""
        if isinstance(data, dict) and "projected" in data:
            return {k: v for k, v in data.items() if k != "projected"}
        return data


@runtime_checkable
class ResumeQueue(Protocol):
    """Hands turns to workers.

    A queue whose messages can carry a snapshot says so with a true ``carries_snapshots`` attribute and takes
    ``snapshot=`` on :meth:`enqueue`; senders pass it to no other queue (one written before it keeps working).
    """

    def enqueue(self, turn_id: str, version: int, *, delay_seconds: int = 0) -> None:
        """Hand the turn to a worker; with ``delay_seconds``, not before that (a backoff, best effort)."""
        ...


class SnapshotCarryingQueue(Protocol):
    """A ResumeQueue whose messages can carry the snapshot their sender saved."""

    carries_snapshots: bool

    def enqueue(
        self,
        turn_id: str,
        version: int,
        *,
        delay_seconds: int = 0,
        snapshot: str | None = None,
        seal: str | None = None,
    ) -> None: ...


def carries_snapshots(queue: ResumeQueue) -> TypeGuard[SnapshotCarryingQueue]:
    """Whether ``queue``'s messages can carry the snapshot their sender saved."""
    return getattr(queue, "carries_snapshots", False) is True


class InMemoryResumeQueue:
    carries_snapshots = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: deque[ResumeMessage] = deque()
        #: The delay asked for each message sent, in order (this queue delivers at once: drain decides).
        self.delays: list[int] = []

    def enqueue(
        self,
        turn_id: str,
        version: int,
        *,
        delay_seconds: int = 0,
        snapshot: str | None = None,
        seal: str | None = None,
    ) -> None:
        message = ResumeMessage(turn_id=turn_id, version=version, snapshot=snapshot, seal=seal)
        with self._lock:
            self._messages.append(message)
            self.delays.append(delay_seconds)

    def drain(self) -> list[ResumeMessage]:
        with self._lock:
            drained = list(self._messages)
            self._messages.clear()
            return drained

    def __len__(self) -> int:
        with self._lock:
            return len(self._messages)
