"""The push channel port: what a page watching a conversation is told while a turn works.

A :class:`LiveFeed` is a runner listener. It turns the runner's events into small messages on the
conversation's channel, through a :class:`TimelinePublisher` (AppSync Events on AWS, the dev server's
WebSocket locally). Each message published is paid twice (a publish and a delivery per page watching), so
the feed tells only what a page cannot work out itself, and coalesces the rest:

- ``timeline``: the turn was saved (its id, version and status; never its content: the page reads the
  timeline itself, through the API that checks who may read it), sent after the save's projection, so that
  a page reading on it sees the entries. Only for a save that projected new entries, or that leaves the
  turn waiting or ended with a status it did not have; a save that leaves it waiting or ended goes at once
  and replaces whatever was held (the timeline then holds all of it). A save that only queues the turn
  (READY: a start) or that takes a person's answer and runs on is told by the request that made it, to the
  page that made it: not pushed;
- ``status``: thinking (a model call), running (a tool), or queued again after a failed attempt (a retry
  with a backoff); held ``status_window`` seconds, so that a phase that ends sooner (a scripted model, a
  quick tool) is never pushed, and a status equal to the last one told is not told again;
- ``delta``: the model's text as it streams, at most one publish per ``text_window`` seconds per turn, each
  with the offset of its first character within the model call's text, so that a page that missed a piece
  knows it and waits for the saved timeline instead. The first piece of a model call goes at once when the
  call has run ``text_window`` already (a model's own time to first token), else when it has: a reply that
  is whole within the window reaches the page with the save that holds it, in one message.

What is held is published as ONE message when its time comes (a ``delta`` or a ``timeline`` notice then
carries the ``phase`` the turn is in, when that is news): on the next event of the turn, or by a timer.

Publishing is best effort: a publisher that fails is logged (and counted by the adapter), and the turn goes
on; the page falls back to reading the timeline.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal, Protocol, TypeAlias

from pydantic import ConfigDict, Field

from agentturn.engine.clock import Clock
from agentturn.engine.events import Event, EventType
from agentturn.state.wire import WireModel

_log = logging.getLogger("agentturn.listeners.live")

#: Text pieces of one turn are published at most this often (seconds): 10 publishes a second; a model call
#: whose whole reply comes sooner than this after it started is told by the save that holds it.
DEFAULT_TEXT_WINDOW: Final = 0.1
#: A status is pushed only once the turn has been in it this long (seconds): shorter phases are a flicker.
DEFAULT_STATUS_WINDOW: Final = 0.25
#: Former name of :data:`DEFAULT_TEXT_WINDOW`.
DEFAULT_MIN_INTERVAL: Final = DEFAULT_TEXT_WINDOW
#: Turns whose streaming state is remembered at once (the oldest is dropped first).
_KEPT_TURNS: Final = 1024

LivePhase: TypeAlias = Literal["queued", "running", "thinking"]
_RUNNABLE: Final = frozenset({"READY", "RUNNING"})


class _LiveModel(WireModel):
    model_config = ConfigDict(frozen=True)


class TimelineChanged(_LiveModel):
    """The turn was saved: read the timeline (``GET /conversations/{id}/messages``) for what changed."""

    type: Literal["timeline"] = "timeline"
    turn_id: str
    conversation_id: str
    version: int
    status: str
    #: What the turn does now, when it still runs and that is news (coalesced with the save).
    phase: LivePhase | None = None
    tool_name: str | None = None


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
    #: What the turn does now, when it is no longer thinking (a tool started after this text).
    phase: LivePhase | None = None
    tool_name: str | None = None


LiveMessage: TypeAlias = Annotated[TimelineChanged | StatusChanged | TextStreamed, Field(discriminator="type")]


class TimelinePublisher(Protocol):
    """Sends messages to the subscribers of one channel, in order. May raise: :class:`LiveFeed` logs it."""

    def publish(self, channel: str, messages: Sequence[LiveMessage]) -> None: ...


class Cancellable(Protocol):
    def cancel(self) -> None: ...


#: Runs a callable after a delay in seconds, on another thread; what it returns cancels it.
Schedule = Callable[[float, Callable[[], None]], Cancellable]

#: The runtime's conversation id → (the channel to publish on, the conversation id as its subscriber knows
#: it), or None when the conversation is not published (e.g. an owner whose id cannot name a channel).
ChannelOf = Callable[[str], "tuple[str, str] | None"]


def wire(message: LiveMessage) -> dict[str, Any]:
    """A message as published (camelCase JSON, no absent fields)."""
    return message.model_dump(mode="json", by_alias=True, exclude_none=True)


def thread_timer(delay: float, action: Callable[[], None]) -> Cancellable:
    timer = threading.Timer(delay, action)
    timer.daemon = True  # a held status must never keep a process alive
    timer.start()
    return timer


_Phase: TypeAlias = "tuple[LivePhase, str | None]"


@dataclass
class _Held:
    """What the feed holds of one turn until its time comes."""

    channel: str
    conversation: str
    #: the last status told to the channel (or taken as known: a suspension or end ends it)
    told_phase: _Phase | None = None
    phase: _Phase | None = None
    phase_due: float = float("inf")
    #: the last saved status seen (None: no save of it seen by this process)
    status: str | None = None
    save: tuple[int, str] | None = None
    save_due: float = float("inf")
    call: int = -1
    call_started: float = float("-inf")
    sent: int = 0
    text: str = ""
    text_due: float = float("inf")
    last_text_publish: float = float("-inf")
    timer: Cancellable | None = None
    timer_due: float = float("inf")
    #: publishes of this turn go one at a time, in the order they were taken
    publishing: threading.Lock = field(default_factory=threading.Lock)

    @property
    def due(self) -> float:
        return min(self.phase_due, self.save_due, self.text_due)


_TERMINAL: Final = frozenset({EventType.TURN_COMPLETED, EventType.TURN_FAILED, EventType.TURN_CANCELLED})


class LiveFeed:
    """A runner listener that publishes a turn's progress on its conversation's channel."""

    def __init__(
        self,
        publisher: TimelinePublisher,
        channel_of: ChannelOf,
        *,
        clock: Clock = time.monotonic,
        min_interval: float = DEFAULT_TEXT_WINDOW,
        status_window: float = DEFAULT_STATUS_WINDOW,
        schedule: Schedule = thread_timer,
        on_failure: Callable[[LiveMessage, Exception], None] | None = None,
    ) -> None:
        self.publisher = publisher
        self.on_failure = on_failure
        self.channel_of = channel_of
        self.clock = clock
        self.text_window = min_interval
        self.status_window = status_window
        self.schedule = schedule
        self._lock = threading.Lock()
        self._turns: dict[str, _Held] = {}

    def __call__(self, event: Event) -> None:
        if event.conversation_id is None:
            return
        target = self.channel_of(event.conversation_id)
        if target is None:
            return
        channel, conversation = target
        turn = event.turn_id
        now = self.clock()
        with self._lock:
            held = self._turns.get(turn)
            if held is None:
                held = self._turns[turn] = _Held(channel, conversation)
                if len(self._turns) > _KEPT_TURNS:
                    self._turns.pop(next(iter(self._turns)))
            settled = self._hold(held, event, now)
        if settled is not None:
            self._publish_now(turn, held, settled)
        else:
            self.flush(turn, now)
        if event.type in _TERMINAL:
            with self._lock:
                self._turns.pop(turn, None)

    # ------------------------------------------------------------------ what is held

    def _hold(self, held: _Held, event: Event, now: float) -> TimelineChanged | None:
        """Take ``event`` into what is held; a save that settles the turn is returned, to go at once."""
        kind = event.type
        if kind is EventType.MODEL_TEXT_DELTA:
            self._hold_text(held, event, now)
        elif kind is EventType.MODEL_COMPLETED:
            # The reply is whole: no longer a stream to keep up with. The save that holds it comes next (or a
            # tool starts): what is held waits for it, up to a status window.
            if held.text:
                held.text_due = max(held.text_due, now + self.status_window)
        elif kind is EventType.MODEL_STARTED:
            held.call_started = now
            self._hold_phase(held, ("thinking", None), now)
        elif kind is EventType.TOOL_STARTED:
            name = event.data.get("toolName")
            self._hold_phase(held, ("running", str(name) if name else None), now)
        elif kind is EventType.RETRY_SCHEDULED:
            self._hold_phase(held, ("queued", None), now)
        elif kind is EventType.SNAPSHOT_SAVED:
            return self._hold_save(held, event, now)
        elif kind is EventType.INPUT_SUBMITTED and not event.data.get("queued"):
            # The save before it was a person's answer, made by their request: their page shows it, and reads
            # the answer of that request. Other pages see it with the turn's next notice.
            held.save, held.save_due = None, float("inf")
        elif kind is EventType.TURN_SUSPENDED or kind in _TERMINAL:
            # Told by the save before it (its status): what the turn was doing is over.
            held.told_phase = held.phase = None
            held.phase_due = float("inf")
        return None

    def _hold_phase(self, held: _Held, phase: _Phase, now: float) -> None:
        if phase == held.told_phase:
            held.phase, held.phase_due = None, float("inf")
        elif phase != held.phase:
            held.phase, held.phase_due = phase, now + self.status_window

    def _hold_text(self, held: _Held, event: Event, now: float) -> None:
        text, call = event.data.get("text"), event.data.get("call")
        if not isinstance(text, str) or not isinstance(call, int) or not text:
            return
        if call != held.call:
            held.call, held.sent, held.text = call, 0, ""
            held.text_due = float("inf")
        if not held.text:
            # The first piece of a call waits until the call has run a window; later ones, a window after the
            # last publish (streaming at most 10 publishes a second).
            held.text_due = max(held.call_started, held.last_text_publish) + self.text_window
        held.text += text

    def _hold_save(self, held: _Held, event: Event, now: float) -> TimelineChanged | None:
        version, status = event.data.get("version"), str(event.data.get("status") or "")
        projected = bool(event.data.get("projected"))
        changed = status != held.status
        held.status = status
        if not isinstance(version, int):
            return None
        notice = TimelineChanged(
            turn_id=event.turn_id, conversation_id=held.conversation, version=version, status=status
        )
        if status not in _RUNNABLE:
            if not (changed or projected):
                return None
            # The page reads the timeline, which now holds everything held here: it is dropped.
            held.phase = held.told_phase = None
            held.phase_due = held.save_due = held.text_due = float("inf")
            held.save, held.text = None, ""
            return notice
        if projected and status != "READY":
            # READY: a start or an answer, saved by the request that the page which made it reads the answer of.
            held.save = (version, status)
            held.save_due = min(held.save_due, now + self.status_window)
        return None

    # ------------------------------------------------------------------ publishing

    def flush(self, turn: str, now: float | None = None) -> None:
        """Publish what is held of ``turn`` and due by ``now``; arm a timer for what is due later."""
        now = self.clock() if now is None else now
        with self._lock:
            held = self._turns.get(turn)
        if held is None:
            return
        with held.publishing:
            with self._lock:
                messages = self._take_due(turn, held, now)
                self._arm(turn, held, now)
            self._send(held.channel, messages)

    def _publish_now(self, turn: str, held: _Held, message: TimelineChanged) -> None:
        with held.publishing:
            with self._lock:
                if held.timer is not None:
                    held.timer.cancel()
                    held.timer, held.timer_due = None, float("inf")
            self._send(held.channel, [message])

    def _arm(self, turn: str, held: _Held, now: float) -> None:
        due = held.due
        if due == float("inf") or due >= held.timer_due:
            return
        if held.timer is not None:
            held.timer.cancel()
        held.timer_due = due
        held.timer = self.schedule(max(0.0, due - now), lambda: self._fire(turn, held))

    def _fire(self, turn: str, held: _Held) -> None:
        with self._lock:
            held.timer, held.timer_due = None, float("inf")
        self.flush(turn)

    def _take_due(self, turn: str, held: _Held, now: float) -> list[LiveMessage]:
        """What is due, as one message (two only when a save with new entries meets text not yet told)."""
        if held.due > now:
            return []
        phase: _Phase | None = None
        if held.phase is not None and held.phase != held.told_phase:
            phase = held.phase
        messages: list[LiveMessage] = []
        if held.text and (held.text_due <= now or held.save_due <= now):
            text_phase = phase if phase is not None and phase[0] != "thinking" else None
            messages.append(
                TextStreamed(
                    turn_id=turn,
                    conversation_id=held.conversation,
                    call=held.call,
                    offset=held.sent,
                    text=held.text,
                    phase=text_phase[0] if text_phase else None,
                    tool_name=text_phase[1] if text_phase else None,
                )
            )
            held.sent += len(held.text)
            held.text, held.text_due, held.last_text_publish = "", float("inf"), now
            # A piece of text says "thinking" itself; another phase went with it.
            held.told_phase = phase if text_phase is not None else ("thinking", None)
            phase = None if text_phase is not None or (phase is not None and phase[0] == "thinking") else phase
        if held.save is not None:
            version, status = held.save
            messages.append(
                TimelineChanged(
                    turn_id=turn,
                    conversation_id=held.conversation,
                    version=version,
                    status=status,
                    phase=phase[0] if phase else None,
                    tool_name=phase[1] if phase else None,
                )
            )
            held.save, held.save_due = None, float("inf")
            if phase is not None:
                held.told_phase, phase = phase, None
        if phase is not None and (held.phase_due <= now or messages):
            messages.append(
                StatusChanged(turn_id=turn, conversation_id=held.conversation, phase=phase[0], tool_name=phase[1])
            )
            held.told_phase = phase
        if held.told_phase == held.phase:
            held.phase, held.phase_due = None, float("inf")
        return messages

    def _send(self, channel: str, messages: Sequence[LiveMessage]) -> None:
        for message in messages:
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
