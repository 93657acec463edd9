"""Repairing a conversation's timeline from its active turn's snapshot (in-memory store and memory)."""

from __future__ import annotations

from agentturn import AiMessage, InMemoryChatMemory, InMemoryTurnStore, Turn, TurnStatus, UserMessage
from agentturn.timeline.identity import stamp
from agentturn.timeline.projection import project
from agentturn.timeline.repair import Repair, repair, repair_timeline


def active_turn(store: InMemoryTurnStore, memory: InMemoryChatMemory, status: TurnStatus) -> Turn:
    turn = Turn(id="t1", conversation_id="c1", agent_id="a", agent_version="1", status=status)
    turn.messages.append(stamp(turn, UserMessage(content="hi")))
    stored = store.create(turn)
    memory("c1").set_active_turn("t1", expected=None)
    return stored


def test_a_healthy_running_turn_costs_no_write() -> None:
    # GIVEN a running turn whose timeline is whole
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    turn = active_turn(store, memory, TurnStatus.RUNNING)
    project(turn, memory("c1"))
    visible = memory("c1").get_messages(10)

    # WHEN the timeline is read and checked THEN nothing is written and the turn keeps its conversation
    assert not repair_timeline(store, memory("c1"), visible)
    assert memory("c1").get_active_turn() == "t1"


def test_a_finished_turn_still_holding_the_conversation_is_projected_and_lets_go() -> None:
    # GIVEN a turn that ended but whose last projection (and letting go) failed
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    turn = active_turn(store, memory, TurnStatus.COMPLETED)

    # WHEN the timeline is read and checked
    repaired = repair_timeline(store, memory("c1"), [])

    # THEN its messages are in the timeline and the conversation is free
    assert repaired
    assert [m.message_id for m in memory("c1").get_messages(10)] == [turn.messages[0].message_id]
    assert memory("c1").get_active_turn() is None


def test_a_conversation_naming_a_turn_that_no_longer_exists_is_left_alone() -> None:
    # GIVEN a conversation naming a turn the store does not have
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    memory("c1").set_active_turn("gone", expected=None)

    # WHEN checked THEN nothing is written
    assert not repair_timeline(store, memory("c1"), [])
    assert memory("c1").get_active_turn() == "gone"


def test_a_completed_turn_whose_answer_the_timeline_shows_is_not_read_and_holds_nothing() -> None:
    # GIVEN a completed turn still named in its conversation, its timeline whole up to its answer
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    turn = Turn(id="t1", conversation_id="c1", agent_id="a", agent_version="1", status=TurnStatus.COMPLETED)
    turn.messages += [stamp(turn, UserMessage(content="hi"))]
    turn.messages += [stamp(turn, AiMessage(content="hello"))]
    project(store.create(turn), memory("c1"))
    memory("c1").set_active_turn("t1", expected=None)
    loads: list[str] = []
    load = store.load
    store.load = lambda turn_id: loads.append(turn_id) or load(turn_id)  # type: ignore[method-assign]

    # WHEN a reader checks what it read
    repaired = repair(store, memory("c1"), memory("c1").get_messages(10))

    # THEN nothing was written or read of the turn, and nobody holds the conversation
    assert repaired == Repair(wrote=False, holder=None)
    assert loads == []


def test_the_repair_tells_who_holds_the_conversation_after_it() -> None:
    # GIVEN a running turn whose timeline is whole, and (elsewhere) a failed one that never let go
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    project(active_turn(store, memory, TurnStatus.RUNNING), memory("c1"))
    failed_store, failed_memory = InMemoryTurnStore(), InMemoryChatMemory()
    active_turn(failed_store, failed_memory, TurnStatus.FAILED)

    # WHEN each is checked THEN the running turn holds its conversation (nothing written), and the failed one
    # was projected and let go of its own
    assert repair(store, memory("c1"), memory("c1").get_messages(10)) == Repair(wrote=False, holder="t1")
    assert repair(failed_store, failed_memory("c1"), []) == Repair(wrote=True, holder=None)
