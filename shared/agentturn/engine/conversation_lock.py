"""A conversation runs one turn at a time: taking and checking its active turn.

A COMPLETED turn (of up to :data:`ENDED_TURN_PROBE` messages) stays named in its conversation: its timeline shows
that it ended (:func:`ended_turn`), and the next start, which reads that timeline for its model anyway, takes over
from it in one conditional write. Any other end lets go (``set_active_turn(None, expected=turn_id)``, a write only
the turn named there can make); a turn that ended without either is found ended by the next start, which takes
over after making its timeline whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from agentturn.errors import ConversationBusyError, SnapshotUnreadableError, TurnNotFoundError
from agentturn.ports.memory import ChatMemory
from agentturn.ports.store import TurnStore
from agentturn.state.messages import AiMessage, ModelMessage, TimelineMessage
from agentturn.state.turn import Turn, TurnStatus
from agentturn.timeline.conversation_list import ConversationListing, listing_for
from agentturn.timeline.identity import message_index
from agentturn.timeline.projection import project


def stored_status(error: SnapshotUnreadableError) -> TurnStatus | None:
    """The status the store holds for a turn it cannot read; ``None`` if that is not a known one either."""
    try:
        return TurnStatus(error.status) if error.status is not None else None
    except ValueError:
        return None


#: The fewest latest messages a start reads, whatever its agent's context window, so that a completed turn of
#: up to this many messages shows its end whole (:func:`ended_turn`). A longer one lets go of its conversation
#: at its end, as other endings do (:func:`frees_by_its_end`).
ENDED_TURN_PROBE: Final = 16


def frees_by_its_end(turn: Turn) -> bool:
    """Whether ``turn``, ended, leaves its conversation free by what its timeline shows rather than by a release:
    COMPLETED, and short enough that every start reads it whole."""
    return turn.status is TurnStatus.COMPLETED and len(turn.messages) <= ENDED_TURN_PROBE


def ended_turn(timeline: Sequence[TimelineMessage | ModelMessage]) -> str | None:
    """The id of the turn whose COMPLETED end ``timeline`` (a conversation's latest entries, oldest first)
    shows; ``None`` when it shows none.

    It shows one when its latest model-visible messages are all of one turn's messages, from its first (the
    input) to a reply that calls no tool. Such a reply is always the last message of its turn and is saved only
    with the turn COMPLETED; the timeline holds only saved messages; and a completed turn's answer is written
    after its cards are whole (:func:`~agentturn.timeline.projection.project`). A gap (a message of the batch still
    unwritten), a window that does not reach the turn's first message, or a message without its implied
    identity shows nothing: whoever asks then reads the turn itself.
    """
    model = [message for message in timeline if message.model_visible]
    last = model[-1] if model else None
    if not isinstance(last, AiMessage) or last.tool_calls or last.turn_id is None:
        return None
    index = message_index(last)
    if index is None or len(model) <= index or index >= ENDED_TURN_PROBE:
        # A longer turn let go at its end (frees_by_its_end): the conversation's head says whether it did.
        return None
    own = model[-(index + 1) :]
    if [message_index(m) if m.turn_id == last.turn_id else None for m in own] != list(range(index + 1)):
        return None
    return last.turn_id


def _take(memory: ChatMemory, turn_id: str, expected: str | None, listing: ConversationListing | None) -> bool:
    # Without a listing (a turn nobody owns) the call is the one every ChatMemory has always taken, so an
    # adapter written before the conversations list keeps working for library use.
    if listing is None:
        return memory.set_active_turn(turn_id, expected=expected)
    return memory.set_active_turn(turn_id, expected=expected, listing=listing)


class ConversationLock:
    def __init__(self, store: TurnStore) -> None:
        self._store = store

    def take(self, memory: ChatMemory, turn: Turn, *, ended: str | None = None) -> bool:
        """Make ``turn`` the conversation's active turn, or remove it and raise ConversationBusyError; ``True``
        when the conversation was as the caller read it (the first write took it), ``False`` when the turn
        took it over from another turn found named there (whose timeline may then have been made whole).

        Optimistic: the common case costs one conditional write, expecting either no turn or ``ended``, the turn
        whose completed end the conversation's timeline shows (:func:`ended_turn`; the caller read it). The turn
        exists before it takes the conversation, so whoever finds it named there can load it; one that crashes
        in between is refused by the worker (:func:`holds`).
        """
        # The conversations list is written by this same take (it costs no request of its own).
        listing = listing_for(turn)
        if _take(memory, turn.id, ended, listing):
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
        project(previous, memory)
        return True


def holds(memory: ChatMemory | None, turn: Turn) -> bool:
    """A READY turn that a worker picked up may only start if it took its conversation when it was made.

    One that never did (its start crashed between the two writes) is never started later, not even in a
    conversation that has become free: its caller was answered with an error and may well have retried,
    and the retry's turn has then already done what this one would do again (a second ticket, refund...).
    """
    return memory is None or memory.get_active_turn() == turn.id
