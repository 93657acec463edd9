"""The TurnStore contract (shipped in agentturn.testing) on every adapter set of conftest.py."""

from __future__ import annotations

from agentturn.testing import advanced
from agentturn.testing._suite import LEASE, THREADS, wait_for_overdue, wait_for_runnable
from agentturn.testing.builders import race, waiting_until
from agentturn.testing.turn_store_suite import TurnStoreSuite

# Re-exported: other test packages build on these.
__all__ = ["LEASE", "THREADS", "advanced", "race", "wait_for_overdue", "wait_for_runnable", "waiting_until"]


class TestTurnStore(TurnStoreSuite):
    pass
