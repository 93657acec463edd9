"""Making a conversation's timeline whole again when the projection of its active turn was lost."""

from __future__ import annotations

from collections.abc import Iterable

from agentturn.conversation_lock import ended_turn
from agentturn.errors import SnapshotUnreadableError, TurnNotFoundError
from agentturn.memory import ChatMemory
from agentturn.messages import TimelineMessage
from agentturn.projection import project
from agentturn.store import TurnStore


def repair_timeline(store: TurnStore, memory: ChatMemory, visible: Iterable[TimelineMessage]) -> bool:
    """See :meth:`Runner.repair_timeline`: whether anything was written."""
    entries = list(visible)
    active = memory.get_active_turn()
    if active is None or active == ended_turn(entries):
        # No turn holds the conversation, or the one named there completed with its timeline whole.
        return False
    try:
        turn = store.load(active)
    except (TurnNotFoundError, SnapshotUnreadableError):
        # Nothing to re-project from a snapshot that cannot be read (its attempts end it, freeing this).
        return False
    shown = {message.message_id for message in entries}
    missing_card = any(card.message_id not in shown for card in turn.pending_cards())
    if not (missing_card or turn.status.is_terminal):
        return False
    project(turn, memory)
    if turn.status.is_terminal:
        memory.set_active_turn(None, expected=turn.id)
    return True
