"""Event sequence numbers: strictly increasing per turn, across saves and across processes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from agentturn.engine.events import Event, EventType, Listener, dispatch
from agentturn.state.turn import Turn

#: Sequences stored with each save above the last one used: events emitted after that save fit under it.
SEQUENCE_RESERVE = 32
#: Turns whose last sequence this process remembers (the oldest is forgotten first; the stored floor remains).
SEQUENCE_CACHE = 1024


class EventSequencer:
    """Numbers and dispatches a runner's events.

    Events are emitted after the snapshot they follow is written, so their numbers cannot be stored with
    it. Each save stores ``last used + reserve`` instead (:meth:`reserve`): a process that reloads the turn
    continues above anything emitted here (unless more than the reserve is emitted between two saves).
    """

    def __init__(self, listeners: Callable[[], Iterable[Listener]]) -> None:
        # A provider, not a list: the runner's listeners may be replaced after it was made.
        self._listeners = listeners
        self._sequences: dict[str, int] = {}
        self._lock = threading.Lock()

    def emit(self, turn: Turn, event_type: EventType, **data: Any) -> None:
        self.emit_for(
            turn.id, turn.event_sequence, event_type, conversation_id=turn.conversation_id, _turn=turn, **data
        )

    def emit_for(
        self,
        turn_id: str,
        floor: int,
        event_type: EventType,
        *,
        conversation_id: str | None = None,
        _turn: Turn | None = None,
        **data: Any,
    ) -> None:
        """Emit above ``floor`` (the turn's reserved sequence; 0 when its snapshot cannot be read)."""
        with self._lock:
            sequence = max(self._sequences.get(turn_id, 0), floor) + 1
            self._sequences[turn_id] = sequence
            if len(self._sequences) > SEQUENCE_CACHE:
                self._sequences.pop(next(iter(self._sequences)))
        listeners = list(self._listeners())
        if listeners:
            # Nobody listening (the core's default): the number is used up, no event is built.
            messages = tuple(_turn.messages) if _turn is not None else ()
            count = len(messages) if _turn is not None else None
            dispatch(listeners, Event(event_type, turn_id, sequence, data, conversation_id, count, messages))

    def emit_transient(self, turn: Turn, event_type: EventType, **data: Any) -> None:
        """Emit without using up a number: the event carries the sequence of the last one emitted for the turn
        (a streamed text piece, which is never replayed and may come hundreds of times between two saves)."""
        listeners = list(self._listeners())
        if not listeners:
            return
        with self._lock:
            sequence = max(self._sequences.get(turn.id, 0), turn.event_sequence)
        dispatch(listeners, Event(event_type, turn.id, sequence, data, turn.conversation_id))

    def reserve(self, turn: Turn) -> None:
        """Set ``turn.event_sequence`` (stored with its next save) above every sequence usable before the one after."""
        with self._lock:
            used = max(self._sequences.get(turn.id, 0), turn.event_sequence)
            self._sequences[turn.id] = used
        turn.event_sequence = used + SEQUENCE_RESERVE
