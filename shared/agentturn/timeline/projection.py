"""Projection of a turn snapshot into its conversation timeline.

The snapshot is the truth; the timeline converges to it. Every entry has a deterministic id and sort key,
so projecting the same snapshot twice changes nothing, and a projection that failed (a crash, a throttled
write) is repaired by the next one: ``turn.projection`` records only what is known to be in the timeline.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentturn.ports.memory import ChatMemory
from agentturn.state.messages import ApprovalMessage, CardMessage, FormMessage, TimelineMessage, is_settled
from agentturn.state.turn import Turn, TurnStatus


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
    a failed append, a read and a write; the CAS checks the guess. A redacted card is guessed at its first
    version: the answer it was redacted with (or after) was left to the run's projection, which writes a redacted
    card at its own place only (:func:`_riding`), so the timeline most likely still shows it pending.

    When it holds, the timeline also holds the messages up to the one that made the card's call: every
    projection appends a turn's messages before its cards (:func:`project`), and those messages never change
    once saved. So the mark advances over them too, and they are not written again.
    """
    redacted = isinstance(card, FormMessage) and card.values_redacted
    if not memory.update_message(card, expected_version=1 if redacted else card.version - 1):
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
    return messages_projected(turn) and cards_projected(turn)


def messages_projected(turn: Turn) -> bool:
    """Whether the timeline is known to hold every message of ``turn``."""
    return turn.projection.messages >= len(turn.messages)


def cards_projected(turn: Turn) -> bool:
    """Whether the timeline is known to hold every card of ``turn`` at its version."""
    return all(turn.projection.cards.get(c.message_id) == c.version for c in turn.cards)


def confirm_shown(turn: Turn, shown: Sequence[TimelineMessage]) -> None:
    """Take a read of the timeline as a receipt: the latest of ``turn``'s messages it shows is there, and so is
    every message of the turn before it (a projection appends a turn's messages in order, each batch after the
    mark of what the timeline held). The mark advances over them; a read that shows none changes nothing."""
    shown_ids = {message.message_id for message in shown if message.turn_id == turn.id}
    for index in range(len(turn.messages) - 1, turn.projection.messages - 1, -1):
        if turn.messages[index].message_id in shown_ids:
            turn.projection.messages = index + 1
            return


def mark_projected(turn: Turn) -> None:
    """Accept a receipt that the timeline holds all of ``turn``: the next projection writes only what is new."""
    turn.projection.messages = len(turn.messages)
    turn.projection.cards = {card.message_id: card.version for card in turn.cards}


def _final(turn: Turn, card: CardMessage) -> bool:
    """Whether ``card`` will never change again: settled, and not waiting for its tool. A tool-requested form's
    card may still lose its values when that tool completes (``ExecutionPolicy.redact_submitted_values``),
    until then its tool state holds the submitted data."""
    state = turn.tool_states.get(card.action_id)
    return is_settled(card) and (state is None or state.submitted_form_data is None)


def _riding(turn: Turn) -> list[CardMessage]:
    """The final cards the timeline is not known to hold at their version whose call it is known to hold, when
    the turn has messages to append: they ride in those messages' batch (:meth:`ChatMemory.append_all`), at no
    write of their own. A card whose call is not known there is guessed instead (:func:`_confirm_previous`): if
    the guess holds, it spares appending the messages before that call again. A card whose values were redacted
    is written at its own place, over any version that still shows them."""
    mark = turn.projection
    if messages_projected(turn):
        return []
    return [
        card
        for card in turn.cards
        if _final(turn, card)
        and not (isinstance(card, FormMessage) and card.values_redacted)
        and card.version > mark.cards.get(card.message_id, 0)
        and _made_after(turn, card) <= mark.messages
    ]


def project(turn: Turn, memory: ChatMemory) -> None:
    """Bring the timeline up to ``turn``; advances ``turn.projection`` for what was written.

    Messages go before cards, so that a card in the timeline vouches for the messages before its call (see
    :func:`_confirm_previous`); only a card already there at its previous version is written first. A settled
    card rides with the messages after its call (:func:`_riding`). A COMPLETED turn's answer goes after its
    cards: the answer in the timeline tells the next start that the turn ended with its timeline whole
    (:func:`~agentturn.engine.conversation_lock.ended_turn`).
    """
    mark = turn.projection
    riding = {card.message_id: card for card in _riding(turn)}
    guessed: set[str] = set()
    for card in turn.cards:
        if mark.cards.get(card.message_id, 0) == 0 and card.version > 1 and card.message_id not in riding:
            guessed.add(card.message_id)
            if _confirm_previous(memory, turn, card):
                mark.cards[card.message_id] = card.version
    fresh = turn.messages[mark.messages :]
    left = [c for c in turn.cards if c.message_id not in riding and c.version > mark.cards.get(c.message_id, 0)]
    answer_last = bool(fresh) and turn.status is TurnStatus.COMPLETED and bool(left)
    if answer_last:
        fresh = fresh[:-1]
    if fresh or riding:
        memory.append_all([*riding.values(), *fresh])
        mark.messages += len(fresh)
        mark.cards.update({card.message_id: card.version for card in riding.values()})
    for card in left:
        known = mark.cards.get(card.message_id, 0)
        # A wrong guess: the card is not at its previous version, so it is looked up rather than appended.
        _sync_card(memory, card, known, guessed_wrong=card.message_id in guessed)
        mark.cards[card.message_id] = card.version
    if answer_last:
        memory.append_all(turn.messages[-1:])
        mark.messages = len(turn.messages)
