"""One turn at a time in a conversation (in-memory store and chat memory)."""

from __future__ import annotations

import pytest

from agentturn import (
    AiMessage,
    InMemoryChatMemory,
    InMemoryTurnStore,
    ToolCall,
    ToolMessage,
    Turn,
    TurnStatus,
    UserMessage,
)
from agentturn.engine.conversation_lock import ConversationLock, holds, stored_status
from agentturn.errors import ConversationBusyError, SnapshotUnreadableError, TurnNotFoundError
from agentturn.timeline.identity import stamp


def stored(store: InMemoryTurnStore, turn_id: str, status: TurnStatus = TurnStatus.READY) -> Turn:
    turn = Turn(id=turn_id, conversation_id="c1", agent_id="a", agent_version="1", status=status)
    turn.messages.append(stamp(turn, UserMessage(content=f"from {turn_id}")))
    return store.create(turn)


def test_a_free_conversation_is_taken() -> None:
    # GIVEN a free conversation and a new turn
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    turn = stored(store, "t1")

    # WHEN the turn takes it THEN it is the active turn, and holds it
    ConversationLock(store).take(memory("c1"), turn)
    assert memory("c1").get_active_turn() == "t1"
    assert holds(memory("c1"), turn)


def test_a_conversation_held_by_a_running_turn_refuses_and_leaves_no_trace_of_the_new_one() -> None:
    # GIVEN a conversation held by a running turn
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    running = stored(store, "t1", TurnStatus.RUNNING)
    lock = ConversationLock(store)
    lock.take(memory("c1"), running)
    newcomer = stored(store, "t2")

    # WHEN a second turn tries to take it
    with pytest.raises(ConversationBusyError):
        lock.take(memory("c1"), newcomer)

    # THEN the first still holds it and the second no longer exists
    assert memory("c1").get_active_turn() == "t1"
    assert not holds(memory("c1"), newcomer)
    with pytest.raises(TurnNotFoundError):
        store.load("t2")


def test_a_turn_that_ended_without_letting_go_is_taken_over_after_its_timeline_is_made_whole() -> None:
    # GIVEN a conversation still naming a turn that ended before it could project and let go
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    ended = stored(store, "t1", TurnStatus.COMPLETED)
    memory("c1").set_active_turn("t1", expected=None)
    newcomer = stored(store, "t2")

    # WHEN a new turn takes the conversation
    ConversationLock(store).take(memory("c1"), newcomer)

    # THEN it holds it, and the ended turn's messages are in the timeline first
    assert memory("c1").get_active_turn() == "t2"
    assert [m.message_id for m in memory("c1").get_messages(10)] == [ended.messages[0].message_id]


def test_a_conversation_without_memory_is_always_held() -> None:
    # GIVEN a runner without chat memory THEN any turn holds its (untracked) conversation
    assert holds(None, Turn(id="t1", conversation_id="c1", agent_id="a", agent_version="1"))


def test_the_stored_status_of_an_unreadable_turn_is_read_only_when_it_is_a_known_one() -> None:
    # GIVEN unreadable turns with a known, an unknown and no stored status
    # THEN only the known one is given a status
    assert stored_status(SnapshotUnreadableError("t1", "x", status="FAILED")) is TurnStatus.FAILED
    assert stored_status(SnapshotUnreadableError("t1", "x", status="EXPLODED")) is None
    assert stored_status(SnapshotUnreadableError("t1", "x")) is None


def _completed(turn_id: str, *, tool: bool = True) -> Turn:
    """A COMPLETED turn: input, (a tool call and its result,) the answer."""
    turn = Turn(id=turn_id, conversation_id="c1", agent_id="a", agent_version="1", status=TurnStatus.COMPLETED)
    turn.messages.append(stamp(turn, UserMessage(content=f"from {turn_id}")))
    if tool:
        turn.messages.append(stamp(turn, AiMessage(content="", tool_calls=[ToolCall(id="c", name="x", arguments={})])))
        turn.messages.append(stamp(turn, ToolMessage(tool_call_id="c", content="ok", tool_name="x")))
    turn.messages.append(stamp(turn, AiMessage(content=f"answer of {turn_id}")))
    return turn
