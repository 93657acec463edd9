"""A TurnStore that passes every call to another one: subclass it and override only what a test intercepts
(a throttled save, a counted renewal), so that a new port method reaches every such double at once."""

from __future__ import annotations

from agentturn.ports.store import Lease, RunnableTurn, TurnStore
from agentturn.state.turn import QueuedAnswer, Turn


class DelegatingTurnStore:
    def __init__(self, inner: TurnStore) -> None:
        self.inner = inner

    def create(self, turn: Turn, *, lease: Lease | None = None) -> Turn:
        return self.inner.create(turn, lease=lease)

    def load(self, turn_id: str) -> Turn:
        return self.inner.load(turn_id)

    def save(self, turn: Turn, *, expected_version: int, lease_id: str | None = None) -> Turn:
        return self.inner.save(turn, expected_version=expected_version, lease_id=lease_id)

    def claim(self, turn_id: str, worker_id: str, lease_seconds: float) -> Lease | None:
        return self.inner.claim(turn_id, worker_id, lease_seconds)

    def renew(self, lease: Lease, lease_seconds: float) -> Lease:
        return self.inner.renew(lease, lease_seconds)

    def release(self, lease: Lease) -> bool:
        return self.inner.release(lease)

    def request_cancel(self, turn_id: str) -> None:
        self.inner.request_cancel(turn_id)

    def queue_answer(self, turn_id: str, answer: QueuedAnswer) -> None:
        self.inner.queue_answer(turn_id, answer)

    def find_runnable(self, *, idle_seconds: float, limit: int = 100) -> list[RunnableTurn]:
        return self.inner.find_runnable(idle_seconds=idle_seconds, limit=limit)

    def find_overdue(self, *, limit: int = 100) -> list[RunnableTurn]:
        return self.inner.find_overdue(limit=limit)

    def delete(self, turn_id: str, *, expected_version: int) -> None:
        self.inner.delete(turn_id, expected_version=expected_version)

    def mark_unreadable(
        self,
        turn_id: str,
        *,
        version: int,
        attempts: int,
        fail: bool,
        not_before: float | None = None,
        message: str = "",
        retain_until: float | None = None,
    ) -> bool:
        return self.inner.mark_unreadable(
            turn_id,
            version=version,
            attempts=attempts,
            fail=fail,
            not_before=not_before,
            message=message,
            retain_until=retain_until,
        )
