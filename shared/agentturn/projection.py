"""Projection of a turn snapshot into its conversation timeline.

The snapshot is the truth; the timeline converges to it. Every entry has a deterministic id and sort key,
so projecting the same snapshot twice changes nothing, and a projection that failed (a crash, a throttled
write) is repaired by the next one: ``turn.projection`` records only what is known to be in the timeline.
"""

from __future__ import annotations

from agentturn.memory import ChatMemory
from agentturn.messages import ApprovalMessage, CardMessage, FormMessage, ModelMessage
from agentturn.state import Turn


def message_sort_key(turn: Turn, index: int) -> str:
    return f"{turn.timeline_prefix}#{index:05d}"


def card_sort_key(turn: Turn, call_id: str) -> str:
    """Right after the AI message that made the call, before whatever came next."""
    for index, message in enumerate(turn.messages):
        if message.type == "ai":
            for position, call in enumerate(message.tool_calls):
                if call.id == call_id:
                    return f"{message_sort_key(turn, index)}.{position:02d}"
    return f"{message_sort_key(turn, len(turn.messages))}.00"


def stamp(turn: Turn, message: ModelMessage) -> ModelMessage:
    """Give a new message of the turn its timeline identity (id, turn, position)."""
    index = len(turn.messages)
    return message.model_copy(
        update={
            "message_id": f"{turn.id}:m:{index:05d}",
            "turn_id": turn.id,
            "sort_key": message_sort_key(turn, index),
        }
    )


def _sync_card(memory: ChatMemory, card: CardMessage, known_version: int) -> None:
    if known_version == 0 and card.version > 1:
        # A card that has changed since it was made was almost surely appended already: the mark of a
        # blocked turn is one save behind (the card is projected after the save that suspended the turn,
        # and nothing saves again until the answer). Trying the previous version first makes an answer
        # one conditional write instead of a failed append, a read and a write; the CAS checks the guess.
        known_version = card.version - 1
    elif known_version == 0 and memory.append(card):
        return
    if known_version and memory.update_message(card, expected_version=known_version):
        return
    # The timeline is not where we thought (an earlier write landed but was not recorded, or was lost):
    # read it once and bring it to the snapshot's version.
    current = memory.get_message(card.message_id)
    if current is None:
        memory.append(card)
        return
    if not isinstance(current, FormMessage | ApprovalMessage):
        raise TypeError(f"timeline entry {card.message_id!r} is not a card")
    if current.version >= card.version:
        return
    if not memory.update_message(card, expected_version=current.version):
        raise RuntimeError(f"card {card.message_id!r} changed while being repaired")


def is_projected(turn: Turn) -> bool:
    """Whether this process knows the timeline to hold all of ``turn`` (its marks cover everything)."""
    mark = turn.projection
    return mark.messages == len(turn.messages) and all(mark.cards.get(c.message_id) == c.version for c in turn.cards)


def mark_projected(turn: Turn) -> None:
    """Accept a receipt that the timeline holds all of ``turn``: the next projection writes only what is new."""
    turn.projection.messages = len(turn.messages)
    turn.projection.cards = {card.message_id: card.version for card in turn.cards}


def project(turn: Turn, memory: ChatMemory) -> None:
    """Bring the timeline up to ``turn``; advances ``turn.projection`` for what was written."""
    mark = turn.projection
    fresh = turn.messages[mark.messages :]
    if fresh:
        memory.append_all(fresh)
        mark.messages = len(turn.messages)
    for card in turn.cards:
        known = mark.cards.get(card.message_id, 0)
        if card.version > known:
            _sync_card(memory, card, known)
            mark.cards[card.message_id] = card.version
