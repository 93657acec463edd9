"""Projection of a turn snapshot into its conversation timeline.

The snapshot is the truth; the timeline follows it. Each save records in ``turn.projection`` what the projection
right after it writes: every message of the turn, and every card at its version (:func:`record`). The projection
then writes what changed since the record of the save before (:func:`project`): the new messages in one batch,
then each card that changed, by a compare-and-set on the version that earlier record holds
(:func:`agentturn.timeline.cards.write_card`). A crash between a save and its projection leaves the timeline
behind the record: the next read of the timeline repairs it, and so does the next start in the conversation
(:mod:`agentturn.timeline.repair`).
"""

from __future__ import annotations

from agentturn.ports.memory import ChatMemory
from agentturn.state.turn import ProjectionMark, Turn
from agentturn.timeline.cards import write_card


def full_mark(turn: Turn) -> ProjectionMark:
    """The record of a timeline that holds all of ``turn``."""
    return ProjectionMark(messages=len(turn.messages), cards={card.message_id: card.version for card in turn.cards})


def record(turn: Turn) -> ProjectionMark:
    """Record in ``turn`` that its timeline will hold all of it (the save that follows carries the record);
    returns the record it held before, which :func:`project` writes the difference from."""
    before = turn.projection
    turn.projection = full_mark(turn)
    return before


def changes_cards(turn: Turn) -> bool:
    """Whether ``turn`` holds a card its record does not hold at its version (a new or changed card)."""
    return any(turn.projection.cards.get(card.message_id) != card.version for card in turn.cards)


def project(turn: Turn, memory: ChatMemory, *, since: ProjectionMark) -> None:
    """Write what ``turn`` holds beyond the record ``since``: its new messages (one batch), then each new or
    changed card. Messages go first, so that a card never shows before the call that made it."""
    fresh = turn.messages[since.messages :]
    if fresh:
        memory.append_all(fresh)
    for card in turn.cards:
        known = since.cards.get(card.message_id, 0)
        if card.version > known:
            write_card(memory, card, known)
