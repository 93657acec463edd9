"""What the store suites share: capability checks and bounded polling of eventually consistent indexes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, Literal

import pytest

from agentturn.ports.store import RunnableTurn
from agentturn.testing.kits import ChatMemoryKit, StoreKit

#: Lease length the suites claim with (seconds of the kit's clock).
LEASE: Final = 60.0
#: Contenders in each race.
THREADS: Final = 8
#: Real seconds an index may lag behind a write (a DynamoDB GSI is eventually consistent).
INDEX_LAG: Final = 10.0
_POLL: Final = 0.05

Capability = Literal["atomic_conditional_writes", "spills_to_blob_store", "holds_binary_bodies"]


def require(kit: StoreKit | ChatMemoryKit, capability: Capability) -> None:
    """Skip the calling test unless the kit declares ``capability``."""
    if not getattr(kit.capabilities, capability):
        pytest.skip(f"{kit.name} does not declare {capability}")


def wait_for_runnable(
    kit: StoreKit, predicate: Callable[[list[RunnableTurn]], bool], *, idle_seconds: float, limit: int = 100
) -> list[RunnableTurn]:
    """``find_runnable`` until ``predicate`` holds, or the index had ``INDEX_LAG`` to catch up."""
    deadline = time.monotonic() + INDEX_LAG
    while True:
        found = kit.store.find_runnable(idle_seconds=idle_seconds, limit=limit)
        if predicate(found) or time.monotonic() > deadline:
            return found
        time.sleep(_POLL)


def wait_for_overdue(
    kit: StoreKit, predicate: Callable[[list[RunnableTurn]], bool], limit: int = 100
) -> list[RunnableTurn]:
    """``find_overdue`` until ``predicate`` holds, or the index had ``INDEX_LAG`` to catch up."""
    deadline = time.monotonic() + INDEX_LAG
    while True:
        found = kit.store.find_overdue(limit=limit)
        if predicate(found) or time.monotonic() > deadline:
            return found
        time.sleep(_POLL)
