"""Making a conversation's timeline whole again when a projection of its active turn was lost.

A save records what its projection writes (:mod:`agentturn.timeline.projection`); a crash between the two leaves
the timeline behind. Whoever reads the timeline next compares what it shows with the active turn's snapshot and
writes what is missing (:func:`repair`); the next start in the conversation does the same for an ended turn
still named there (:func:`reconcile`). A read of a healthy timeline writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentturn.errors import SnapshotUnreadableError, TurnNotFoundError
from agentturn.ports.memory import ChatMemory
from agentturn.ports.store import TurnStore
from agentturn.state.messages import ApprovalMessage, CardMessage, FormMessage, ModelMessage, TimelineMessage
from agentturn.state.turn import Turn
from agentturn.timeline.cards import write_card


@dataclass(frozen=True)
class Repair:
    """What :func:`repair` did, and what it read on the way."""

    #: whether anything was written
    wrote: bool
    #: the turn that holds the conversation after the repair (``None`` when none does)
    holder: str | None


def _sort_key(entry: TimelineMessage) -> tuple[str, str]:
    return (entry.sort_key, entry.message_id)


@dataclass(frozen=True)
class _Gaps:
    """What the timeline lacks of a turn: messages, and cards with the version it shows (0: absent)."""

    messages: list[ModelMessage]
    cards: list[tuple[CardMessage, int]]


def _gaps(turn: Turn, shown: Sequence[TimelineMessage], *, whole: bool) -> _Gaps:
    """What ``shown`` (the latest entries of the conversation, oldest first; all of them when ``whole``) lacks of
    ``turn``. Only entries that ``shown`` would hold are judged: the turn holds the conversation, so its entries
    are the latest, and a window that starts after one of them says nothing about it."""
    if not shown and not whole:
        return _Gaps([], [])
    start = None if whole else _sort_key(shown[0])
    in_window = [e for e in [*turn.messages, *turn.cards] if start is None or _sort_key(e) >= start]
    present = {e.message_id for e in shown}
    versions = {e.message_id: e.version for e in shown if isinstance(e, FormMessage | ApprovalMessage)}
    return _Gaps(
        messages=[m for m in in_window if m.model_visible and m.message_id not in present],
        cards=[
            (c, versions.get(c.message_id, 0))
            for c in in_window
            if isinstance(c, FormMessage | ApprovalMessage) and versions.get(c.message_id, 0) < c.version
        ],
    )


def reconcile(
    turn: Turn, memory: ChatMemory, shown: Sequence[TimelineMessage] | None = None, *, whole: bool = False
) -> bool:
    """Bring the timeline up to ``turn`` whatever its projection record says; whether anything was written.

    ``shown``: the conversation's latest entries as the caller just read them (``whole``: all of them); read
    here when not given (the turn's own entries are the latest of the conversation while it holds it).
    """
    if shown is None:
        size = len(turn.messages) + len(turn.cards)
        shown = memory.get_messages(size)
        whole = len(shown) < size
    gaps = _gaps(turn, shown, whole=whole)
    if gaps.messages:
        memory.append_all(gaps.messages)
    for card, known in gaps.cards:
        write_card(memory, card, known)
    return bool(gaps.messages or gaps.cards)


def repair(store: TurnStore, memory: ChatMemory, visible: Iterable[TimelineMessage], *, whole: bool) -> Repair:
    """See :meth:`Runner.repair_timeline`; also who holds the conversation, so that a reader of the timeline
    need not read the conversation's head a second time. ``whole``: ``visible`` is all of the timeline."""
    entries = list(visible)
    active = memory.get_active_turn()
    if active is None:
        return Repair(wrote=False, holder=None)
    try:
        turn = store.load(active)
    except (TurnNotFoundError, SnapshotUnreadableError):
        # Nothing to re-project from a snapshot that cannot be read (its attempts end it, freeing this).
        return Repair(wrote=False, holder=active)
    wrote = reconcile(turn, memory, entries, whole=whole)
    if turn.status.is_terminal:
        # Ended without letting go (its release was lost): its timeline is whole now.
        if memory.set_active_turn(None, expected=turn.id):
            return Repair(wrote=True, holder=None)
        return Repair(wrote=wrote, holder=memory.get_active_turn())
    return Repair(wrote=wrote, holder=active)


def read_repaired(store: TurnStore, memory: ChatMemory, limit: int) -> tuple[list[TimelineMessage], Repair]:
    """The latest ``limit`` entries of the timeline as a reader sees them: read, checked against the active turn's
    snapshot (:func:`repair`), and read again only when the repair wrote something."""
    messages = memory.get_messages(limit)
    repaired = repair(store, memory, messages, whole=len(messages) < limit)
    if repaired.wrote:
        messages = memory.get_messages(limit)
    return messages, repaired


def repair_timeline(store: TurnStore, memory: ChatMemory, visible: Iterable[TimelineMessage], *, whole: bool) -> bool:
    """See :meth:`Runner.repair_timeline`: whether anything was written."""
    return repair(store, memory, visible, whole=whole).wrote
