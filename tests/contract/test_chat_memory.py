"""The ChatMemory contract (shipped in agentturn.testing) on every adapter set of conftest.py."""

from __future__ import annotations

from agentturn.testing import ai, form, submitted, user
from agentturn.testing.chat_memory_suite import ChatMemorySuite

# Re-exported: other test packages build on these.
__all__ = ["ai", "form", "submitted", "user"]


class TestChatMemory(ChatMemorySuite):
    pass
