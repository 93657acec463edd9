"""The injectable serializer: a wrapper (here a stand-in for encryption) changes what is at rest, not what
the stores return."""

from __future__ import annotations

from tests.support.sealing import SealingSerializer

from agentturn.memory import InMemoryChatMemory
from agentturn.messages import FormMessage
from agentturn.serializer import JSON
from agentturn.state import Turn
from agentturn.store import InMemoryTurnStore

SECRET = "4111-1111-1111-1111"


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
