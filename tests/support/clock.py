"""The injected clock now ships in :mod:`agentturn.testing`; re-exported for the tests that import it here."""

from __future__ import annotations

from agentturn.testing.clock import FakeClock

__all__ = ["FakeClock"]
