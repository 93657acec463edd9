"""One turn at a time in a conversation (in-memory store and chat memory)."""

from __future__ import annotations

import pytest

from agentturn import (
    AiMessage,
    FormMessage,
    InMemoryChatMemory,
    InMemoryTurnStore,
    ToolCall,
    ToolMessage,
    Turn,
    TurnStatus,
    UserMessage,
)
from agentturn.engine.conversation_lock import (
    ENDED_TURN_PROBE,
    ConversationLock,
    ended_turn,
    frees_by_its_end,
    holds,
    stored_status,
)
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


def test_the_timeline_shows_a_turns_completed_end_only_when_it_holds_that_turn_whole() -> None:
    # GIVEN an earlier turn and the latest one, both completed, and a card of the latest
    earlier, latest = _completed("t1", tool=False), _completed("t2")
    card = FormMessage(
        message_id="t2:input:c", turn_id="t2", sort_key=latest.messages[1].sort_key + ".00", action_id="c",
        form_key="f", schema={"type": "object"},
    )  # fmt: skip
    whole = [*earlier.messages, *latest.messages[:2], card, *latest.messages[2:]]

    # THEN the whole timeline (cards are not messages of the model) shows the latest turn ended
    assert ended_turn(whole) == "t2"
    # AND nothing shows it with a message of the turn missing, before the answer or at its first
    assert ended_turn([m for m in whole if m is not latest.messages[2]]) is None
    assert ended_turn(whole[len(earlier.messages) + 1 :]) is None
    # AND nothing while the latest message calls a tool (the turn is still running) or is not the turn's answer
    assert ended_turn(whole[:-1]) is None
    assert ended_turn([*earlier.messages, *latest.messages[:1]]) is None
    # AND nothing from a message without the identity its turn implies, or from an empty timeline
    assert ended_turn([*whole[:-1], whole[-1].model_copy(update={"message_id": "own-id"})]) is None
    assert ended_turn([]) is None


def test_a_completed_turn_that_the_timeline_shows_ended_is_taken_over_in_one_write_without_reading_it() -> None:
    # GIVEN a conversation still naming a completed turn whose whole timeline shows its end
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    done = store.create(_completed("t1"))
    memory("c1").set_active_turn("t1", expected=None)
    memory("c1").append_all(done.messages)
    newcomer = stored(store, "t2")
    loads: list[str] = []
    load = store.load
    store.load = lambda turn_id: loads.append(turn_id) or load(turn_id)  # type: ignore[method-assign]

    # WHEN a new turn takes the conversation, told which turn the timeline shows ended
    ConversationLock(store).take(memory("c1"), newcomer, ended=ended_turn(memory("c1").get_messages()))

    # THEN it holds it, and the ended turn was never read
    assert memory("c1").get_active_turn() == "t2"
    assert loads == []


def test_a_running_turn_is_not_taken_over_even_when_a_stale_read_named_an_earlier_end() -> None:
    # GIVEN a completed turn, then a running one that took the conversation over but has no message in the
    # timeline yet (so a read still ends with the completed turn's answer)
    store, memory = InMemoryTurnStore(), InMemoryChatMemory()
    done = store.create(_completed("t1"))
    memory("c1").append_all(done.messages)
    memory("c1").set_active_turn("t1", expected=None)
    lock = ConversationLock(store)
    lock.take(memory("c1"), stored(store, "t2", TurnStatus.RUNNING), ended="t1")
    newcomer = stored(store, "t3")

    # WHEN a third turn tries to take it with what the timeline shows
    assert ended_turn(memory("c1").get_messages()) == "t1"
    with pytest.raises(ConversationBusyError):
        lock.take(memory("c1"), newcomer, ended="t1")

    # THEN the running turn keeps it
    assert memory("c1").get_active_turn() == "t2"


def test_a_completed_turn_longer_than_every_start_reads_shows_no_end_and_lets_go_instead() -> None:
    # GIVEN a completed turn of more messages than a start reads at least, its timeline whole
    turn = Turn(id="t1", conversation_id="c1", agent_id="a", agent_version="1", status=TurnStatus.COMPLETED)
    turn.messages.append(stamp(turn, UserMessage(content="go")))
    for n in range(ENDED_TURN_PROBE // 2):
        call = ToolCall(id=f"c{n}", name="x", arguments={})
        turn.messages.append(stamp(turn, AiMessage(content="", tool_calls=[call])))
        turn.messages.append(stamp(turn, ToolMessage(tool_call_id=call.id, content="ok", tool_name="x")))
    turn.messages.append(stamp(turn, AiMessage(content="done")))
    assert len(turn.messages) > ENDED_TURN_PROBE

    # THEN even the whole timeline shows no end (a start reading only the probe could not see it whole), and
    # the turn is one that lets go of its conversation when it ends; a short completed one is not
    assert ended_turn(turn.messages) is None
    assert not frees_by_its_end(turn)
    assert frees_by_its_end(_completed("t2"))
