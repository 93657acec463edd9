"""The AG-UI events this server sends, as pydantic models (camelCase on the wire, absent fields left out).

Names and fields follow AG-UI 1.0's ``schema.json`` / ``@ag-ui/core``; tests check every event this server
sends against the protocol's own Python models (``ag-ui-protocol``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel


class EventType(StrEnum):
    RUN_STARTED = "RUN_STARTED"
    RUN_FINISHED = "RUN_FINISHED"
    RUN_ERROR = "RUN_ERROR"
    TEXT_MESSAGE_START = "TEXT_MESSAGE_START"
    TEXT_MESSAGE_CONTENT = "TEXT_MESSAGE_CONTENT"
    TEXT_MESSAGE_END = "TEXT_MESSAGE_END"
    TOOL_CALL_START = "TOOL_CALL_START"
    TOOL_CALL_ARGS = "TOOL_CALL_ARGS"
    TOOL_CALL_END = "TOOL_CALL_END"
    TOOL_CALL_RESULT = "TOOL_CALL_RESULT"
    STATE_SNAPSHOT = "STATE_SNAPSHOT"
    MESSAGES_SNAPSHOT = "MESSAGES_SNAPSHOT"


class AgUiModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class BaseEvent(AgUiModel):
    type: EventType
    timestamp: int | None = None


class RunStarted(BaseEvent):
    type: Literal[EventType.RUN_STARTED] = EventType.RUN_STARTED
    thread_id: str
    run_id: str
    parent_run_id: str | None = None


class Interrupt(AgUiModel):
    id: str
    reason: str
    message: str | None = None
    tool_call_id: str | None = None
    response_schema: dict[str, Any] | None = None
    expires_at: str | None = None
    metadata: dict[str, Any] | None = None


class SuccessOutcome(AgUiModel):
    type: Literal["success"] = "success"


class InterruptOutcome(AgUiModel):
    type: Literal["interrupt"] = "interrupt"
    interrupts: list[Interrupt] = Field(min_length=1)


class RunFinished(BaseEvent):
    type: Literal[EventType.RUN_FINISHED] = EventType.RUN_FINISHED
    thread_id: str
    run_id: str
    result: JsonValue = None
    outcome: SuccessOutcome | InterruptOutcome | None = None


class RunError(BaseEvent):
    type: Literal[EventType.RUN_ERROR] = EventType.RUN_ERROR
    message: str
    code: str | None = None


class TextMessageStart(BaseEvent):
    type: Literal[EventType.TEXT_MESSAGE_START] = EventType.TEXT_MESSAGE_START
    message_id: str
    role: Literal["assistant"] = "assistant"


class TextMessageContent(BaseEvent):
    type: Literal[EventType.TEXT_MESSAGE_CONTENT] = EventType.TEXT_MESSAGE_CONTENT
    message_id: str
    delta: str = Field(min_length=1)


class TextMessageEnd(BaseEvent):
    type: Literal[EventType.TEXT_MESSAGE_END] = EventType.TEXT_MESSAGE_END
    message_id: str


class ToolCallStart(BaseEvent):
    type: Literal[EventType.TOOL_CALL_START] = EventType.TOOL_CALL_START
    tool_call_id: str
    tool_call_name: str
    parent_message_id: str | None = None


class ToolCallArgs(BaseEvent):
    type: Literal[EventType.TOOL_CALL_ARGS] = EventType.TOOL_CALL_ARGS
    tool_call_id: str
    delta: str


class ToolCallEnd(BaseEvent):
    type: Literal[EventType.TOOL_CALL_END] = EventType.TOOL_CALL_END
    tool_call_id: str


class ToolCallResult(BaseEvent):
    type: Literal[EventType.TOOL_CALL_RESULT] = EventType.TOOL_CALL_RESULT
    message_id: str
    tool_call_id: str
    content: str
    role: Literal["tool"] = "tool"


class StateSnapshot(BaseEvent):
    type: Literal[EventType.STATE_SNAPSHOT] = EventType.STATE_SNAPSHOT
    snapshot: JsonValue


class MessagesSnapshot(BaseEvent):
    type: Literal[EventType.MESSAGES_SNAPSHOT] = EventType.MESSAGES_SNAPSHOT
    messages: list[dict[str, Any]]


AgUiEvent = (
    RunStarted
    | RunFinished
    | RunError
    | TextMessageStart
    | TextMessageContent
    | TextMessageEnd
    | ToolCallStart
    | ToolCallArgs
    | ToolCallEnd
    | ToolCallResult
    | StateSnapshot
    | MessagesSnapshot
)


class RunErrorCode(StrEnum):
    """Stable ``RUN_ERROR.code`` values: clients branch on these, never on ``message``."""

    #: the thread has open interrupts and the input carries no ``resume`` (rule 4), or a new message with one
    INTERRUPTS_PENDING = "agentturn:interrupts_pending"
    #: ``resume`` does not answer every open interrupt (rule 3)
    RESUME_INCOMPLETE = "agentturn:resume_incomplete"
    #: ``resume`` names an interrupt the thread does not have open (unknown, stale, or another thread's)
    RESUME_UNKNOWN_INTERRUPT = "agentturn:resume_unknown_interrupt"
    #: a payload fails the interrupt's ``responseSchema`` (or the card's own rules)
    RESUME_INVALID_PAYLOAD = "agentturn:resume_invalid_payload"
    #: a resume after the interrupt's ``expiresAt`` (rule 7)
    RESUME_EXPIRED = "agentturn:resume_expired"
    #: an interrupt answered before with another answer
    RESUME_CONFLICT = "agentturn:resume_conflict"
    #: a new message while a turn of the thread is still running
    THREAD_BUSY = "agentturn:thread_busy"
    #: the turn ended without an answer (failed, cancelled, a limit reached); ``message`` says which
    TURN_ENDED = "agentturn:turn_ended"
    #: the request ran out of time; the turn continues on the server (run again without input for its outcome)
    CONTINUING = "agentturn:continuing"
    #: storage throttled or unavailable; try again
    UNAVAILABLE = "agentturn:unavailable"
    #: a server fault (logged)
    INTERNAL = "agentturn:internal"
