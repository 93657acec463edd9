"""What a conformance suite is given: the adapter (set) under test, built by the user's factory, and what
it declares it can do. Plain dataclasses and protocols (no pytest): a kit is built in a fixture."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from agentturn.ports.memory import ChatMemoryProvider
from agentturn.ports.queue import ResumeMessage, ResumeQueue
from agentturn.ports.store import TurnStore
from agentturn.testing.capabilities import Breakage, Capabilities
from agentturn.testing.clock import FakeClock

#: Rewrites what ``store`` holds for one turn's body, and nothing else (see :mod:`agentturn.testing.broken`).
SnapshotBreaker = Callable[[TurnStore, str, Breakage], None]


class StoreInspector(Protocol):
    """Adapter-specific checks the suites run after their own, where the adapter keeps more than the
    protocol shows (an object store, a time-to-live)."""

    def check_spilled(self, turn_id: str, version: int) -> None:
        """The large snapshot of ``turn_id`` at ``version`` is kept outside the record, and nothing of its
        replaced versions is left behind."""
        ...

    def check_retained_failed(self, turn_id: str, *, retain_until: float, message: str) -> None:
        """``turn_id``, ended FAILED as unreadable, is kept until ``retain_until`` with ``message``."""
        ...


class ChatMemoryKit(Protocol):
    """What the ChatMemory suite needs: a provider of conversations, and what the adapter declares."""

    @property
    def name(self) -> str: ...

    @property
    def memory(self) -> ChatMemoryProvider: ...

    @property
    def capabilities(self) -> Capabilities: ...


@dataclass
class StoreKit:
    """One adapter set, as a TurnStore (and ChatMemory) suite test sees it.

    ``new_store`` makes another store over the same data, as a second process (a Lambda, a worker) would
    have it; every store it makes reads ``clock``. Each test gets a fresh kit: ``find_runnable`` and
    ``find_overdue`` must see that test's turns only. Conversation ids are fresh per test
    (:func:`~agentturn.testing.new_conversation_id`), so ``memory`` may be shared.
    """

    name: str
    clock: FakeClock
    new_store: Callable[[], TurnStore]
    memory: ChatMemoryProvider
    capabilities: Capabilities = field(default_factory=Capabilities)
    #: Required for each breakage ``capabilities.breakages`` names.
    break_snapshot: SnapshotBreaker | None = None
    inspector: StoreInspector | None = None
    store: TurnStore = field(init=False)

    def __post_init__(self) -> None:
        self.store = self.new_store()


@dataclass
class QueueKit:
    """The ResumeQueue under test, and how a worker receives from it.

    ``receive(expected)`` returns the messages delivered until ``expected`` have arrived or the kit's own
    deadline passed (a queue that drops a duplicate is then shown to deliver no more than it should).
    """

    name: str
    queue: ResumeQueue
    receive: Callable[[int], list[ResumeMessage]]
    capabilities: Capabilities = field(default_factory=Capabilities)
