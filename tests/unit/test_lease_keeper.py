"""Keeping a run's lease between steps and during one (in-memory store, fake clock)."""

from __future__ import annotations

import threading

import pytest
from tests.unit.conftest import Parts

from agentturn import Agent, ScriptedChatModel
from agentturn.engine.lease_keeper import LeaseKeeper
from agentturn.engine.turn_run import LeaseGone, Run
from agentturn.ports.store import Lease


def an_agent() -> Agent:
    return Agent("a", "x", ScriptedChatModel([]))


def test_a_fresh_lease_is_left_alone_and_one_past_half_its_life_is_renewed(parts: Parts) -> None:
    # GIVEN a run with a new 60-second lease
    run = parts.new_run(an_agent())
    assert run.lease is not None
    granted = run.lease.expires_at

    # WHEN it is checked at once, then after 40 seconds
    parts.leases.renew(run)
    unchanged = run.lease
    parts.clock.advance(40)
    parts.leases.renew(run)

    # THEN the first check wrote nothing; the second extended the lease past its old end
    assert unchanged is not None and unchanged.expires_at == granted
    assert run.lease is not None and run.lease.expires_at > granted


def test_a_lease_taken_over_between_steps_stops_the_run(parts: Parts) -> None:
    # GIVEN a run whose lease ran out and was claimed by another worker
    run = parts.new_run(an_agent())
    parts.clock.advance(parts.lease_seconds + 1)
    assert parts.store.claim(run.turn.id, "w2", parts.lease_seconds) is not None

    # WHEN the run checks its lease before its next step THEN it learns it is gone and holds nothing
    with pytest.raises(LeaseGone):
        parts.leases.renew(run)
    assert run.lease is None


def test_a_step_without_a_lease_runs_without_a_heartbeat(parts: Parts) -> None:
    # GIVEN a run that holds no lease (a cancel or an expiry writes without one)
    run = parts.new_run(an_agent(), leased=False)

    # WHEN a step runs inside the heartbeat
    with parts.leases.heartbeat(run):
        ran = True

    # THEN the body ran and no heartbeat thread was started for it
    assert ran
    assert run.heartbeat is None


def test_a_step_keeps_the_lease_it_held(parts: Parts) -> None:
    # GIVEN a leased run
    run = parts.new_run(an_agent())
    held = run.lease

    # WHEN a short step runs inside the heartbeat
    with parts.leases.heartbeat(run):
        pass
    assert run.heartbeat is not None
    run.heartbeat.close()

    # THEN the run still holds its lease afterwards
    assert run.lease is not None and held is not None and run.lease.lease_id == held.lease_id


def heartbeat_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "agentturn-heartbeat" and t.is_alive()]


def test_the_steps_of_consecutive_runs_share_one_heartbeat_thread(parts: Parts) -> None:
    # GIVEN no heartbeat thread on this clock yet, and a second keeper on it (the handlers make a Runner per
    # request)
    before = set(heartbeat_threads())

    def claim(turn_id: str) -> Lease | None:
        return parts.store.claim(turn_id, "w2", parts.lease_seconds)

    second = LeaseKeeper(parts.store, parts.clock, parts.lease_seconds, parts.clock.wait, claim)
    keepers = [parts.leases, second]

    # WHEN two runs, one under each keeper, each take two short steps, one after the other
    for keeper in keepers:
        run = parts.new_run(an_agent())
        for _ in range(2):
            with keeper.heartbeat(run):
                pass
        assert run.heartbeat is not None
        run.heartbeat.close()

    # THEN one thread was started for all four steps, and no step renewed the lease (none lasted a beat)
    started = set(heartbeat_threads()) - before
    assert len(started) == 1
    assert run.heartbeat.renewals == 0


def unclaimed_run(parts: Parts) -> Run:
    """A run started from a snapshot, as a worker given its message's snapshot starts: no lease yet."""
    run = parts.new_run(an_agent(), leased=False)
    run.claim_deferred = True
    return run


def test_a_deferred_claim_takes_the_lease_before_a_tool(parts: Parts) -> None:
    # GIVEN an unclaimed run whose copy is the stored version
    run = unclaimed_run(parts)

    # WHEN it claims before a tool
    proceed = parts.leases.claim_deferred(run)

    # THEN it holds the lease (another claim is refused) and may run the tool
    assert proceed
    assert run.lease is not None and not run.claim_deferred
    assert parts.store.claim(run.turn.id, "another", parts.lease_seconds) is None


def test_a_deferred_claim_on_a_turn_that_moved_on_lets_go_and_stops_the_run(parts: Parts) -> None:
    # GIVEN an unclaimed run whose copy is one version behind the store (another copy of its message saved first,
    # the turn still runnable and unleased)
    run = unclaimed_run(parts)
    stale = run.turn.model_copy(deep=True)
    parts.store.save(run.turn, expected_version=run.turn.version)
    run.turn = stale

    # WHEN it claims before a tool
    # THEN the run stops (nothing it holds may act), and the lease it took is given back at once
    with pytest.raises(LeaseGone):
        parts.leases.claim_deferred(run)
    assert run.lease is None
    assert parts.store.claim(run.turn.id, "another", parts.lease_seconds) is not None


def test_a_deferred_claim_that_finds_a_cancel_request_carries_it_and_runs_no_tool(parts: Parts) -> None:
    # GIVEN an unclaimed run whose turn was asked to cancel after its snapshot was taken
    run = unclaimed_run(parts)
    parts.store.request_cancel(run.turn.id)
    assert not run.turn.cancel_requested

    # WHEN it claims before a tool
    proceed = parts.leases.claim_deferred(run)

    # THEN it holds the lease (to end the turn under it), its copy carries the request, and the tool is not run
    assert not proceed
    assert run.lease is not None
    assert run.turn.cancel_requested
