"""Repairing a conversation's timeline from its active turn's snapshot (in-memory store and memory)."""

from __future__ import annotations

from agentturn import AiMessage, InMemoryChatMemory, InMemoryTurnStore, ToolCall, Turn, TurnStatus, UserMessage
from agentturn.ports.memory import ChatMemory
from agentturn.state.messages import FormMessage, FormStatus
from agentturn.state.turn import ProjectionMark
from agentturn.timeline.identity import place, stamp
from agentturn.timeline.projection import project
from agentturn.timeline.repair import Repair, reconcile, repair, repair_timeline


def active_turn(store: InMemoryTurnStore, memory: InMemoryChatMemory, status: TurnStatus) -> Turn:
    turn = Turn(id="t1", conversation_id="c1", agent_id="a", agent_version="1", status=status)
    turn.messages.append(stamp(turn, UserMessage(content="hi")))
    stored = store.create(turn)
    memory("c1").set_active_turn("t1", expected=None)
    return stored


def waiting_on_a_form(store: InMemoryTurnStore, memory: InMemoryChatMemory) -> Turn:
    """A turn waiting on a card, its input, the model's call and the card all in the timeline."""
    turn = Turn(id="t1", conversation_id="c1", agent_id="a", agent_version="1", status=TurnStatus.WAITING_FOR_USER)
    turn.messages.append(stamp(turn, UserMessage(content="file a ticket")))
    turn.messages.append(stamp(turn, AiMessage(tool_calls=[ToolCall(id="call-1", name="ticket", arguments={})])))
    turn.cards.append(place(turn, FormMessage(action_id="call-1", form_key="f", schema={"type": "object"})))
    stored = store.create(turn)
    memory("c1").set_active_turn("t1", expected=None)
    project(stored, memory("c1"), since=ProjectionMark())
    return stored


def counting_writes(memory: ChatMemory) -> list[str]:
    writes: list[str] = []
    append, append_all, update = memory.append, memory.append_all, memory.update_message

    def counted_append(message: object) -> bool:
        writes.append("append")
        return append(message)  # type: ignore[arg-type]

    def counted_append_all(messages: object) -> None:
        writes.append("append_all")
        append_all(messages)  # type: ignore[arg-type]

    def counted_update(message: object, expected_version: int) -> bool:
        writes.append("update")
        return update(message, expected_version)  # type: ignore[arg-type]

    memory.append, memory.append_all = counted_append, counted_append_all  # type: ignore[method-assign]
    memory.update_message = counted_update  # type: ignore[method-assign]
    return writes


def test_a_healthy_running_turn_costs_no_write() -> None:
    # GIVEN a running turn whose timeline is whole
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    turn = active_turn(store, memory, TurnStatus.RUNNING)
    project(turn, memory("c1"), since=ProjectionMark())
    visible = memory("c1").get_messages(10)

    # WHEN the timeline is read and checked THEN nothing is written and the turn keeps its conversation
    assert not repair_timeline(store, memory("c1"), visible, whole=True)
    assert memory("c1").get_active_turn() == "t1"


def test_a_window_that_starts_after_the_turns_entries_judges_none_of_them() -> None:
    # GIVEN a healthy waiting turn, and a reader that asks for the latest entry only (limit=1)
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    waiting_on_a_form(store, memory)
    visible = memory("c1").get_messages(1)
    writes = counting_writes(memory("c1"))

    # WHEN the read is checked THEN nothing is written: the entries before the window are not judged missing
    assert not repair_timeline(store, memory("c1"), visible, whole=False)
    assert writes == []


def test_a_card_the_timeline_shows_at_an_older_version_is_moved_on() -> None:
    # GIVEN a waiting turn whose card was answered in the snapshot, but the card's write was lost in a crash
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    turn = waiting_on_a_form(store, memory)
    card = turn.cards[0]
    assert isinstance(card, FormMessage)
    turn.cards = [card.model_copy(update={"version": 2, "status": FormStatus.SUBMITTED, "actions": []})]
    store.save(turn, expected_version=turn.version)

    # WHEN the timeline is read and checked
    wrote = repair_timeline(store, memory("c1"), memory("c1").get_messages(10), whole=True)

    # THEN the card shows SUBMITTED, written at its place, and nothing else was appended
    assert wrote
    entries = memory("c1").get_messages(10)
    assert [e.type for e in entries] == ["user", "ai", "agent_form"]
    shown = entries[2]
    assert isinstance(shown, FormMessage) and shown.status == "SUBMITTED" and shown.version == 2


def test_a_finished_turn_still_holding_the_conversation_is_projected_and_lets_go() -> None:
    # GIVEN a failed turn that never projected nor let go of its conversation
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    turn = active_turn(store, memory, TurnStatus.FAILED)

    # WHEN the timeline is checked
    result = repair(store, memory("c1"), memory("c1").get_messages(10), whole=True)

    # THEN its messages are written and the conversation is free
    assert result == Repair(wrote=True, holder=None)
    assert [m.message_id for m in memory("c1").get_messages(10)] == [turn.messages[0].message_id]
    assert memory("c1").get_active_turn() is None


def test_a_conversation_naming_a_turn_that_no_longer_exists_is_left_alone() -> None:
    # GIVEN a conversation that names a turn the store does not have
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    memory("c1").set_active_turn("gone", expected=None)

    # WHEN the timeline is checked THEN nothing is written and the conversation still names it
    assert repair(store, memory("c1"), [], whole=True) == Repair(wrote=False, holder="gone")


def test_reconcile_reads_the_timeline_when_not_given_and_writes_only_what_lacks() -> None:
    # GIVEN a waiting turn whose timeline holds its messages but not its card
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    turn = waiting_on_a_form(store, memory)
    other = InMemoryChatMemory()
    other("c1").append_all(turn.messages)
    writes = counting_writes(other("c1"))

    # WHEN it is reconciled without a read given
    wrote = reconcile(turn, other("c1"))

    # THEN only the card was written
    assert wrote
    assert writes == ["append"]
    assert [e.type for e in other("c1").get_messages()] == ["user", "ai", "agent_form"]
