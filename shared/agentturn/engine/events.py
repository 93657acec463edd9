"""Lifecycle events and their dispatch to listeners."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

_log = logging.getLogger("agentturn.engine.events")


class EventType(StrEnum):
    TURN_STARTED = "TURN_STARTED"
    TURN_SUSPENDED = "TURN_SUSPENDED"
    TURN_RESUMED = "TURN_RESUMED"
    TURN_COMPLETED = "TURN_COMPLETED"
    TURN_FAILED = "TURN_FAILED"
    TURN_CANCELLED = "TURN_CANCELLED"
    SNAPSHOT_SAVED = "SNAPSHOT_SAVED"
    STEP_STARTED = "STEP_STARTED"
    STEP_COMPLETED = "STEP_COMPLETED"
    MODEL_STARTED = "MODEL_STARTED"
    MODEL_COMPLETED = "MODEL_COMPLETED"
    TOOL_STARTED = "TOOL_STARTED"
    TOOL_PROGRESS = "TOOL_PROGRESS"
    TOOL_COMPLETED = "TOOL_COMPLETED"
    TOOL_FAILED = "TOOL_FAILED"
    TOOL_INPUT_REQUESTED = "TOOL_INPUT_REQUESTED"
    TOOL_APPROVAL_REQUESTED = "TOOL_APPROVAL_REQUESTED"
    TOOL_REJECTED = "TOOL_REJECTED"
    #: a person's answer to one pending decision was accepted; data: actionId, kind, pending (the action ids
    #: still waiting: TURN_RESUMED follows when none is left)
    INPUT_SUBMITTED = "INPUT_SUBMITTED"
    PROJECTION_FAILED = "PROJECTION_FAILED"
    #: a model call failed; data: kind, retryable, attempt, maxAttempts, error
    MODEL_FAILED = "MODEL_FAILED"
    #: a run failed for a reason that may pass and the turn will be tried again; data: reason, attempt,
    #: maxAttempts, delaySeconds, error
    RETRY_SCHEDULED = "RETRY_SCHEDULED"
    #: a piece of the model's answer as it streams; data: text, index (0, 1, ... within one model call),
    #: call (the model call's number in the turn). Transient: it carries the sequence of the event before it
    #: (deltas are many and are never replayed, so they do not use up the numbers a save reserves).
    MODEL_TEXT_DELTA = "MODEL_TEXT_DELTA"
    #: a wait's approvers were reminded (``Approvers.remind_after`` passed); data: actionId, approvers
    TURN_REMINDER = "TURN_REMINDER"
    #: a wait moved to another group (``Approvers.escalate_after`` passed); data: actionId, approvers, from
    TURN_ESCALATED = "TURN_ESCALATED"


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


@dataclass(frozen=True)
class Event:
    type: EventType
    turn_id: str
    sequence: int
    data: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    #: The turn's conversation (known to every event emitted with its turn at hand; None otherwise), so that
    #: a listener can route the event, e.g. to the conversation's push channel, without reading the turn.
    conversation_id: str | None = None
    #: How many messages the turn held when the event was emitted (``None`` for an event emitted without the turn
    #: at hand), so an in-process listener can tell which of them it has not seen yet without reading the store.
    message_count: int | None = field(default=None, compare=False)
    #: The turn's messages at that moment, for in-process listeners that render them as they come (AG-UI): a
    #: shallow copy of the list, never stored or sent anywhere; listeners must not change what it holds.
    messages: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", _freeze(self.data))


Listener = Callable[[Event], None]


def dispatch(listeners: Iterable[Listener], event: Event) -> None:
    """Call every listener; one that raises is logged and never stops the turn or the others."""
    for listener in listeners:
        try:
            listener(event)
        except Exception:
            _log.exception("listener %r failed on %s for turn %r", listener, event.type, event.turn_id)
