"""A completed turn's answer reaches the timeline last, after its cards: the answer there tells the next start
that the turn ended with its timeline whole (``conversation_lock.ended_turn``)."""

from __future__ import annotations

from typing import Any

import pytest

from agentturn import AiMessage, InMemoryChatMemory, ToolCall, ToolMessage, Turn, TurnStatus, UserMessage
from agentturn.engine.conversation_lock import ended_turn
from agentturn.state.messages import FormMessage, FormStatus
from agentturn.state.turn import ToolCallState
from agentturn.timeline.identity import place, stamp
from agentturn.timeline.projection import project


def _completed_with_a_card_to_write(known: int = 3) -> tuple[Turn, InMemoryChatMemory]:
    """A COMPLETED turn whose timeline holds all but its answer, and its card one version behind; the mark knows
    the first ``known`` messages there."""
    turn = Turn(id="t1", conversation_id="c1", agent_id="a", agent_version="1", status=TurnStatus.COMPLETED)
    turn.messages.append(stamp(turn, UserMessage(content="book")))
    turn.messages.append(stamp(turn, AiMessage(tool_calls=[ToolCall(id="call-1", name="book", arguments={})])))
    card = place(turn, FormMessage(action_id="call-1", form_key="f", schema={"type": "object"}))
    turn.messages.append(stamp(turn, ToolMessage(tool_call_id="call-1", content="ok", tool_name="book")))
    turn.messages.append(stamp(turn, AiMessage(content="booked")))
    memory = InMemoryChatMemory()
    memory("c1").append_all(turn.messages[:-1])
    memory("c1").append(card)
    turn.cards = [card.model_copy(update={"version": 2, "status": FormStatus.CANCELLED})]
    turn.projection.messages = known
    turn.projection.cards = {card.message_id: 1}
    return turn, memory


def _recording(memory: InMemoryChatMemory) -> list[list[str]]:
    """The writes made to conversation c1 from now on: each a list of what it carried (a card with its version)."""
    conversation = memory("c1")
    writes: list[list[str]] = []
    update, append_all = conversation.update_message, conversation.append_all

    def updating(message: Any, expected_version: int) -> bool:
        writes.append([f"card v{message.version}"])
        return update(message, expected_version)

    def appending(messages: Any) -> None:
        writes.append([f"card v{m.version}" if isinstance(m, FormMessage) else m.type for m in messages])
        append_all(messages)

    conversation.update_message = updating  # type: ignore[method-assign]
    conversation.append_all = appending  # type: ignore[method-assign]
    return writes


def test_a_completed_turns_settled_card_rides_with_its_answer() -> None:
    # GIVEN a completed turn whose settled card and answer are not in the timeline at their latest yet
    turn, memory = _completed_with_a_card_to_write()
    writes = _recording(memory)

    # WHEN it is projected
    project(turn, memory("c1"))

    # THEN one batch carried the card before the answer, and the timeline now shows the card and the end
    assert writes == [["card v2", "ai"]]
    assert ended_turn(memory("c1").get_messages()) == "t1"
    [shown] = [m for m in memory("c1").get_messages() if isinstance(m, FormMessage)]
    assert (shown.status, shown.version) == (FormStatus.CANCELLED, 2)
    assert turn.projection.cards == {shown.message_id: 2} and turn.projection.messages == 4


def test_a_completed_turns_answer_is_written_after_a_card_that_cannot_ride() -> None:
    # GIVEN the same turn whose mark does not know the card's call to be in the timeline
    turn, memory = _completed_with_a_card_to_write(known=1)
    writes = _recording(memory)

    # WHEN it is projected
    project(turn, memory("c1"))

    # THEN the messages up to the answer went first, then the card on its own, and the answer after it
    assert writes == [["ai", "tool"], ["card v2"], ["ai"]]
    assert ended_turn(memory("c1").get_messages()) == "t1"


def test_a_completed_turn_whose_card_cannot_be_written_shows_no_end() -> None:
    # GIVEN the same turn, and a timeline that refuses the batch carrying the card
    turn, memory = _completed_with_a_card_to_write()
    conversation = memory("c1")

    def down(messages: Any) -> None:
        raise ConnectionError("timeline down")

    conversation.append_all = down  # type: ignore[method-assign]

    # WHEN it is projected
    with pytest.raises(ConnectionError):
        project(turn, conversation)

    # THEN the answer was not written either: the next start reads the turn instead of taking its end as shown
    assert [m.type for m in memory("c1").get_model_messages()] == ["user", "ai", "tool"]
    assert ended_turn(memory("c1").get_messages()) is None


def test_a_card_whose_values_were_redacted_is_written_at_its_place_not_carried() -> None:
    # GIVEN the completed turn whose settled card was redacted (an older version may still show the values)
    turn, memory = _completed_with_a_card_to_write()
    [card] = turn.cards
    turn.cards = [card.model_copy(update={"status": FormStatus.SUBMITTED, "values_redacted": True})]
    writes = _recording(memory)

    # WHEN it is projected
    project(turn, memory("c1"))

    # THEN the card replaced its older version where it is, before the answer went on its own
    assert writes == [["card v2"], ["ai"]]


def test_a_redacted_card_nobody_projected_since_it_was_pending_is_one_write() -> None:
    # GIVEN the completed turn whose card went from pending to redacted (version 3) in saves that projected
    # nothing, so the snapshot's mark knows nothing of it
    turn, memory = _completed_with_a_card_to_write()
    [card] = turn.cards
    turn.cards = [card.model_copy(update={"status": FormStatus.SUBMITTED, "values_redacted": True, "version": 3})]
    turn.projection.cards = {}
    writes = _recording(memory)

    # WHEN it is projected
    project(turn, memory("c1"))

    # THEN the first guess (its pending version) held: one card write, then the answer
    assert writes == [["card v3"], ["ai"]]
    [shown] = [m for m in memory("c1").get_messages() if isinstance(m, FormMessage)]
    assert (shown.version, shown.values_redacted) == (3, True)


def test_a_card_whose_tool_has_not_completed_is_not_carried() -> None:
    # GIVEN a turn whose submitted card's tool still holds the data (its completion may redact the card)
    turn, memory = _completed_with_a_card_to_write()
    turn.status = TurnStatus.RUNNING
    [card] = turn.cards
    turn.cards = [card.model_copy(update={"status": FormStatus.SUBMITTED})]
    turn.tool_states["call-1"] = ToolCallState(submitted_form_data={"city": "Oslo"})
    writes = _recording(memory)

    # WHEN it is projected
    project(turn, memory("c1"))

    # THEN the messages went in a batch of their own, and the card was written at its own place
    assert writes == [["ai"], ["card v2"]]
