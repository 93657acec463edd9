"""A seeded fault injector around the persistence ports: TurnStore, ChatMemory (per conversation) and ResumeQueue.

Before each write-like call the plan draws whether this call fails and when:

* ``before``: the call raises without reaching storage (a lost connection);
* ``after``: the write is applied, then the caller sees an error (the ambiguous case: a timeout on the
  response of a request that succeeded).

The error is ``StorageUnavailableError``, what an adapter raises at the port for a lost connection (it
translates boto3's ``EndpointConnectionError``), so the code under test handles it exactly as it would a real
one. The plan is a pure function of its seed and the call sequence.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from agentturn.errors import StorageUnavailableError
from agentturn.ports.memory import ChatMemory, ChatMemoryProvider
from agentturn.ports.queue import ResumeQueue
from agentturn.ports.store import Lease, RunnableTurn, TurnStore
from agentturn.state.turn import QueuedAnswer, Turn
from tests.support.clock import FakeClock


class InjectedFault(StorageUnavailableError):
    def __init__(self, operation: str, when: str) -> None:
        super().__init__(f"{operation} failed: EndpointConnectionError: fault-injector/{operation}/{when}")
        self.operation, self.when = operation, when


class FaultPlan:
    def __init__(
        self, seed: int, *, rate: float = 0.2, max_faults: int = 4, clock: FakeClock | None = None, lease: float = 60
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.rate = rate
        self.max_faults = max_faults
        self.clock = clock
        self.lease = lease
        self.enabled = True
        self.fired: Counter[tuple[str, str]] = Counter()
        self.calls: Counter[str] = Counter()
        self.log: list[str] = []

    def call(self, operation: str, action: Callable[[], Any]) -> Any:
        self.calls[operation] += 1
        if self.clock is not None and self.enabled and self.rng.random() < 0.1:
            # Time passes inside a step now and then: leases come close to expiry, so renewals happen.
            self.clock.advance(self.lease * 0.6)
        fault = self.enabled and len(self.log) < self.max_faults and self.rng.random() < self.rate
        when = self.rng.choice(("before", "after")) if fault else ""
        if when == "before":
            self._fire(operation, when)
        result = action()
        if when == "after":
            self._fire(operation, when)
        return result

    def _fire(self, operation: str, when: str) -> None:
        self.fired[(operation, when)] += 1
        self.log.append(f"{operation}:{when}")
        raise InjectedFault(operation, when)


class FaultyStore:
    """A TurnStore whose writes (and claims, renewals, releases) go through the plan; reads never fail."""

    def __init__(self, inner: TurnStore, plan: FaultPlan) -> None:
        self.inner, self.plan = inner, plan

    def create(self, turn: Turn, **options: Any) -> Turn:
        # ``options`` (e.g. a lease to create the turn with) pass through as the port defines them.
        return self.plan.call("store.create", lambda: self.inner.create(turn, **options))  # type: ignore[no-any-return]

    def load(self, turn_id: str) -> Turn:
        return self.inner.load(turn_id)

    def save(self, turn: Turn, *, expected_version: int, lease_id: str | None = None) -> Turn:
        return self.plan.call(  # type: ignore[no-any-return]
            "store.save", lambda: self.inner.save(turn, expected_version=expected_version, lease_id=lease_id)
        )

    def claim(self, turn_id: str, worker_id: str, lease_seconds: float) -> Lease | None:
        return self.plan.call("store.claim", lambda: self.inner.claim(turn_id, worker_id, lease_seconds))  # type: ignore[no-any-return]

    def renew(self, lease: Lease, lease_seconds: float) -> Lease:
        return self.plan.call("store.renew", lambda: self.inner.renew(lease, lease_seconds))  # type: ignore[no-any-return]

    def release(self, lease: Lease) -> bool:
        return self.plan.call("store.release", lambda: self.inner.release(lease))  # type: ignore[no-any-return]

    def request_cancel(self, turn_id: str) -> None:
        self.plan.call("store.request_cancel", lambda: self.inner.request_cancel(turn_id))

    def queue_answer(self, turn_id: str, answer: QueuedAnswer) -> None:
        self.plan.call("store.queue_answer", lambda: self.inner.queue_answer(turn_id, answer))

    def find_runnable(self, *, idle_seconds: float, limit: int = 100) -> list[RunnableTurn]:
        return self.inner.find_runnable(idle_seconds=idle_seconds, limit=limit)

    def find_overdue(self, *, limit: int = 100) -> list[RunnableTurn]:
        return self.inner.find_overdue(limit=limit)

    def delete(self, turn_id: str, *, expected_version: int) -> None:
        self.plan.call("store.delete", lambda: self.inner.delete(turn_id, expected_version=expected_version))

    def mark_unreadable(self, turn_id: str, **options: Any) -> bool:
        return self.plan.call("store.mark_unreadable", lambda: self.inner.mark_unreadable(turn_id, **options))  # type: ignore[no-any-return]


class FaultyConversation:
    def __init__(self, inner: ChatMemory, plan: FaultPlan) -> None:
        self.inner, self.plan = inner, plan
        self.conversation_id = inner.conversation_id

    def get_messages(self, limit: int | None = None) -> list[Any]:
        return self.inner.get_messages(limit)

    def get_model_messages(self, limit: int | None = None) -> list[Any]:
        return self.inner.get_model_messages(limit)

    def get_message(self, message_id: str) -> Any:
        return self.inner.get_message(message_id)

    def append(self, message: Any) -> bool:
        return self.plan.call("memory.append", lambda: self.inner.append(message))  # type: ignore[no-any-return]

    def append_all(self, messages: Sequence[Any]) -> None:
        self.plan.call("memory.append_all", lambda: self.inner.append_all(messages))

    def update_message(self, message: Any, expected_version: int) -> bool:
        return self.plan.call(  # type: ignore[no-any-return]
            "memory.update_message", lambda: self.inner.update_message(message, expected_version)
        )

    def get_active_turn(self) -> str | None:
        return self.inner.get_active_turn()

    def set_active_turn(self, turn_id: str | None, *, expected: str | None, listing: Any = None) -> bool:
        return self.plan.call(  # type: ignore[no-any-return]
            "memory.set_active_turn", lambda: self.inner.set_active_turn(turn_id, expected=expected, listing=listing)
        )


def faulty_memory(inner: ChatMemoryProvider, plan: FaultPlan) -> ChatMemoryProvider:
    return lambda conversation_id: FaultyConversation(inner(conversation_id), plan)


class FaultyQueue:
    def __init__(self, inner: ResumeQueue, plan: FaultPlan) -> None:
        self.inner, self.plan = inner, plan

    def enqueue(self, turn_id: str, version: int, *, delay_seconds: int = 0) -> None:
        self.plan.call(
            "queue.enqueue",
            lambda: self.inner.enqueue(turn_id, version, delay_seconds=delay_seconds),
        )
