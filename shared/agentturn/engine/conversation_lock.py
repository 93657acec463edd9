"""A conversation runs one turn at a time: taking and checking its active turn.

A turn takes its conversation when it is made (``set_active_turn(turn_id, expected=None)``) and lets go at its
end (``set_active_turn(None, expected=turn_id)``, a write only the turn named there can make), once its timeline
is whole. A turn that ended without letting go (a crash between its last save and the release) is found ended
by the next start, which makes its timeline whole and takes over.
"""

from __future__ import annotations

from agentturn.errors import ConversationBusyError, SnapshotUnreadableError, TurnNotFoundError
from agentturn.ports.memory import ChatMemory
from agentturn.ports.store import TurnStore
from agentturn.state.turn import Turn, TurnStatus
from agentturn.timeline.conversation_list import ConversationListing, listing_for
from agentturn.timeline.repair import reconcile


def stored_status(error: SnapshotUnreadableError) -> TurnStatus | None:
    """The status the store holds for a turn it cannot read; ``None`` if that is not a known one either."""
    try:
        return TurnStatus(error.status) if error.status is not None else None
    except ValueError:
        return None


def _take(memory: ChatMemory, turn_id: str, expected: str | None, listing: ConversationListing | None) -> bool:
    # Without a listing (a turn nobody owns) the call is the one every ChatMemory has always taken, so an
    # adapter written before the conversations list keeps working for library use.
    if listing is None:
        return memory.set_active_turn(turn_id, expected=expected)
    return memory.set_active_turn(turn_id, expected=expected, listing=listing)


class ConversationLock:
    def __init__(self, store: TurnStore) -> None:
        self._store = store

    def take(self, memory: ChatMemory, turn: Turn) -> bool:
        """Make ``turn`` the conversation's active turn, or remove it and raise ConversationBusyError; ``True``
        when the conversation was free (the first write took it), ``False`` when the turn took it over from an
        ended turn still named there (whose timeline was made whole first).

        Optimistic: the common case costs one conditional write, expecting no turn. The turn exists before it
        takes the conversation, so whoever finds it named there can load it; one that crashes in between is
        refused by the worker (:func:`holds`).
        """
        # The conversations list is written by this same take (it costs no request of its own).
        listing = listing_for(turn)
        if _take(memory, turn.id, None, listing):
            return True
        previous = memory.get_active_turn()
        if previous is None:
            taken = _take(memory, turn.id, None, listing)
        else:
            taken = self._previous_finished(memory, previous) and _take(memory, turn.id, previous, listing)
        if not taken:
            # Lost the conversation: leave no trace of this turn.
            self._store.delete(turn.id, expected_version=turn.version)
            raise ConversationBusyError(memory.conversation_id, previous)
        return False

    def _previous_finished(self, memory: ChatMemory, previous_id: str) -> bool:
        """Whether the turn named in the conversation has ended (then its timeline is made whole first)."""
        try:
            previous = self._store.load(previous_id)
        except TurnNotFoundError:
            return True
        except SnapshotUnreadableError as exc:
            # Ended (FAILED after its attempts) or not; either way there is no timeline to make whole from it.
            status = stored_status(exc)
            return status is not None and status.is_terminal
        if not previous.status.is_terminal:
            return False
        reconcile(previous, memory)
        return True


def holds(memory: ChatMemory | None, turn: Turn) -> bool:
    """A READY turn that a worker picked up may only start if it took its conversation when it was made.

    One that never did (its start crashed between the two writes) is never started later, not even in a
    conversation that has become free: its caller was answered with an error and may well have retried,
    and the retry's turn has then already done what this one would do again (a second ticket, refund...).
    """
    return memory is None or memory.get_active_turn() == turn.id
