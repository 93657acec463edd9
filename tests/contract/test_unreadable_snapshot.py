"""The unreadable-snapshot contract (shipped in agentturn.testing) on every adapter set of conftest.py."""

from __future__ import annotations

from agentturn.testing.unreadable_snapshot_suite import UnreadableSnapshotSuite


class TestUnreadableSnapshot(UnreadableSnapshotSuite):
    pass
