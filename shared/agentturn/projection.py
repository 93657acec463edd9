"""Projection of a turn snapshot into its conversation timeline.

The snapshot is the truth; the timeline converges to it. Every entry has a deterministic id and sort key,
so projecting the same snapshot twice changes nothing, and a projection that failed (a crash, a throttled
write) is repaired by the next one: ``turn.projection`` records only what is known to be in the timeline.
"""

from __future__ import annotations

from agentturn.memory import ChatMemory
from agentturn.messages import ApprovalMessage, CardMessage, FormMessage
from agentturn.state import Turn, TurnStatus


def _made_after(turn: Turn, card: CardMessage) -> int:
    """How many of the turn's messages existed when ``card`` was made: those up to the AI message that made
    its call (0 when no message made it)."""
    for index, message in enumerate(turn.messages):
        if message.type == "ai" and any(call.id == card.action_id for call in message.tool_calls):
            return index + 1
    return 0


def _confirm_previous(memory: ChatMemory, turn: Turn, card: CardMessage) -> bool:
    """A card that has changed since it was made was almost surely appended already: the mark of a blocked
    turn is one save behind (the card is projected after the save that suspended the turn, and nothing saves
    again until the answer). Trying the previous version first makes an answer one conditional write instead of
    a failed append, a read and a write; the CAS checks the guess.

    When it holds, the timeline also holds the messages up to the one that made the card's call: every
    projection appends a turn's messages before its cards (:func:`project`), and those messages never change
    once saved. So the mark advances over them too, and they are not written again.
    """
    if not memory.update_message(card, expected_version=card.version - 1):
        return False
    turn.projection.messages = max(turn.projection.messages, _made_after(turn, card))
    return True


def _write_as_known(memory: ChatMemory, card: CardMessage, known_version: int) -> bool:
    """Append the card if it was never written, else move it on from the version the mark knows."""
    if known_version == 0:
        return memory.append(card)
    return memory.update_message(card, expected_version=known_version)


def _sync_card(memory: ChatMemory, card: CardMessage, known_version: int, *, guessed_wrong: bool) -> None:
    # After a wrong guess the card is neither absent nor at its previous version: only a look tells where it is.
    if not guessed_wrong and _write_as_known(memory, card, known_version):
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
    return mark.messages == len(turn.messages) and cards_projected(turn)


def cards_projected(turn: Turn) -> bool:
    """Whether the timeline is known to hold every card of ``turn`` at its version."""
    return all(turn.projection.cards.get(c.message_id) == c.version for c in turn.cards)


def mark_projected(turn: Turn) -> None:
    """Accept a receipt that the timeline holds all of ``turn``: the next projection writes only what is new."""
    turn.projection.messages = len(turn.messages)
    turn.projection.cards = {card.message_id: card.version for card in turn.cards}


def project(turn: Turn, memory: ChatMemory) -> None:
    """Bring the timeline up to ``turn``; advances ``turn.projection`` for what was written.

    Messages go before cards, so that a card in the timeline vouches for the messages before its call (see
    :func:`_confirm_previous`); only a card already there at its previous version is written first. A
    COMPLETED turn's answer goes after its cards: the answer in the timeline tells the next start that the turn
    ended with its timeline whole (:func:`~agentturn.conversation_lock.ended_turn`).
    """
    mark = turn.projection
    guessed: set[str] = set()
    for card in turn.cards:
        if mark.cards.get(card.message_id, 0) == 0 and card.version > 1:
            guessed.add(card.message_id)
            if _confirm_previous(memory, turn, card):
                mark.cards[card.message_id] = card.version
    fresh = turn.messages[mark.messages :]
    answer_last = bool(fresh) and turn.status is TurnStatus.COMPLETED and not cards_projected(turn)
    if answer_last:
        fresh = fresh[:-1]
    if fresh:
        memory.append_all(fresh)
        mark.messages += len(fresh)
    for card in turn.cards:
        known = mark.cards.get(card.message_id, 0)
        if card.version > known:
            # A wrong guess: the card is not at its previous version, so it is looked up rather than appended.
            _sync_card(memory, card, known, guessed_wrong=card.message_id in guessed)
            mark.cards[card.message_id] = card.version
    if answer_last:
        memory.append_all(turn.messages[-1:])
        mark.messages = len(turn.messages)
