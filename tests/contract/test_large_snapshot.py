"""The large-snapshot contract (shipped in agentturn.testing) on every adapter set of conftest.py."""

from __future__ import annotations

from agentturn.testing.large_snapshot_suite import TWO_MB, LargeSnapshotSuite, incompressible

# Re-exported: other test packages build on these.
__all__ = ["TWO_MB", "incompressible"]


class TestLargeSnapshot(LargeSnapshotSuite):
    pass
