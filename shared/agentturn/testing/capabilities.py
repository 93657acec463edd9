"""What an adapter under test says it can do, so a conformance suite knows which tests apply to it.

An adapter's kit declares these; the suites never guess them from a backend's name. A test that needs a
capability the kit does not declare is skipped, naming the capability, so a report shows what was not proven.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

#: The ways a stored snapshot breaks in production (see :mod:`agentturn.testing.broken`).
Breakage = Literal["garbage", "newer_schema", "bad_zlib", "object_gone"]
BREAKAGES: Final[tuple[Breakage, ...]] = ("garbage", "newer_schema", "bad_zlib", "object_gone")


@dataclass(frozen=True)
class Capabilities:
    """Declared by the kit of the adapter (set) under test.

    ``atomic_conditional_writes``: a conditional write is isolated from concurrent ones (the races of 8
    writers are run only then; moto's DynamoDB, for one, is not isolated).
    ``spills_to_blob_store``: a large snapshot is kept outside the record (the kit's ``inspect`` then checks
    where it went).
    ``holds_binary_bodies``: the record can hold a compressed (binary) body.
    ``breakages``: the ways the kit can break a stored body underneath the store (``break_snapshot``).
    ``delivers_duplicates``: a queue delivers a repeated enqueue of one turn version again (a FIFO queue
    with content deduplication does not).
    ``ordered_delivery``: a queue delivers one turn's messages in the order they were enqueued.
    """

    atomic_conditional_writes: bool = True
    spills_to_blob_store: bool = False
    holds_binary_bodies: bool = False
    breakages: frozenset[Breakage] = field(default_factory=lambda: frozenset({"garbage", "newer_schema"}))
    delivers_duplicates: bool = True
    ordered_delivery: bool = True
