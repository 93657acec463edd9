"""The scenario suite runs against every adapter set: the ``backend`` fixture is parametrized by adapter."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentturn import Agent, ChatMemoryProvider, Event, InMemoryChatMemory, InMemoryTurnStore, Runner, TurnStore
from tests.support.clock import FakeClock


@dataclass
class Backend:
    name: str
    store: TurnStore
    memory: ChatMemoryProvider
    clock: FakeClock
    events: list[Event] = field(default_factory=list)

    def runner(self, agents: Iterable[Agent] | Callable[[str, str], Agent], **kwargs: Any) -> Runner:
        listeners = kwargs.pop("listeners", [self.events.append])
        return Runner(
            store=self.store, chat_memory=self.memory, agents=agents, listeners=listeners, clock=self.clock, **kwargs
        )


def _memory_backend() -> Iterator[Backend]:
    clock = FakeClock()
    yield Backend("memory", InMemoryTurnStore(clock=clock), InMemoryChatMemory(), clock)


BACKENDS: dict[str, Callable[[pytest.FixtureRequest], Iterator[Backend]]] = {
    "memory": lambda request: _memory_backend(),
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    yield from BACKENDS[request.param](request)
