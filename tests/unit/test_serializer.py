"""The injectable serializer: a wrapper (here a stand-in for encryption) changes what is at rest, not what
the stores return; a serializer whose text does not read back as the turn is caught before anything is stored."""

from __future__ import annotations

from typing import TypeVar

import pytest
from pydantic import BaseModel, TypeAdapter
from tests.support.sealing import SealingSerializer

from agentturn.errors import SnapshotRoundTripError
from agentturn.ports.memory import InMemoryChatMemory
from agentturn.ports.serializer import JSON
from agentturn.ports.store import InMemoryTurnStore
from agentturn.state.messages import FormMessage
from agentturn.state.turn import Turn

SECRET = "4111-1111-1111-1111"
T = TypeVar("T")


def _turn() -> Turn:
    return Turn(id="t-1", conversation_id="c-1", agent_id="a", agent_version="1", metadata={"card": SECRET})


def test_a_wrapping_serializer_seals_turn_snapshots_at_rest_and_the_store_reads_them_back() -> None:
    # GIVEN an in-memory store whose serializer wraps JSON
    sealing = SealingSerializer(JSON)
    store = InMemoryTurnStore(serializer=sealing)

    # WHEN a turn holding a secret is created, saved and loaded
    created = store.create(_turn())
    store.save(created.model_copy(update={"metadata": {"card": SECRET, "step": "2"}}), expected_version=1)
    loaded = store.load("t-1")

    # THEN the store returns the data as it was, and no text it stored holds the secret in the clear
    assert loaded.metadata == {"card": SECRET, "step": "2"}
    assert loaded.version == 2
    assert len(sealing.sealed) == 2
    assert all(SECRET not in text and "t-1" not in text for text in sealing.sealed)


def test_a_wrapping_serializer_seals_timeline_entries_at_rest() -> None:
    # GIVEN an in-memory chat memory whose serializer wraps JSON
    sealing = SealingSerializer(JSON)
    conversation = InMemoryChatMemory(serializer=sealing)("c-1")
    card = FormMessage(
        message_id="m-1",
        sort_key="0001",
        turn_id="t-1",
        action_id="a-1",
        form_key="payment",
        schema={"type": "object"},
        submitted_values={"card": SECRET},
    )

    # WHEN a card with submitted data is appended and read back
    assert conversation.append(card)
    read = conversation.get_message("m-1")

    # THEN it reads back equal, and what was stored does not show the data
    assert read == card
    assert sealing.sealed and all(SECRET not in text for text in sealing.sealed)


class _DroppingMetadata:
    """A faulty serializer: what it writes reads back without the turn's metadata."""

    def dumps(self, value: BaseModel) -> str:
        if isinstance(value, Turn):
            value = value.model_copy(update={"metadata": {}})
        return JSON.dumps(value)

    def loads(self, text: str, schema: TypeAdapter[T]) -> T:
        return JSON.loads(text, schema)


def test_a_write_whose_text_does_not_read_back_as_the_turn_is_refused_and_nothing_changes() -> None:
    # GIVEN an in-memory store (it checks every write's round trip by default) over a serializer that loses data,
    # and a turn created before the loss mattered
    store = InMemoryTurnStore(serializer=_DroppingMetadata())
    created = store.create(_turn().model_copy(update={"metadata": {}}))

    # WHEN a save would store text that reads back without the metadata
    with pytest.raises(SnapshotRoundTripError) as raised:
        store.save(created.model_copy(update={"metadata": {"card": SECRET}}), expected_version=1)

    # THEN the error names the turn and the field that differs, and the stored turn is still the created one
    assert (raised.value.turn_id, raised.value.field) == ("t-1", "metadata")
    assert store.load("t-1") == created


def test_a_store_built_without_the_check_returns_the_turn_it_wrote_and_load_reads_the_text() -> None:
    # GIVEN the same faulty serializer, with the check turned off (as the production store runs)
    store = InMemoryTurnStore(serializer=_DroppingMetadata(), check_round_trip=False)

    # WHEN a turn with metadata is created
    created = store.create(_turn())

    # THEN the write returns the turn as given (not decoded again), while a load sees what the text holds
    assert created.metadata == {"card": SECRET}
    assert store.load("t-1").metadata == {}
