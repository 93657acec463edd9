"""Test kits for agentturn and for adapters written for it.

This package is light: importing it imports neither pytest nor boto3. It holds

* :class:`DelegatingTurnStore`, a store double that passes every call on (override what a test intercepts);
* :class:`FakeClock`, the injected clock, and builders of turns and timeline entries
  (:func:`new_turn`, :func:`advanced`, :func:`waiting_until`, :func:`user`, :func:`ai`, :func:`form`, ...);
* the kits a conformance suite is given (:class:`StoreKit`, :class:`QueueKit`) and what an adapter declares
  it can do (:class:`Capabilities`); the in-memory reference kits (:mod:`agentturn.testing.memory`).

The suites themselves need pytest; import them from their modules and subclass them in a test module:

* :mod:`agentturn.testing.turn_store_suite`, :mod:`~agentturn.testing.unreadable_snapshot_suite`,
  :mod:`~agentturn.testing.large_snapshot_suite` (fixture ``store_kit``);
* :mod:`agentturn.testing.chat_memory_suite` (fixture ``memory_kit``);
* :mod:`agentturn.testing.resume_queue_suite` (fixture ``queue_kit``);
* :mod:`agentturn.testing.chat_model_suite` (fixture ``provider``: a :class:`ProviderScript`).

The DynamoDB adapters' breakers and inspector are in :mod:`agentturn.testing.aws` (it imports botocore).
"""

from __future__ import annotations

from agentturn.testing.builders import (
    advanced,
    ai,
    form,
    new_conversation_id,
    new_turn,
    race,
    submitted,
    unique,
    user,
    waiting_until,
)
from agentturn.testing.capabilities import BREAKAGES, Breakage, Capabilities
from agentturn.testing.clock import FakeClock
from agentturn.testing.delegating import DelegatingTurnStore
from agentturn.testing.kits import ChatMemoryKit, QueueKit, SnapshotBreaker, StoreInspector, StoreKit
from agentturn.testing.provider import ProviderScript

__all__ = [
    "BREAKAGES",
    "Breakage",
    "Capabilities",
    "ChatMemoryKit",
    "DelegatingTurnStore",
    "FakeClock",
    "ProviderScript",
    "QueueKit",
    "SnapshotBreaker",
    "StoreInspector",
    "StoreKit",
    "advanced",
    "ai",
    "form",
    "new_conversation_id",
    "new_turn",
    "race",
    "submitted",
    "unique",
    "user",
    "waiting_until",
]
