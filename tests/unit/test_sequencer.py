"""Event sequence numbers (pure: no store; the 'other process' is a second sequencer)."""

from __future__ import annotations

from agentturn import Turn
from agentturn.engine.events import Event, EventType, Listener
from agentturn.engine.sequencer import SEQUENCE_RESERVE, EventSequencer


def a_turn(turn_id: str = "t1") -> Turn:
    return Turn(id=turn_id, conversation_id="c", agent_id="a", agent_version="1")


def test_each_turn_counts_its_own_events_upwards() -> None:
    # GIVEN a sequencer and two turns
    seen: list[Event] = []
    sequencer = EventSequencer(lambda: [seen.append])
    first, second = a_turn("t1"), a_turn("t2")

    # WHEN events of both are emitted, interleaved
    for turn in (first, second, first, first, second):
        sequencer.emit(turn, EventType.STEP_STARTED)

    # THEN each turn's numbers rise one by one from 1, whatever the other turn did
    assert [e.sequence for e in seen if e.turn_id == "t1"] == [1, 2, 3]
    assert [e.sequence for e in seen if e.turn_id == "t2"] == [1, 2]


def test_a_process_that_reloads_the_turn_continues_above_every_event_emitted_before() -> None:
    # GIVEN a process that saved the turn (reserving sequences) and then emitted up to the reserve's worth
    seen: list[Event] = []
    here = EventSequencer(lambda: [seen.append])
    turn = a_turn()
    here.emit(turn, EventType.TURN_STARTED)
    here.reserve(turn)
    stored_floor = turn.event_sequence
    for _ in range(SEQUENCE_RESERVE):
        here.emit(turn, EventType.TOOL_PROGRESS)

    # WHEN another process, knowing only the stored turn, writes it (reserving in turn) and emits
    there = EventSequencer(lambda: [seen.append])
    reloaded = a_turn()
    reloaded.event_sequence = stored_floor
    there.reserve(reloaded)
    there.emit(reloaded, EventType.TURN_RESUMED)

    # THEN its number is above all of them: a client ordering by sequence sees the resume last
    assert seen[-1].sequence > max(e.sequence for e in seen[:-1])


def test_a_floor_above_what_this_process_used_wins() -> None:
    # GIVEN a process that emitted once for a turn (sequence 1)
    seen: list[Event] = []
    sequencer = EventSequencer(lambda: [seen.append])
    sequencer.emit_for("t1", 0, EventType.STEP_STARTED)

    # WHEN it emits with a floor another process stored meanwhile
    sequencer.emit_for("t1", 100, EventType.STEP_STARTED)

    # THEN it continues above that floor, and stays above it
    sequencer.emit_for("t1", 0, EventType.STEP_STARTED)
    assert [e.sequence for e in seen] == [1, 101, 102]


def test_listeners_are_read_when_an_event_is_emitted_not_when_the_sequencer_is_made() -> None:
    # GIVEN a sequencer over a list of listeners that is replaced afterwards (as a Runner's may be)
    before: list[Event] = []
    after: list[Event] = []
    listeners: list[Listener] = [before.append]
    sequencer = EventSequencer(lambda: listeners)
    listeners = [after.append]

    # WHEN an event is emitted
    sequencer.emit(a_turn(), EventType.TURN_STARTED)

    # THEN the current listeners get it
    assert [e.type for e in after] == [EventType.TURN_STARTED]
    assert before == []


def test_events_nobody_listens_to_still_use_up_their_numbers() -> None:
    # GIVEN a sequencer whose runner has no listeners yet
    listeners: list[Listener] = []
    sequencer = EventSequencer(lambda: listeners)
    turn = a_turn()

    # WHEN two events are emitted unheard, then a listener is added and a third is emitted
    sequencer.emit(turn, EventType.TURN_STARTED)
    sequencer.emit(turn, EventType.STEP_STARTED)
    seen: list[Event] = []
    listeners.append(seen.append)
    sequencer.emit(turn, EventType.STEP_COMPLETED, kind="MODEL")

    # THEN the listener gets the third event numbered after the two it did not hear, with its data
    assert [(e.type, e.sequence, dict(e.data)) for e in seen] == [(EventType.STEP_COMPLETED, 3, {"kind": "MODEL"})]
