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
        store = kwargs.pop("store", self.store)
        return Runner(
            store=store, chat_memory=self.memory, agents=agents, listeners=listeners, clock=self.clock, **kwargs
        )


def _memory_backend() -> Iterator[Backend]:
    clock = FakeClock()
    yield Backend("memory", InMemoryTurnStore(clock=clock), InMemoryChatMemory(), clock)


def _dynamodb_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """DynamoDB adapters on Amazon DynamoDB Local (S3 on moto), on tables of this test alone."""
    from tests.contract.aws_adapters import fresh_dynamodb_adapters

    clock = FakeClock()
    store, memory = fresh_dynamodb_adapters(
        request.getfixturevalue("dynamodb_local"), request.getfixturevalue("moto_server"), clock
    )
    yield Backend("dynamodb", store, memory, clock)


def _dynamodb_moto_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """The same adapters on moto's DynamoDB (for the scenarios that must hold on every backend)."""
    from tests.contract.aws_adapters import fresh_dynamodb_adapters

    clock = FakeClock()
    moto = request.getfixturevalue("moto_server")
    store, memory = fresh_dynamodb_adapters(moto, moto, clock)
    yield Backend("dynamodb-moto", store, memory, clock)


BACKENDS: dict[str, Callable[[pytest.FixtureRequest], Iterator[Backend]]] = {
    "memory": lambda request: _memory_backend(),
    "dynamodb": _dynamodb_backend,
}


@pytest.fixture(params=["memory", "dynamodb", "dynamodb-moto"])
def every_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """Memory, DynamoDB Local and moto's DynamoDB: for the rules DESIGN says hold on every backend."""
    if request.param == "dynamodb-moto":
        yield from _dynamodb_moto_backend(request)
    else:
        yield from BACKENDS[request.param](request)


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    yield from BACKENDS[request.param](request)
