"""Break a stored snapshot underneath a TurnStore (the breakers ship in agentturn.testing; this picks the
one for the store at hand)."""

from __future__ import annotations

from agentturn import InMemoryTurnStore, TurnStore
from agentturn.testing import BREAKAGES, Breakage
from agentturn.testing.aws import DYNAMODB_CAPABILITIES, break_dynamodb_snapshot
from agentturn.testing.broken import break_in_memory_snapshot
from agentturn.testing.memory import IN_MEMORY_CAPABILITIES

__all__ = ["BREAKAGES", "Breakage", "break_snapshot", "can_break"]


def can_break(store: TurnStore, how: Breakage) -> bool:
    """Whether ``store`` can hold a body broken that way (the in-memory store has no compression, no S3)."""
    capabilities = IN_MEMORY_CAPABILITIES if isinstance(store, InMemoryTurnStore) else DYNAMODB_CAPABILITIES
    return how in capabilities.breakages


def break_snapshot(store: TurnStore, turn_id: str, how: Breakage) -> None:
    if isinstance(store, InMemoryTurnStore):
        break_in_memory_snapshot(store, turn_id, how)
    else:
        break_dynamodb_snapshot(store, turn_id, how)
