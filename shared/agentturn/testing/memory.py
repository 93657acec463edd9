"""Kits of the in-memory reference adapters: what every other adapter is held to."""

from __future__ import annotations

from agentturn.ports.memory import InMemoryChatMemory
from agentturn.ports.queue import InMemoryResumeQueue, ResumeMessage
from agentturn.ports.store import InMemoryTurnStore
from agentturn.testing.broken import break_in_memory_snapshot
from agentturn.testing.capabilities import Capabilities
from agentturn.testing.clock import FakeClock
from agentturn.testing.kits import QueueKit, StoreKit

#: The reference: isolated writes; bodies kept as text in the record, breakable only as text.
IN_MEMORY_CAPABILITIES = Capabilities(atomic_conditional_writes=True, breakages=frozenset({"garbage", "newer_schema"}))


def in_memory_store_kit() -> StoreKit:
    """A fresh in-memory turn store (every ``new_store`` is the same one: it is one process's memory)."""
    clock = FakeClock()
    store = InMemoryTurnStore(clock=clock)
    return StoreKit(
        "memory",
        clock,
        lambda: store,
        InMemoryChatMemory(),
        IN_MEMORY_CAPABILITIES,
        break_snapshot=break_in_memory_snapshot,
    )


def in_memory_queue_kit() -> QueueKit:
    queue = InMemoryResumeQueue()

    def receive(expected: int) -> list[ResumeMessage]:
        # Everything enqueued is there at once: no waiting for ``expected``.
        return queue.drain()

    return QueueKit("memory", queue, receive, Capabilities(delivers_duplicates=True, ordered_delivery=True))
