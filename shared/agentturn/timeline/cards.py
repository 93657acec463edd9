"""The one place that writes a card to the timeline (the seed's compare-and-set on the expected version)."""

from __future__ import annotations

from agentturn.ports.memory import ChatMemory
from agentturn.state.messages import ApprovalMessage, CardMessage, FormMessage


class CardMovedError(RuntimeError):
    """A card changed in the timeline while it was being brought to its snapshot's version."""

    def __init__(self, message_id: str) -> None:
        super().__init__(message_id)
        self.message_id = message_id

    def __str__(self) -> str:
        return f"card {self.message_id!r} changed while being written"


def write_card(memory: ChatMemory, card: CardMessage, known_version: int) -> None:
    """Bring the timeline's copy of ``card`` to ``card.version``: appended when ``known_version`` is 0, else
    moved on from ``known_version`` by compare-and-set.

    When the timeline is not where the caller knew it (an earlier write was lost in a crash, or a repair runs),
    one read says where it is: absent, it is appended; at this version or a later one, nothing is written; at an
    older one, it is moved on from there.
    """
    if known_version == 0:
        if memory.append(card):
            return
    elif memory.update_message(card, expected_version=known_version):
        return
    current = memory.get_message(card.message_id)
    if current is None:
        memory.append(card)
        return
    if not isinstance(current, FormMessage | ApprovalMessage):
        raise TypeError(f"timeline entry {card.message_id!r} is not a card")
    if current.version >= card.version:
        return
    if not memory.update_message(card, expected_version=current.version):
        raise CardMovedError(card.message_id)
