"""The TurnStore conformance suite: every adapter behaves as the in-memory reference does.

Run it on your store by subclassing :class:`TurnStoreSuite` in a test module and providing a ``store_kit``
fixture that returns a fresh :class:`~agentturn.testing.StoreKit` per test::

    class TestMyStore(TurnStoreSuite):
        @pytest.fixture
        def store_kit(self) -> StoreKit:
            clock = FakeClock()
            return StoreKit("mine", clock, lambda: MyStore(clock=clock), my_memory, Capabilities())

Races of 8 writers run only when the kit declares ``atomic_conditional_writes``.
"""

from __future__ import annotations

import pytest

from agentturn.errors import AnswersQueuedError, LeaseLostError, TurnNotFoundError, VersionConflictError
from agentturn.ports.store import Lease, new_lease_id
from agentturn.state.commands import ResumeCommand
from agentturn.state.messages import AiMessage, UserMessage
from agentturn.state.turn import SCHEMA_VERSION, QueuedAnswer, RetryState, Turn, TurnStatus
from agentturn.testing._suite import LEASE, THREADS, require, wait_for_overdue, wait_for_runnable
from agentturn.testing.builders import advanced, new_turn, race, waiting_until
from agentturn.testing.kits import StoreKit
from agentturn.timeline.identity import stamp

__all__ = ["TurnStoreSuite"]


class TurnStoreSuite:
    """The TurnStore contract; subclass it as ``Test...`` and provide the ``store_kit`` fixture."""

    # ------------------------------------------------------------------------------------------ round trips

    def test_create_then_load_round_trips_the_snapshot(self, store_kit: StoreKit) -> None:
        # GIVEN a new turn with a message and metadata
        turn = new_turn(text="帮我创建一个高优先级的登录故障工单。")
        turn.metadata = {"channel": "web", "nested": {"n": 1, "list": [1, "two", None]}}

        # WHEN it is created and loaded back (through another store instance, as another process would)
        created = store_kit.store.create(turn)
        loaded = store_kit.new_store().load(turn.id)

        # THEN both are version 1 with everything the snapshot held, and the cancel flag down
        assert created.version == 1
        assert loaded == created
        assert loaded.messages == turn.messages
        assert loaded.metadata == turn.metadata
        assert loaded.cancel_requested is False

    def test_save_returns_the_new_version_and_load_sees_it(self, store_kit: StoreKit) -> None:
        # GIVEN a created turn
        created = store_kit.store.create(new_turn())

        # WHEN it is saved twice, each time at the version the last save returned
        first = store_kit.store.save(advanced(created, TurnStatus.RUNNING, "one"), expected_version=created.version)
        second = store_kit.store.save(advanced(first, TurnStatus.RUNNING, "two"), expected_version=first.version)

        # THEN each save returns the next version, and a load returns the last save exactly
        assert (first.version, second.version) == (2, 3)
        assert store_kit.store.load(created.id) == second
        assert [m.content for m in second.messages if isinstance(m, AiMessage)] == ["one", "two"]

    def test_create_of_an_existing_id_is_a_conflict_reporting_the_stored_version(self, store_kit: StoreKit) -> None:
        # GIVEN a turn stored and saved once (version 2)
        created = store_kit.store.create(new_turn())
        store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1)

        # WHEN a turn with the same id is created again
        with pytest.raises(VersionConflictError) as conflict:
            store_kit.store.create(new_turn().model_copy(update={"id": created.id}))

        # THEN it is refused, naming the stored version, and the stored turn is untouched
        assert conflict.value.actual_version == 2
        assert not isinstance(conflict.value, LeaseLostError)
        assert store_kit.store.load(created.id).version == 2

    def test_missing_turns_are_not_found(self, store_kit: StoreKit) -> None:
        # GIVEN an id nothing was stored under
        ghost = new_turn()

        # WHEN it is loaded, saved, or cancelled
        # THEN each says the turn does not exist (and a save does not create it)
        with pytest.raises(TurnNotFoundError):
            store_kit.store.load(ghost.id)
        with pytest.raises(TurnNotFoundError):
            store_kit.store.save(ghost, expected_version=1)
        with pytest.raises(TurnNotFoundError):
            store_kit.store.request_cancel(ghost.id)
        with pytest.raises(TurnNotFoundError):
            store_kit.store.load(ghost.id)

    def test_a_save_at_a_stale_version_reports_the_actual_version(self, store_kit: StoreKit) -> None:
        # GIVEN a turn at version 3
        created = store_kit.store.create(new_turn())
        v2 = store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1)
        store_kit.store.save(advanced(v2, TurnStatus.RUNNING), expected_version=2)

        # WHEN a writer still holding version 2 saves
        with pytest.raises(VersionConflictError) as conflict:
            store_kit.store.save(advanced(v2, TurnStatus.COMPLETED), expected_version=2)

        # THEN the conflict names what it expected and what is stored, and nothing changed
        assert (conflict.value.expected_version, conflict.value.actual_version) == (2, 3)
        assert not isinstance(conflict.value, LeaseLostError)
        stored = store_kit.store.load(created.id)
        assert (stored.version, stored.status) == (3, TurnStatus.RUNNING)

    def test_concurrent_saves_at_one_version_let_exactly_one_win(self, store_kit: StoreKit) -> None:
        require(store_kit, "atomic_conditional_writes")
        # GIVEN a turn at version 1
        created = store_kit.store.create(new_turn())

        # WHEN 8 writers save different successors of version 1 at the same moment
        def save(index: int) -> Turn | VersionConflictError:
            try:
                return store_kit.store.save(
                    advanced(created, TurnStatus.RUNNING, f"writer-{index}"), expected_version=1
                )
            except VersionConflictError as exc:
                return exc

        outcomes = race(THREADS, save)

        # THEN exactly one is stored (version 2); every other writer learns that version 2 exists
        winners = [o for o in outcomes if isinstance(o, Turn)]
        losers = [o for o in outcomes if isinstance(o, VersionConflictError)]
        assert len(winners) == 1
        assert [loser.actual_version for loser in losers] == [2] * (THREADS - 1)
        assert store_kit.store.load(created.id) == winners[0]

    def test_a_turn_of_a_newer_schema_version_is_refused_and_nothing_is_stored(self, store_kit: StoreKit) -> None:
        # GIVEN a turn of a newer schema, as code from the future would hold it
        future = new_turn().model_copy(update={"schema_version": SCHEMA_VERSION + 1})

        # WHEN this code is asked to store it
        # THEN it refuses rather than write a shape it does not know as its own, and stores nothing (reading
        # such a snapshot is refused too: the unreadable-snapshot suite's ``newer_schema`` breakage)
        with pytest.raises(ValueError, match="schemaVersion"):
            store_kit.store.create(future)
        with pytest.raises(TurnNotFoundError):
            store_kit.store.load(future.id)

    # --------------------------------------------------------------------------------------------- leases

    def test_eight_concurrent_claims_grant_exactly_one_lease(self, store_kit: StoreKit) -> None:
        require(store_kit, "atomic_conditional_writes")
        # GIVEN a runnable turn nobody holds
        created = store_kit.store.create(new_turn())

        # WHEN 8 workers claim it at the same moment
        leases = race(THREADS, lambda i: store_kit.store.claim(created.id, f"worker-{i}", LEASE))

        # THEN exactly one gets a lease, and it is the one the store fences with
        granted = [lease for lease in leases if lease is not None]
        assert len(granted) == 1
        lease = granted[0]
        assert lease.turn_id == created.id
        saved = store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1, lease_id=lease.lease_id)
        assert saved.version == 2

    def test_a_claim_hands_back_the_snapshot_it_claimed(self, store_kit: StoreKit) -> None:
        # GIVEN a runnable turn saved once
        created = store_kit.store.create(new_turn())
        saved = store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1)

        # WHEN a worker claims it
        lease = store_kit.store.claim(created.id, "worker-1", LEASE)

        # THEN the claim carries the stored snapshot, so the worker needs no read before it starts
        assert lease is not None
        assert lease.turn is not None
        assert lease.turn == store_kit.store.load(created.id)
        assert lease.turn.version == saved.version == 2
        # ... and a renewed lease does not pretend to know a newer snapshot
        assert store_kit.store.renew(lease, LEASE).turn is None

    def test_claim_refuses_blocked_terminal_missing_and_leased_turns(self, store_kit: StoreKit) -> None:
        # GIVEN a blocked turn, a completed turn, a leased turn and an id with no turn
        blocked = store_kit.store.create(new_turn())
        store_kit.store.save(advanced(blocked, TurnStatus.WAITING_FOR_USER), expected_version=1)
        done = store_kit.store.create(new_turn())
        store_kit.store.save(advanced(done, TurnStatus.COMPLETED), expected_version=1)
        leased = store_kit.store.create(new_turn())
        assert store_kit.store.claim(leased.id, "owner", LEASE) is not None

        # WHEN a worker claims each
        # THEN none is granted
        assert store_kit.store.claim(blocked.id, "worker", LEASE) is None
        assert store_kit.store.claim(done.id, "worker", LEASE) is None
        assert store_kit.store.claim(leased.id, "worker", LEASE) is None
        assert store_kit.store.claim(new_turn().id, "worker", LEASE) is None
        with pytest.raises(TurnNotFoundError):
            store_kit.store.load(new_turn().id)  # the refused claim on a missing id created nothing either

    def test_an_expired_lease_is_reclaimed_and_its_old_holder_is_fenced_off(self, store_kit: StoreKit) -> None:
        # GIVEN worker A's lease on a turn, expired (the clock moved past it)
        created = store_kit.store.create(new_turn())
        first = store_kit.store.claim(created.id, "worker-a", LEASE)
        assert first is not None
        store_kit.clock.advance(LEASE + 1)

        # WHEN worker B claims the turn
        second = store_kit.store.claim(created.id, "worker-b", LEASE)

        # THEN B holds it; A can neither save, renew nor release under its old lease; B can save
        assert second is not None
        assert second.lease_id != first.lease_id
        with pytest.raises(LeaseLostError):
            store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1, lease_id=first.lease_id)
        with pytest.raises(LeaseLostError):
            store_kit.store.renew(first, LEASE)
        assert store_kit.store.release(first) is False
        saved = store_kit.store.save(
            advanced(created, TurnStatus.RUNNING), expected_version=1, lease_id=second.lease_id
        )
        assert saved.version == 2

    def test_a_stale_lease_id_is_rejected_even_for_the_same_worker(self, store_kit: StoreKit) -> None:
        # GIVEN a worker whose lease expired and who then claimed the same turn again
        created = store_kit.store.create(new_turn())
        old = store_kit.store.claim(created.id, "worker-1", LEASE)
        assert old is not None
        store_kit.clock.advance(LEASE + 1)
        new = store_kit.store.claim(created.id, "worker-1", LEASE)
        assert new is not None

        # WHEN it saves with the first lease's id (a stale thread of the same worker)
        with pytest.raises(LeaseLostError) as lost:
            store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1, lease_id=old.lease_id)

        # THEN the store fences on the lease id, not the worker id; nothing changed
        assert lost.value.lease_id == old.lease_id
        assert store_kit.store.load(created.id).version == 1

    def test_an_expired_lease_nobody_took_over_still_saves(self, store_kit: StoreKit) -> None:
        # GIVEN a lease that expired while its holder was slow, but nobody claimed the turn since
        created = store_kit.store.create(new_turn())
        lease = store_kit.store.claim(created.id, "slow-worker", LEASE)
        assert lease is not None
        store_kit.clock.advance(LEASE * 3)

        # WHEN the holder saves under it
        saved = store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1, lease_id=lease.lease_id)

        # THEN the save is accepted: only a takeover fences a holder
        assert saved.version == 2

    def test_a_save_without_a_lease_is_refused_while_a_live_lease_exists(self, store_kit: StoreKit) -> None:
        # GIVEN a turn a worker holds a live lease on
        created = store_kit.store.create(new_turn())
        lease = store_kit.store.claim(created.id, "worker", LEASE)
        assert lease is not None

        # WHEN another writer saves it without a lease, at the right version
        with pytest.raises(VersionConflictError) as conflict:
            store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1)

        # THEN it is a conflict (the turn is running elsewhere), not a lease loss, and nothing changed
        assert not isinstance(conflict.value, LeaseLostError)
        assert store_kit.store.load(created.id).version == 1

        # AND once the lease has expired the same save goes through
        store_kit.clock.advance(LEASE + 1)
        assert store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1).version == 2

    @pytest.mark.parametrize(
        "status",
        [TurnStatus.WAITING_FOR_USER, TurnStatus.WAITING_FOR_APPROVAL, TurnStatus.COMPLETED, TurnStatus.FAILED],
    )
    def test_a_blocked_or_terminal_save_ends_the_lease(self, store_kit: StoreKit, status: TurnStatus) -> None:
        # GIVEN a worker's live lease on a running turn
        created = store_kit.store.create(new_turn())
        lease = store_kit.store.claim(created.id, "worker", LEASE)
        assert lease is not None

        # WHEN the worker saves the turn as blocked or finished
        saved = store_kit.store.save(advanced(created, status), expected_version=1, lease_id=lease.lease_id)

        # THEN the lease ended with that write: it cannot be renewed or released, and a lease-less writer
        # (a submit) can save right away without waiting for it to expire
        assert saved.status is status
        with pytest.raises(LeaseLostError):
            store_kit.store.renew(lease, LEASE)
        assert store_kit.store.release(lease) is False
        resumed = store_kit.store.save(advanced(saved, TurnStatus.RUNNING), expected_version=saved.version)
        assert resumed.version == saved.version + 1

    def test_a_runnable_save_keeps_the_lease(self, store_kit: StoreKit) -> None:
        # GIVEN a worker's lease
        created = store_kit.store.create(new_turn())
        lease = store_kit.store.claim(created.id, "worker", LEASE)
        assert lease is not None

        # WHEN it saves an intermediate RUNNING step
        store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1, lease_id=lease.lease_id)

        # THEN it still holds the lease: others cannot claim, and it can renew and release
        assert store_kit.store.claim(created.id, "other", LEASE) is None
        renewed = store_kit.store.renew(lease, LEASE)
        assert renewed.lease_id == lease.lease_id
        assert store_kit.store.release(renewed) is True

    def test_renew_extends_a_lease_past_its_first_expiry(self, store_kit: StoreKit) -> None:
        # GIVEN a lease renewed half-way through
        created = store_kit.store.create(new_turn())
        lease = store_kit.store.claim(created.id, "worker", LEASE)
        assert lease is not None
        store_kit.clock.advance(LEASE / 2)
        renewed = store_kit.store.renew(lease, LEASE)

        # WHEN the clock passes the first expiry, but not the renewed one
        store_kit.clock.advance(LEASE / 2 + 1)

        # THEN the renewed lease is live (no one else can claim), and it expires later as renewed
        assert renewed.expires_at > lease.expires_at
        assert store_kit.store.claim(created.id, "other", LEASE) is None
        store_kit.clock.advance(LEASE)
        assert store_kit.store.claim(created.id, "other", LEASE) is not None

    def test_release_frees_the_turn_for_the_next_claim(self, store_kit: StoreKit) -> None:
        # GIVEN a lease
        created = store_kit.store.create(new_turn())
        lease = store_kit.store.claim(created.id, "worker", LEASE)
        assert lease is not None

        # WHEN it is released (once, then a second time)
        first, second = store_kit.store.release(lease), store_kit.store.release(lease)

        # THEN the first release frees the turn, the second finds nothing of ours, and another worker claims
        assert (first, second) == (True, False)
        assert isinstance(store_kit.store.claim(created.id, "next", LEASE), Lease)

    # ----------------------------------------------------------------------------------------------- cancel

    def test_the_cancel_flag_is_monotonic_no_stale_save_clears_it(self, store_kit: StoreKit) -> None:
        # GIVEN a turn loaded by a writer, and then a cancel requested
        created = store_kit.store.create(new_turn())
        loaded_before_cancel = store_kit.store.load(created.id)
        assert loaded_before_cancel.cancel_requested is False
        store_kit.store.request_cancel(created.id)

        # WHEN the writer saves the turn it loaded before (its cancel flag is down), at the right version
        saved = store_kit.store.save(advanced(loaded_before_cancel, TurnStatus.RUNNING), expected_version=1)

        # THEN the save returns the stored flag, up; loads say so too, and later saves keep it up
        assert saved.cancel_requested is True
        assert store_kit.store.load(created.id).cancel_requested is True
        later = store_kit.store.save(
            advanced(saved, TurnStatus.RUNNING).model_copy(update={"cancel_requested": False}), expected_version=2
        )
        assert later.cancel_requested is True
        assert store_kit.store.load(created.id).cancel_requested is True

    def test_saving_a_turn_that_carries_the_cancel_flag_sets_it(self, store_kit: StoreKit) -> None:
        # GIVEN a stored turn without a cancel request
        created = store_kit.store.create(new_turn())

        # WHEN a save carries cancel_requested=True
        saved = store_kit.store.save(
            advanced(created, TurnStatus.RUNNING).model_copy(update={"cancel_requested": True}), expected_version=1
        )

        # THEN the flag is stored
        assert saved.cancel_requested is True
        assert store_kit.store.load(created.id).cancel_requested is True

    def test_request_cancel_does_not_change_the_version_or_the_lease(self, store_kit: StoreKit) -> None:
        # GIVEN a leased turn
        created = store_kit.store.create(new_turn())
        lease = store_kit.store.claim(created.id, "worker", LEASE)
        assert lease is not None

        # WHEN a cancel is requested (twice: it is idempotent)
        store_kit.store.request_cancel(created.id)
        store_kit.store.request_cancel(created.id)

        # THEN the holder's next save still fits (same version, same lease) and reports the flag
        saved = store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1, lease_id=lease.lease_id)
        assert (saved.version, saved.cancel_requested) == (2, True)

    # ------------------------------------------------------------------------------------- queued answers

    def test_an_answer_queued_beside_a_leased_turn_is_taken_by_the_save_that_blocks_it(
        self, store_kit: StoreKit
    ) -> None:
        # GIVEN a running turn held by a worker, and an answer queued beside it (twice: a retried write)
        created = store_kit.store.create(new_turn(status=TurnStatus.RUNNING))
        lease = store_kit.store.claim(created.id, "worker", LEASE)
        assert lease is not None
        answer = QueuedAnswer(command=ResumeCommand.approve_tool("call-2"), accepted_at=5.0, nonce="n-1")
        store_kit.store.queue_answer(created.id, answer)
        store_kit.store.queue_answer(created.id, answer)

        # THEN the version and the lease are as they were, a load shows the answer, a runnable save still fits
        loaded = store_kit.store.load(created.id)
        assert (loaded.version, loaded.queued_answers) == (1, [answer])
        running = store_kit.store.save(
            advanced(created, TurnStatus.RUNNING), expected_version=1, lease_id=lease.lease_id
        )
        # AND a save that would leave it waiting is refused with the answers it did not take, nothing written
        blocked = advanced(running, TurnStatus.WAITING_FOR_APPROVAL)
        with pytest.raises(AnswersQueuedError) as refused:
            store_kit.store.save(blocked, expected_version=2, lease_id=lease.lease_id)
        assert refused.value.answers == [answer]
        assert store_kit.store.load(created.id).version == 2
        # AND one that took them is stored, and removes them
        blocked.answers_taken = 1
        saved = store_kit.store.save(blocked, expected_version=2, lease_id=lease.lease_id)
        assert saved.version == 3
        assert store_kit.store.load(created.id).queued_answers == []

    def test_an_answer_is_queued_only_beside_a_runnable_turn_once_per_action(self, store_kit: StoreKit) -> None:
        # GIVEN a running turn with an answer to action call-2 queued
        created = store_kit.store.create(new_turn(status=TurnStatus.RUNNING))
        first = QueuedAnswer(command=ResumeCommand.approve_tool("call-2"), accepted_at=5.0, nonce="n-1")
        store_kit.store.queue_answer(created.id, first)

        # WHEN another answer to the same action comes, THEN it is refused
        other = QueuedAnswer(command=ResumeCommand.reject_tool("call-2"), accepted_at=6.0, nonce="n-2")
        with pytest.raises(VersionConflictError):
            store_kit.store.queue_answer(created.id, other)
        # AND nothing is queued beside a waiting turn, nor beside a missing one
        waiting = store_kit.store.create(new_turn(status=TurnStatus.WAITING_FOR_USER))
        with pytest.raises(VersionConflictError):
            store_kit.store.queue_answer(waiting.id, other)
        with pytest.raises(TurnNotFoundError):
            store_kit.store.queue_answer("no-such-turn", other)
        assert store_kit.store.load(created.id).queued_answers == [first]

    # -------------------------------------------------------------------------------------------- sweeping

    def test_find_runnable_finds_idle_unheld_runnable_turns_only(self, store_kit: StoreKit) -> None:
        # GIVEN, all written now:
        never_enqueued = store_kit.store.create(new_turn())  # READY, never claimed
        expired = store_kit.store.create(new_turn())  # claimed by a worker that died
        assert store_kit.store.claim(expired.id, "dead-worker", LEASE) is not None
        held = store_kit.store.create(new_turn())  # leased by a live worker (claimed below, after time passes)
        blocked = store_kit.store.create(new_turn())
        store_kit.store.save(advanced(blocked, TurnStatus.WAITING_FOR_USER), expected_version=1)
        finished = store_kit.store.create(new_turn())
        store_kit.store.save(advanced(finished, TurnStatus.COMPLETED), expected_version=1)
        running = store_kit.store.create(new_turn())
        running_v2 = store_kit.store.save(advanced(running, TurnStatus.RUNNING), expected_version=1)
        # ... then 5 minutes pass; the live worker claims its turn; one more turn is written just now
        store_kit.clock.advance(300)
        assert store_kit.store.claim(held.id, "live-worker", LEASE) is not None
        fresh = store_kit.store.create(new_turn())

        # WHEN the sweeper looks for turns idle for at least a minute
        expected = {never_enqueued.id, expired.id, running.id}
        found = wait_for_runnable(store_kit, lambda f: {r.turn_id for r in f} >= expected, idle_seconds=60)

        # THEN it finds the never-enqueued, the expired-lease and the idle RUNNING turn, with their versions —
        # not the live-leased, blocked, finished or freshly written ones
        assert {r.turn_id for r in found} == expected
        assert {r.turn_id: r.version for r in found}[running.id] == running_v2.version
        assert fresh.id not in {r.turn_id for r in found}

    def test_find_runnable_leaves_a_turn_in_backoff_out_until_it_is_due(self, store_kit: StoreKit) -> None:
        # GIVEN two idle RUNNING turns: one plain, one in the backoff of a failed attempt for another 5 minutes
        plain = store_kit.store.create(new_turn())
        store_kit.store.save(advanced(plain, TurnStatus.RUNNING), expected_version=1)
        backing_off = store_kit.store.create(new_turn())
        retrying = advanced(backing_off, TurnStatus.RUNNING)
        retrying.retry = RetryState(attempts=1, reason="model_error", not_before=store_kit.clock() + 300)
        store_kit.store.save(retrying, expected_version=1)
        store_kit.clock.advance(120)

        # WHEN the sweeper looks for idle turns while the backoff lasts
        found = wait_for_runnable(store_kit, lambda f: plain.id in {r.turn_id for r in f}, idle_seconds=60)

        # THEN only the plain one is found (a worker would drop the other's message as early) ...
        assert {r.turn_id for r in found} == {plain.id}

        # ... and once the backoff is over, both are
        store_kit.clock.advance(181)
        found = store_kit.store.find_runnable(idle_seconds=60)
        assert {r.turn_id for r in found} == {plain.id, backing_off.id}

    def test_find_runnable_returns_the_oldest_first_up_to_the_limit(self, store_kit: StoreKit) -> None:
        # GIVEN 5 READY turns written a minute apart
        created = []
        for _ in range(5):
            created.append(store_kit.store.create(new_turn()).id)
            store_kit.clock.advance(60)

        # WHEN the sweeper asks for 3
        everything = wait_for_runnable(store_kit, lambda f: len(f) == 5, idle_seconds=0)
        found = store_kit.store.find_runnable(idle_seconds=0, limit=3)

        # THEN it gets the 3 oldest, oldest first
        assert [r.turn_id for r in everything] == created
        assert [r.turn_id for r in found] == created[:3]
        assert store_kit.store.find_runnable(idle_seconds=0, limit=0) == []

    def test_a_turn_leaves_the_sweep_when_blocked_and_returns_when_resumed(self, store_kit: StoreKit) -> None:
        # GIVEN a turn that blocked for a person
        created = store_kit.store.create(new_turn())
        blocked = store_kit.store.save(advanced(created, TurnStatus.WAITING_FOR_USER), expected_version=1)
        store_kit.clock.advance(120)
        assert wait_for_runnable(store_kit, lambda f: not f, idle_seconds=60) == []

        # WHEN it is resumed (saved RUNNING without a lease, as submit does) and left idle
        store_kit.store.save(advanced(blocked, TurnStatus.RUNNING), expected_version=2)
        store_kit.clock.advance(120)

        # THEN the sweeper finds it again
        found = wait_for_runnable(store_kit, lambda f: len(f) == 1, idle_seconds=60)
        assert [(r.turn_id, r.version) for r in found] == [(created.id, 3)]

    # ---------------------------------------------------------------------------------------------- delete

    def test_delete_is_conditional_on_the_version(self, store_kit: StoreKit) -> None:
        # GIVEN a turn at version 2
        created = store_kit.store.create(new_turn())
        store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1)

        # WHEN it is deleted at version 1
        with pytest.raises(VersionConflictError) as conflict:
            store_kit.store.delete(created.id, expected_version=1)

        # THEN it is refused naming version 2, and the turn is still there
        assert conflict.value.actual_version == 2
        assert store_kit.store.load(created.id).version == 2

        # AND at version 2 it is deleted; deleting it again is a no-op
        store_kit.store.delete(created.id, expected_version=2)
        with pytest.raises(TurnNotFoundError):
            store_kit.store.load(created.id)
        store_kit.store.delete(created.id, expected_version=2)

    def test_user_messages_survive_as_their_own_type(self, store_kit: StoreKit) -> None:
        # GIVEN a turn whose messages are of several kinds
        turn = new_turn(text="hi")
        turn.messages.append(stamp(turn, AiMessage(content="hello")))
        turn.messages.append(stamp(turn, UserMessage(content="again")))

        # WHEN it is stored and loaded
        store_kit.store.create(turn)
        loaded = store_kit.store.load(turn.id)

        # THEN each message comes back as its own model, with its timeline identity
        assert [type(m).__name__ for m in loaded.messages] == ["UserMessage", "AiMessage", "UserMessage"]
        assert [m.message_id for m in loaded.messages] == [m.message_id for m in turn.messages]

    # ------------------------------------------------------------------------------------------ overdue waits

    def test_find_overdue_finds_blocked_turns_past_their_deadline_earliest_first(self, store_kit: StoreKit) -> None:
        # GIVEN turns waiting for a person with deadlines 10, 20 and 1,000 s from now, one waiting forever,
        # and a runnable one
        now = store_kit.clock()
        due_second = store_kit.store.create(new_turn())
        store_kit.store.save(waiting_until(due_second, now + 20), expected_version=1)
        due_first = store_kit.store.create(new_turn())
        store_kit.store.save(waiting_until(due_first, now + 10), expected_version=1)
        later = store_kit.store.create(new_turn())
        store_kit.store.save(waiting_until(later, now + 1000), expected_version=1)
        forever = store_kit.store.create(new_turn())
        store_kit.store.save(waiting_until(forever, None), expected_version=1)
        store_kit.store.create(new_turn())

        # WHEN the sweeper asks for overdue waits 30 s later
        store_kit.clock.advance(30)
        found = wait_for_overdue(store_kit, lambda f: len(f) >= 2)

        # THEN it gets the two past their deadline, earliest deadline first, with their versions; a limit
        # takes the earliest
        assert [(r.turn_id, r.version) for r in found] == [(due_first.id, 2), (due_second.id, 2)]
        assert [r.turn_id for r in store_kit.store.find_overdue(limit=1)] == [due_first.id]
        assert store_kit.store.find_overdue(limit=0) == []

    def test_an_answered_wait_is_no_longer_overdue(self, store_kit: StoreKit) -> None:
        # GIVEN a turn whose wait is overdue
        now = store_kit.clock()
        created = store_kit.store.create(new_turn())
        blocked = store_kit.store.save(waiting_until(created, now + 5), expected_version=1)
        store_kit.clock.advance(10)
        assert [r.turn_id for r in wait_for_overdue(store_kit, lambda f: len(f) == 1)] == [created.id]

        # WHEN it is answered (saved RUNNING, its suspension cleared)
        resumed = advanced(blocked, TurnStatus.RUNNING)
        resumed.suspension = None
        store_kit.store.save(resumed, expected_version=2)

        # THEN the sweeper no longer sees it
        assert wait_for_overdue(store_kit, lambda f: not f) == []

    def test_a_turn_created_with_a_lease_is_held_from_its_first_write(self, store_kit: StoreKit) -> None:
        # GIVEN a turn created already leased (a synchronous run: one write instead of a create and a claim)
        turn = new_turn()
        lease = Lease(turn.id, "runner-1", new_lease_id(), store_kit.clock() + LEASE)
        created = store_kit.store.create(turn, lease=lease)

        # THEN nobody else can claim it, a sweep does not list it, and the holder writes under that lease
        assert store_kit.store.claim(created.id, "worker-2", LEASE) is None
        assert created.id not in {r.turn_id for r in store_kit.store.find_runnable(idle_seconds=0)}
        with pytest.raises(VersionConflictError):
            store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1)
        saved = store_kit.store.save(advanced(created, TurnStatus.RUNNING), expected_version=1, lease_id=lease.lease_id)
        assert saved.version == 2
        assert store_kit.store.release(lease)
