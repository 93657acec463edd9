"""``RunAgentInput`` as this server reads it.

The client's ``messages`` are its copy of the conversation; the server's timeline is the truth. Of them only
the newest user message counts, and only when it is new: the last message the client sends, with role
``user``, whose id the timeline does not know (a reload re-sends the snapshot it was given, whose user
messages carry timeline ids). Approvals and form data arrive only through ``resume``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from agentturn.api.models import CONVERSATION_ID_PATTERN

#: Most resume entries one input may carry (one per pending card; a model message asks for few).
MAX_RESUME: Final = 64


class _Lenient(BaseModel):
    """Parts of the input this server does not interpret: extra keys are the client's business."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class ResumeStatus(StrEnum):
    RESOLVED = "resolved"
    CANCELLED = "cancelled"


class ResumeEntry(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    interrupt_id: str = Field(min_length=1, max_length=512)
    status: ResumeStatus
    payload: JsonValue = None
    metadata: dict[str, JsonValue] | None = None


class InputMessage(_Lenient):
    id: str = Field(default="", max_length=512)
    role: str
    content: JsonValue = None


class RunAgentInput(_Lenient):
    """The fields of AG-UI's ``RunAgentInput`` this server reads; the rest (tools, context, state,
    forwardedProps) is accepted and not acted on: the agent's tools and state are the server's."""

    thread_id: str = Field(pattern=CONVERSATION_ID_PATTERN)
    run_id: str = Field(min_length=1, max_length=128)
    parent_run_id: str | None = None
    messages: list[InputMessage] = Field(default_factory=list)
    resume: list[ResumeEntry] | None = Field(default=None, max_length=MAX_RESUME)
    state: JsonValue = None
    tools: list[Any] = Field(default_factory=list)
    context: list[Any] = Field(default_factory=list)
    forwarded_props: JsonValue = None

    @field_validator("resume")
    @classmethod
    def _distinct(cls, value: list[ResumeEntry] | None) -> list[ResumeEntry] | None:
        if value is not None:
            ids = [entry.interrupt_id for entry in value]
            if len(ids) != len(set(ids)):
                raise ValueError("each interruptId may be answered once")
        return value


class InputError(ValueError):
    """The body is not a ``RunAgentInput``: ``errors`` as the HTTP API lists them (``path``, ``in``, ``message``)."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        super().__init__("; ".join(f"{e['path']}: {e['message']}" for e in errors))
        self.errors = errors


def _pointer(location: tuple[int | str, ...]) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in location)


def parse_input(document: object) -> RunAgentInput:
    """The validated input, or :class:`InputError` naming every field that is wrong."""
    if not isinstance(document, dict):
        raise InputError([{"path": "", "in": "body", "message": "the body must be a RunAgentInput object"}])
    try:
        return RunAgentInput.model_validate(document)
    except ValidationError as exc:
        raise InputError(
            [
                {
                    "path": _pointer(tuple(e["loc"])),
                    "in": "body",
                    "message": str(e["msg"]).removeprefix("Value error, "),
                }
                for e in exc.errors()
            ]
        ) from None


def message_text(content: JsonValue) -> str | None:
    """A user message's text: a string, or the text parts of AG-UI's multimodal content (others ignored)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            text
            for part in content
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(text := part.get("text"), str)
        ]
        return "\n".join(texts) if texts else None
    return None


def new_user_text(run_input: RunAgentInput, known_ids: set[str]) -> str | None:
    """The turn input this run carries: the text of the last message if it is a user message the timeline does
    not hold; ``None`` otherwise (a reload, a resume, a run that only asks for the current state)."""
    if not run_input.messages:
        return None
    last = run_input.messages[-1]
    if last.role != "user" or (last.id and last.id in known_ids):
        return None
    text = message_text(last.content)
    if text is None or not text.strip():
        return None
    return text
