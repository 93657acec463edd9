"""Repairing a conversation's timeline from its active turn's snapshot (in-memory store and memory)."""

from __future__ import annotations

from agentturn import InMemoryChatMemory, InMemoryTurnStore, Turn, TurnStatus, UserMessage
from agentturn.projection import project
from agentturn.timeline_identity import stamp
from agentturn.timeline_repair import repair_timeline


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
