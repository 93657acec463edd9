"""agentturn's messages as AG-UI messages and events.

- the timeline → ``MESSAGES_SNAPSHOT`` messages (user, assistant with its tool calls, tool results); cards are
  not messages: a pending one is an interrupt (:mod:`.interrupts`), a settled one shows as its tool result;
- a running turn → events, from two sources the runner already has: its model's text as it streams
  (``MODEL_TEXT_DELTA``) and each snapshot it saves (new assistant messages, tool calls, tool results).

A message keeps the id the timeline gives it (``<turnId>:m:<index>``), so a snapshot replaces what was streamed
with the same ids.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agentturn.agui.events import (
    AgUiEvent,
    TextMessageContent,
    TextMessageEnd,
    TextMessageStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
)
from agentturn.engine.events import Event, EventType
from agentturn.state.messages import AiMessage, ModelMessage, TimelineMessage, ToolMessage, UserMessage
from agentturn.state.turn import Turn

Emit = Callable[[AgUiEvent], None]


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def tool_content(message: ToolMessage) -> str:
    return message.content if isinstance(message.content, str) else _json(message.content)


def as_agui_message(message: TimelineMessage | ModelMessage) -> dict[str, Any] | None:
    """One timeline entry as an AG-UI message; ``None`` for a card (never a message of its own)."""
    if isinstance(message, UserMessage):
        return {"id": message.message_id, "role": "user", "content": message.content}
    if isinstance(message, AiMessage):
        shown: dict[str, Any] = {"id": message.message_id, "role": "assistant"}
        if message.content:
            shown["content"] = message.content
        if message.tool_calls:
            shown["toolCalls"] = [
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": _json(call.arguments)}}
                for call in message.tool_calls
            ]
        return shown
    if isinstance(message, ToolMessage):
        return {
            "id": message.message_id,
            "role": "tool",
            "toolCallId": message.tool_call_id,
            "content": tool_content(message),
        }
    return None


def snapshot_messages(timeline: Iterable[TimelineMessage]) -> list[dict[str, Any]]:
    shown = (as_agui_message(message) for message in timeline)
    return [message for message in shown if message is not None]


def tool_call_events(message: AiMessage) -> list[AgUiEvent]:
    events: list[AgUiEvent] = []
    for call in message.tool_calls:
        events.append(
            ToolCallStart(tool_call_id=call.id, tool_call_name=call.name, parent_message_id=message.message_id)
        )
        events.append(ToolCallArgs(tool_call_id=call.id, delta=_json(call.arguments)))
        events.append(ToolCallEnd(tool_call_id=call.id))
    return events


class TurnEvents:
    """A runner listener and a store observer for one AG-UI run: turns what the turn does into events.

    ``seen`` is how many of the turn's messages the client was already told of (by an earlier run's
    snapshot): the rest are news. Thread-safe: the runner's heartbeat and its steps may call from two threads.
    """

    def __init__(self, emit: Emit, turn: Turn | None = None) -> None:
        self._emit = emit
        self._lock = threading.Lock()
        self._turn_id = turn.id if turn is not None else None
        self._seen = len(turn.messages) if turn is not None else 0
        #: the id of the assistant message whose text is streaming now
        self._open: str | None = None
        #: streamed assistant messages not yet seen saved (their text must not be sent again)
        self._streamed: list[str] = []

    def follow(self, turn: Turn, *, seen: int) -> None:
        with self._lock:
            self._turn_id, self._seen = turn.id, seen

    # -------------------------------------------------------------- runner events (model text as it streams)

    def __call__(self, event: Event) -> None:
        with self._lock:
            if self._turn_id is not None and event.turn_id != self._turn_id:
                return
            if event.message_count is not None and event.message_count > self._seen and event.messages:
                # Messages the turn holds before its next save (a tool's result before the model is asked again,
                # the model's reply before its tools run): told now, in the order the turn holds them.
                self._announce_new(event.turn_id, list(event.messages))
            if event.type is EventType.MODEL_TEXT_DELTA:
                text = event.data.get("text")
                if not isinstance(text, str) or not text:
                    return
                if self._open is None:
                    # The reply is the turn's next message: it will be saved under this id.
                    self._open = f"{event.turn_id}:m:{self._seen:05d}"
                    self._emit(TextMessageStart(message_id=self._open))
                self._emit(TextMessageContent(message_id=self._open, delta=text))
            elif event.type in (EventType.MODEL_COMPLETED, EventType.MODEL_FAILED) and self._open is not None:
                self._emit(TextMessageEnd(message_id=self._open))
                if event.type is EventType.MODEL_COMPLETED:
                    self._streamed.append(self._open)
                self._open = None

    # -------------------------------------------------------------- saved snapshots (what the turn now holds)

    def saved(self, turn: Turn) -> None:
        with self._lock:
            if self._turn_id is None:
                self._turn_id = turn.id
            if turn.id != self._turn_id:
                return
            self._announce_new(turn.id, turn.messages)

    def close_open_text(self) -> None:
        """End a text message whose model call never finished (the run stopped under it)."""
        with self._lock:
            if self._open is not None:
                self._emit(TextMessageEnd(message_id=self._open))
                self._open = None

    def _announce_new(self, turn_id: str, messages: Sequence[ModelMessage]) -> None:
        news = list(enumerate(messages))[self._seen :]
        self._seen = max(self._seen, len(messages))
        for index, message in news:
            self._announce(turn_id, index, message)

    def _announce(self, turn_id: str, index: int, message: ModelMessage) -> None:
        message_id = message.message_id or f"{turn_id}:m:{index:05d}"
        if isinstance(message, AiMessage):
            streamed = self._streamed.pop(0) if self._streamed and message.content else None
            if message.content and streamed is None:
                self._emit(TextMessageStart(message_id=message_id))
                self._emit(TextMessageContent(message_id=message_id, delta=message.content))
                self._emit(TextMessageEnd(message_id=message_id))
            self._emit_all(tool_call_events(message.model_copy(update={"message_id": streamed or message_id})))
        elif isinstance(message, ToolMessage):
            self._emit(
                ToolCallResult(message_id=message_id, tool_call_id=message.tool_call_id, content=tool_content(message))
            )

    def _emit_all(self, events: Sequence[AgUiEvent]) -> None:
        for event in events:
            self._emit(event)
