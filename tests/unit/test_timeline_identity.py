"""A stored snapshot leaves out the timeline identity its turn implies, and reads back the same turn (pure)."""

from __future__ import annotations

import json

from pydantic import TypeAdapter

from agentturn.ports.serializer import JSON
from agentturn.state.messages import AiMessage, FormMessage, ToolCall, UserMessage
from agentturn.state.turn import SCHEMA_VERSION, Turn
from agentturn.testing.builders import new_turn
from agentturn.timeline.identity import place, stamp

_TURN = TypeAdapter(Turn)


def _waiting_turn() -> Turn:
    """A turn whose model asked for a form: the user's message, the AI message with the call, and its card."""
    turn = new_turn(text="book a room")
    call = ToolCall(id="call-1", name="request_user_input", arguments={"formKey": "room"})
    turn.messages.append(stamp(turn, AiMessage(content="", tool_calls=[call])))
    card = FormMessage(action_id="call-1", form_key="room", schema={"type": "object"})
    turn.cards.append(place(turn, card))
    return turn


def test_a_snapshot_leaves_out_every_implied_id_and_reads_back_the_same_turn() -> None:
    # GIVEN a waiting turn whose messages and card carry the identity their turn gives them
    turn = _waiting_turn()

    # WHEN it is written as a store writes it, and read back
    text = JSON.dumps(turn)
    loaded = JSON.loads(text, _TURN)

    # THEN the text names the turn once (no message id, turn id or sort key per entry) ...
    assert text.count(turn.id) == 1
    stored = json.loads(text)
    for entry in [*stored["messages"], *stored["cards"]]:
        assert not {"messageId", "turnId", "sortKey"} & set(entry)
    # ... AND the turn read back is the turn written, ids and sort keys included
    assert loaded == turn
    assert [m.message_id for m in loaded.messages] == [f"{turn.id}:m:00000", f"{turn.id}:m:00001"]
    assert loaded.cards[0].sort_key == f"{loaded.messages[1].sort_key}.00"


def test_an_entry_with_an_identity_of_its_own_keeps_it() -> None:
    # GIVEN a turn with a message whose id is not the one its position implies, and a card placed elsewhere
    turn = _waiting_turn()
    turn.messages.append(UserMessage(content="imported", message_id="legacy-7", turn_id=turn.id, sort_key="zz"))
    turn.cards[0] = turn.cards[0].model_copy(update={"sort_key": "custom"})

    # WHEN it is written and read back
    loaded = JSON.loads(JSON.dumps(turn), _TURN)

    # THEN those entries keep exactly what they had, and the others still get theirs
    assert loaded == turn
    assert loaded.messages[2].message_id == "legacy-7"
    assert loaded.cards[0].sort_key == "custom"


def test_an_older_snapshot_with_every_id_written_out_reads_the_same_and_is_written_back_in_this_shape() -> None:
    # GIVEN the text of a schemaVersion 2 snapshot, which wrote every id out
    turn = _waiting_turn()
    older = turn.model_copy(update={"schema_version": 2}).model_dump_json(by_alias=True)

    # WHEN it is read, and written back
    loaded = JSON.loads(older, _TURN)
    rewritten = json.loads(JSON.dumps(loaded))

    # THEN it reads as the same turn, and is written as this version (so no older reader takes the left-out
    # ids for empty ones: it refuses a newer schemaVersion)
    assert loaded.model_copy(update={"schema_version": SCHEMA_VERSION}) == turn
    assert rewritten["schemaVersion"] == SCHEMA_VERSION == 3
    assert "messageId" not in rewritten["messages"][0]
