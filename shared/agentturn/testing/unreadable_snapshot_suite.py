"""The TurnStore conformance suite for a turn whose stored snapshot cannot be read.

Reads and claims refuse it with a typed error that carries what the store knows besides the body; a claim
leaves no lease behind; ``mark_unreadable`` counts its attempts once each and finally ends it FAILED, out of
the sweeper's indexes, without ever reading or rewriting the body. The kit breaks bodies
(``break_snapshot``) in the ways its ``capabilities.breakages`` declare; its ``inspector``, if any, checks
how the ended turn is retained.
"""

from __future__ import annotations

import pickle

import pytest

from agentturn.errors import SnapshotUnreadableError, TurnNotFoundError
from agentturn.ports.store import SNAPSHOT_UNREADABLE
from agentturn.state.turn import TurnStatus
from agentturn.testing._suite import LEASE, wait_for_overdue, wait_for_runnable
from agentturn.testing.builders import advanced, new_turn, waiting_until
from agentturn.testing.capabilities import BREAKAGES, Breakage
from agentturn.testing.kits import StoreKit

__all__ = ["UnreadableSnapshotSuite"]


def _unreadable_error(kit: StoreKit, turn_id: str) -> SnapshotUnreadableError:
    with pytest.raises(SnapshotUnreadableError) as caught:
        kit.store.load(turn_id)
    return caught.value


def _break(kit: StoreKit, turn_id: str, how: Breakage) -> None:
    if how not in kit.capabilities.breakages:
        pytest.skip(f"{kit.name} cannot hold a body broken as {how!r}")
    if kit.break_snapshot is None:
        raise TypeError(f"kit {kit.name!r} declares breakages but has no break_snapshot")
    kit.break_snapshot(kit.store, turn_id, how)


class UnreadableSnapshotSuite:
    """Unreadable snapshots; subclass it as ``Test...`` and provide the ``store_kit`` fixture."""

    @pytest.mark.parametrize("how", BREAKAGES)
    def test_an_unreadable_snapshot_is_refused_by_load_and_claim_and_leaves_no_lease(
        self, store_kit: StoreKit, how: Breakage
    ) -> None:
        # GIVEN a RUNNING turn at version 2 whose stored body is then broken
        if how not in store_kit.capabilities.breakages:
            pytest.skip(f"{store_kit.name} cannot hold a body broken as {how!r}")
        created = store_kit.store.create(new_turn())
        store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1)
        _break(store_kit, created.id, how)

        # WHEN it is loaded, and a worker claims it
        error = _unreadable_error(store_kit, created.id)
        with pytest.raises(SnapshotUnreadableError):
            store_kit.store.claim(created.id, "worker-1", LEASE)

        # THEN both refuse with what the store knows besides the body (and the error survives pickling) ...
        assert (error.turn_id, error.status, error.version) == (created.id, "RUNNING", 2)
        assert (error.conversation_id, error.attempts, error.not_before, error.error_type) == (
            created.conversation_id,
            0,
            None,
            None,
        )
        assert ("schemaVersion" in str(error)) == (how == "newer_schema")
        copy = pickle.loads(pickle.dumps(error))
        assert (copy.turn_id, copy.status, copy.version, str(copy)) == (error.turn_id, "RUNNING", 2, str(error))
        # ... the failed claim holds no lease (a count needs none), and the sweeper finds the turn again once the
        # attempt's backoff is over (before, a worker would only drop the message as early)
        assert store_kit.store.mark_unreadable(
            created.id, version=2, attempts=1, fail=False, not_before=store_kit.clock() + 5
        )
        assert created.id not in {r.turn_id for r in store_kit.store.find_runnable(idle_seconds=0)}
        store_kit.clock.advance(6)
        assert created.id in {r.turn_id for r in wait_for_runnable(store_kit, bool, idle_seconds=0)}

    def test_unreadable_attempts_are_counted_once_each_and_only_at_the_version_seen(self, store_kit: StoreKit) -> None:
        # GIVEN a READY turn whose body is garbage
        created = store_kit.store.create(new_turn())
        _break(store_kit, created.id, "garbage")
        due = store_kit.clock() + 30

        # WHEN two workers both count the first attempt, one counts at a wrong version, then the second is counted
        first = store_kit.store.mark_unreadable(created.id, version=1, attempts=1, fail=False, not_before=due)
        again = store_kit.store.mark_unreadable(created.id, version=1, attempts=1, fail=False, not_before=due + 1)
        stale = store_kit.store.mark_unreadable(created.id, version=7, attempts=2, fail=False, not_before=due)
        second = store_kit.store.mark_unreadable(created.id, version=1, attempts=2, fail=False, not_before=due + 60)

        # THEN exactly one count per attempt landed; the turn is otherwise untouched (still READY at version 1)
        assert (first, again, stale, second) == (True, False, False, True)
        error = _unreadable_error(store_kit, created.id)
        assert (error.status, error.version, error.attempts, error.not_before) == ("READY", 1, 2, due + 60)
        assert store_kit.store.mark_unreadable("no-such-turn", version=1, attempts=1, fail=False) is False

    def test_no_attempt_is_counted_on_a_turn_a_live_lease_holds(self, store_kit: StoreKit) -> None:
        # GIVEN a turn leased by a live worker (one that reads a newer schema, say), whose body this code cannot read
        created = store_kit.store.create(new_turn())
        lease = store_kit.store.claim(created.id, "newer-worker", LEASE)
        assert lease is not None
        _break(store_kit, created.id, "newer_schema")

        # WHEN this code tries to count or end it
        counted = store_kit.store.mark_unreadable(created.id, version=1, attempts=1, fail=False)
        ended = store_kit.store.mark_unreadable(created.id, version=1, attempts=1, fail=True)

        # THEN nothing is written; once the lease has run out, the count lands
        assert (counted, ended) == (False, False)
        store_kit.clock.advance(LEASE + 1)
        assert store_kit.store.mark_unreadable(created.id, version=1, attempts=1, fail=False)

    def test_the_last_attempt_ends_the_turn_failed_out_of_both_sweeps(self, store_kit: StoreKit) -> None:
        # GIVEN a runnable turn and an overdue blocked one, both unreadable, with one attempt counted each
        now = store_kit.clock()
        runnable = store_kit.store.create(new_turn())
        blocked = store_kit.store.create(new_turn())
        store_kit.store.save(waiting_until(blocked, now + 5), expected_version=1)
        store_kit.clock.advance(10)
        for turn_id, version in ((runnable.id, 1), (blocked.id, 2)):
            _break(store_kit, turn_id, "garbage")
            assert store_kit.store.mark_unreadable(turn_id, version=version, attempts=1, fail=False)
        assert blocked.id in {r.turn_id for r in wait_for_overdue(store_kit, bool)}
        retain_until = store_kit.clock() + 3600.5

        # WHEN the second (last) attempt ends both
        ended = [
            store_kit.store.mark_unreadable(
                turn_id, version=version, attempts=2, fail=True, message="gave up", retain_until=retain_until
            )
            for turn_id, version in ((runnable.id, 1), (blocked.id, 2))
        ]

        # THEN each is FAILED with the unreadable error at the next version, nobody can claim it, neither sweep
        # lists it, and it can be ended only once
        assert ended == [True, True]
        for turn_id, version in ((runnable.id, 2), (blocked.id, 3)):
            error = _unreadable_error(store_kit, turn_id)
            assert (error.status, error.version, error.error_type) == ("FAILED", version, SNAPSHOT_UNREADABLE)
            assert store_kit.store.claim(turn_id, "worker-1", LEASE) is None
            assert store_kit.store.mark_unreadable(turn_id, version=version, attempts=3, fail=True) is False
        assert wait_for_runnable(store_kit, lambda f: not f, idle_seconds=0) == []
        assert wait_for_overdue(store_kit, lambda f: not f) == []
        if store_kit.inspector is not None:
            store_kit.inspector.check_retained_failed(runnable.id, retain_until=retain_until, message="gave up")

    def test_a_readable_turn_is_never_marked(self, store_kit: StoreKit) -> None:
        # GIVEN a terminal turn and a missing one
        done = store_kit.store.create(new_turn())
        store_kit.store.save(advanced(done, TurnStatus.COMPLETED), expected_version=1)

        # WHEN someone tries to count an attempt on them THEN nothing is written
        assert store_kit.store.mark_unreadable(done.id, version=2, attempts=1, fail=True) is False
        assert store_kit.store.load(done.id).status is TurnStatus.COMPLETED
        with pytest.raises(TurnNotFoundError):
            store_kit.store.load("missing")
