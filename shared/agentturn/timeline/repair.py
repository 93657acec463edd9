"""Making a conversation's timeline whole again when the projection of its active turn was lost."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentturn.engine.conversation_lock import ended_turn
from agentturn.errors import SnapshotUnreadableError, TurnNotFoundError
from agentturn.ports.memory import ChatMemory
from agentturn.ports.store import TurnStore
from agentturn.state.messages import ApprovalMessage, CardMessage, FormMessage, TimelineMessage
from agentturn.timeline.projection import project


@dataclass(frozen=True)
class Repair:
    """What :func:`repair` did, and what it read on the way."""

    #: whether anything was written
    wrote: bool
    #: the turn that holds the conversation after the repair: ``None`` when none does (or the one named there
    #: completed and the timeline shows its end)
    holder: str | None
    #: the cards of the holder's snapshot, when it was read and nothing written: the truth for a card the
    #: timeline shows at an older version (an answered card reaches the timeline with its turn's next run)
    cards: tuple[CardMessage, ...] = ()


def repair(store: TurnStore, memory: ChatMemory, visible: Iterable[TimelineMessage]) -> Repair:
    """See :meth:`Runner.repair_timeline`; also who holds the conversation, so that a reader of the timeline
    need not read the conversation's head a second time."""
    entries = list(visible)
    active = memory.get_active_turn()
    if active is None or active == ended_turn(entries):
        # No turn holds the conversation, or the one named there completed with its timeline whole.
        return Repair(wrote=False, holder=None)
    try:
        turn = store.load(active)
    except (TurnNotFoundError, SnapshotUnreadableError):
        # Nothing to re-project from a snapshot that cannot be read (its attempts end it, freeing this).
        return Repair(wrote=False, holder=active)
    shown = {message.message_id for message in entries}
    missing_card = any(card.message_id not in shown for card in turn.pending_cards())
    if not (missing_card or turn.status.is_terminal):
        return Repair(wrote=False, holder=active, cards=tuple(turn.cards))
    project(turn, memory)
    if turn.status.is_terminal and memory.set_active_turn(None, expected=turn.id):
        return Repair(wrote=True, holder=None)
    return Repair(wrote=True, holder=memory.get_active_turn() if turn.status.is_terminal else active)


def as_snapshot_shows(visible: Sequence[TimelineMessage], cards: Sequence[CardMessage]) -> list[TimelineMessage]:
    """``visible`` with each card that ``cards`` (a snapshot's) hold at a newer version shown at that one, where
    the timeline stored it."""
    newer = {card.message_id: card for card in cards}
    shown: list[TimelineMessage] = []
    for message in visible:
        card = newer.get(message.message_id)
        if isinstance(message, FormMessage | ApprovalMessage) and card is not None and card.version > message.version:
            shown.append(card.model_copy(update={"sort_key": message.sort_key}))
        else:
            shown.append(message)
    return shown


def repair_timeline(store: TurnStore, memory: ChatMemory, visible: Iterable[TimelineMessage]) -> bool:
    """See :meth:`Runner.repair_timeline`: whether anything was written."""
    return repair(store, memory, visible).wrote
