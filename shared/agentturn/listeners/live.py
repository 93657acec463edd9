"""The push channel port: what a page watching a conversation is told while a turn works.

A :class:`LiveFeed` is a runner listener. It turns the runner's events into small messages on the
conversation's channel, through a :class:`TimelinePublisher` (AppSync Events on AWS, the dev server's
WebSocket locally):

- ``timeline``: the turn was saved (its id, version and status; never its content: the page reads the
  timeline itself, through the API that checks who may read it). A suspension and an end are told by the
  save that makes them (its status is WAITING_FOR_USER, COMPLETED, ...): no message of their own;
- ``status``: thinking (a model call), running (a tool), or queued again after a failed attempt (a retry
  with a backoff); a status equal to the last one told for the turn is not told again. A new or resumed
  turn is queued by the save that makes it so (status READY): no message of its own either;
- ``delta``: the model's text as it streams, coalesced to at most one publish per ``min_interval`` seconds
  per turn (10 a second by default), each with the offset of its first character within the model call's
  text, so that a page that missed a piece knows it and waits for the saved timeline instead.

Publishing is best effort: a publisher that fails is logged (and counted by the adapter), and the turn goes
on; the page falls back to reading the timeline.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, Protocol, TypeAlias

from pydantic import ConfigDict, Field

from agentturn.engine.clock import Clock
from agentturn.engine.events import Event, EventType
from agentturn.state.wire import WireModel

_log = logging.getLogger("agentturn.listeners.live")

#: Text pieces of one turn are published at most this often (seconds): 10 publishes a second.
DEFAULT_MIN_INTERVAL: Final = 0.1
#: Turns whose streaming state is remembered at once (the oldest is dropped first).
_KEPT_TURNS: Final = 1024

LivePhase: TypeAlias = Literal["queued", "running", "thinking"]


class _LiveModel(WireModel):
    model_config = ConfigDict(frozen=True)


class TimelineChanged(_LiveModel):
    """The turn was saved: read the timeline (``GET /conversations/{id}/messages``) for what changed."""

    type: Literal["timeline"] = "timeline"
    turn_id: str
    conversation_id: str
    version: int
    status: str


class StatusChanged(_LiveModel):
    type: Literal["status"] = "status"
    turn_id: str
    conversation_id: str
    phase: LivePhase
    #: The tool's name, when running one.
    tool_name: str | None = None


class TextStreamed(_LiveModel):
    """Text of model call ``call`` of the turn, starting at character ``offset`` of that call's text."""

    type: Literal["delta"] = "delta"
    turn_id: str
    conversation_id: str
    call: int
    offset: int
    text: str


LiveMessage: TypeAlias = Annotated[TimelineChanged | StatusChanged | TextStreamed, Field(discriminator="type")]


class TimelinePublisher(Protocol):
    """Sends messages to the subscribers of one channel, in order. May raise: :class:`LiveFeed` logs it."""

    def publish(self, channel: str, messages: Sequence[LiveMessage]) -> None: ...


#: The runtime's conversation id → (the channel to publish on, the conversation id as its subscriber knows
#: it), or None when the conversation is not published (e.g. an owner whose id cannot name a channel).
ChannelOf = Callable[[str], "tuple[str, str] | None"]


def wire(message: LiveMessage) -> dict[str, Any]:
    """A message as published (camelCase JSON, no absent fields)."""
    return message.model_dump(mode="json", by_alias=True, exclude_none=True)


@dataclass
class _Streaming:
    call: int = 0
    sent: int = 0
    pending: str = ""
    last_publish: float = float("-inf")


_TERMINAL: Final = frozenset({EventType.TURN_COMPLETED, EventType.TURN_FAILED, EventType.TURN_CANCELLED})
#: TURN_STARTED and TURN_RESUMED follow the save (status READY) that already told them.
_QUEUED: Final = frozenset({EventType.RETRY_SCHEDULED})


class LiveFeed:
    """A runner listener that publishes a turn's progress on its conversation's channel."""

    def __init__(
        self,
        publisher: TimelinePublisher,
        channel_of: ChannelOf,
        *,
        clock: Clock = time.monotonic,
        min_interval: float = DEFAULT_MIN_INTERVAL,
        on_failure: Callable[[LiveMessage, Exception], None] | None = None,
    ) -> None:
        self.publisher = publisher
        self.on_failure = on_failure
        self.channel_of = channel_of
        self.clock = clock
        self.min_interval = min_interval
        self._lock = threading.Lock()
        self._streams: dict[str, _Streaming] = {}
        self._phases: dict[str, tuple[str, str | None]] = {}

    def __call__(self, event: Event) -> None:
        if event.conversation_id is None:
            return
        target = self.channel_of(event.conversation_id)
        if target is None:
            return
        channel, conversation = target
        for message in self._messages(event, conversation):
            self._publish(channel, message)

    def _messages(self, event: Event, conversation: str) -> list[LiveMessage]:
        turn = event.turn_id
        kind = event.type
        if kind is EventType.MODEL_TEXT_DELTA:
            delta = self._delta(event, conversation)
            return [delta] if delta is not None else []
        messages: list[LiveMessage] = []
        if kind in (EventType.MODEL_COMPLETED, EventType.MODEL_FAILED) or kind in _TERMINAL:
            flushed = self._flush(turn, conversation)
            if flushed is not None:
                messages.append(flushed)
        if kind is EventType.SNAPSHOT_SAVED:
            version, status = event.data.get("version"), event.data.get("status")
            if isinstance(version, int):
                messages.append(
                    TimelineChanged(
                        turn_id=turn, conversation_id=conversation, version=version, status=str(status or "")
                    )
                )
            return messages
        status = self._status(event, conversation)
        if status is not None and self._is_new(status):
            messages.append(status)
        return messages

    def _status(self, event: Event, conversation: str) -> StatusChanged | None:
        kind, turn = event.type, event.turn_id
        if kind in _QUEUED:
            return StatusChanged(turn_id=turn, conversation_id=conversation, phase="queued")
        if kind is EventType.MODEL_STARTED:
            return StatusChanged(turn_id=turn, conversation_id=conversation, phase="thinking")
        if kind is EventType.TOOL_STARTED:
            name = event.data.get("toolName")
            return StatusChanged(
                turn_id=turn, conversation_id=conversation, phase="running", tool_name=str(name) if name else None
            )
        if kind is EventType.TURN_SUSPENDED or kind in _TERMINAL:
            # Told by the save before it (its status); what this feed remembers of the turn is done with.
            with self._lock:
                self._phases.pop(turn, None)
                if kind in _TERMINAL:
                    self._streams.pop(turn, None)
        return None

    def _is_new(self, status: StatusChanged) -> bool:
        key = (status.phase, status.tool_name)
        with self._lock:
            if self._phases.get(status.turn_id) == key:
                return False
            self._phases[status.turn_id] = key
            if len(self._phases) > _KEPT_TURNS:
                self._phases.pop(next(iter(self._phases)))
            return True

    def _delta(self, event: Event, conversation: str) -> TextStreamed | None:
        text = event.data.get("text")
        call = event.data.get("call")
        if not isinstance(text, str) or not isinstance(call, int):
            return None
        now = self.clock()
        with self._lock:
            stream = self._streams.get(event.turn_id)
            if stream is None or stream.call != call:
                stream = self._streams[event.turn_id] = _Streaming(call=call)
                if len(self._streams) > _KEPT_TURNS:
                    self._streams.pop(next(iter(self._streams)))
            stream.pending += text
            if now - stream.last_publish < self.min_interval:
                return None
            return self._take(event.turn_id, conversation, stream, now)

    def _flush(self, turn: str, conversation: str) -> TextStreamed | None:
        with self._lock:
            stream = self._streams.get(turn)
            if stream is None or not stream.pending:
                return None
            return self._take(turn, conversation, stream, self.clock())

    @staticmethod
    def _take(turn: str, conversation: str, stream: _Streaming, now: float) -> TextStreamed:
        message = TextStreamed(
            turn_id=turn, conversation_id=conversation, call=stream.call, offset=stream.sent, text=stream.pending
        )
        stream.sent += len(stream.pending)
        stream.pending = ""
        stream.last_publish = now
        return message

    def _publish(self, channel: str, message: LiveMessage) -> None:
        try:
            self.publisher.publish(channel, [message])
        except Exception as exc:
            # Best effort by design: the page reads the timeline anyway; a turn never fails for its preview.
            _log.warning("publishing %s for turn %r failed", message.type, message.turn_id, exc_info=True)
            if self.on_failure is not None:
                self.on_failure(message, exc)


class RecordingPublisher:
    """A publisher that keeps what it was given (tests, benchmarks)."""

    def __init__(self) -> None:
        self.published: list[tuple[str, list[LiveMessage]]] = []
        self._lock = threading.Lock()

    def publish(self, channel: str, messages: Sequence[LiveMessage]) -> None:
        with self._lock:
            self.published.append((channel, list(messages)))

    def messages(self, channel: str | None = None) -> list[LiveMessage]:
        with self._lock:
            return [m for c, batch in self.published if channel in (None, c) for m in batch]
