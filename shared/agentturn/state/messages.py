"""Messages of a conversation: what the model sees (user, ai, tool) and the UI cards it never sees."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, model_validator

from agentturn.state.approvers import Assignment
from agentturn.state.wire import WireModel, accept_schema_underscore, schema_field_allowed, warn_schema_underscore


class ToolCall(WireModel):
    id: str
    name: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)


class _TimelineFields(WireModel):
    """Fields every timeline entry carries; filled in when a turn's messages are projected."""

    message_id: str = ""
    turn_id: str | None = None
    #: Order of the entry within the conversation timeline (assigned by the projection).
    sort_key: str = ""


class UserMessage(_TimelineFields):
    type: Literal["user"] = "user"
    content: str
    model_visible: Literal[True] = True


class AiMessage(_TimelineFields):
    type: Literal["ai"] = "ai"
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    model_visible: Literal[True] = True


class ToolMessage(_TimelineFields):
    type: Literal["tool"] = "tool"
    tool_call_id: str
    #: The tool's result as JSON (a string for plain-text tools).
    content: JsonValue
    tool_name: str = ""
    model_visible: Literal[True] = True
    #: Who wrote the result, when not the tool: ``{"writtenBy": "person"}`` for an answer a person gave in the
    #: tool's place (``ResumeCommand.respond``).
    metadata: dict[str, JsonValue] = Field(default_factory=dict)


ModelMessage = Annotated[UserMessage | AiMessage | ToolMessage, Field(discriminator="type")]


class FormStatus(StrEnum):
    PENDING = "PENDING"
    SUBMITTED = "SUBMITTED"
    CANCELLED = "CANCELLED"
    #: the person closed the form instead of filling it in
    DECLINED = "DECLINED"
    #: nobody answered before the turn's input timeout
    EXPIRED = "EXPIRED"


class ApprovalStatus(StrEnum):
    PENDING = "PENDING"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"
    CANCELLED = "CANCELLED"
    EXPIRED = "EXPIRED"
    #: a person answered in the tool's place: the tool did not run, their answer is its result
    RESPONDED = "RESPONDED"


class CardAction(StrEnum):
    SUBMIT = "SUBMIT"
    APPROVE = "APPROVE"
    REJECT = "REJECT"
    RESPOND = "RESPOND"


with schema_field_allowed():

    class FormMessage(_TimelineFields):
        """The UI card of a form: carries the frozen JSON Schema; never part of the model's context."""

        type: Literal["agent_form"] = "agent_form"
        action_id: str
        form_key: str
        description: str = ""
        #: The JSON Schema frozen when the form was asked for (``card.schema``; wire name ``schema``).
        schema: dict[str, Any]  # type: ignore[assignment]  # shadows BaseModel.schema, pydantic v1's classmethod
        #: "MODEL" when the model asked via request_user_input, "TOOL" when a business tool raised FormRequired.
        input_target: Literal["MODEL", "TOOL"] = "MODEL"
        tool_name: str = ""
        status: FormStatus = FormStatus.PENDING
        actions: list[CardAction] = Field(default_factory=lambda: [CardAction.SUBMIT])
        submitted_values: dict[str, Any] | None = None
        submitted_by: str | None = None
        submitted_at: str | None = None
        #: the submitted values were removed (the agent's retention policy); the card still shows it was answered
        values_redacted: bool = False
        decline_reason: str | None = None
        #: when an unanswered form expires (ISO-8601 UTC), if the turn has an input timeout
        expires_at: str | None = None
        #: who may answer besides the owner, and each decision so far (None: the owner answers alone)
        people: Assignment | None = None
        model_visible: Literal[False] = False
        version: int = 1

        @model_validator(mode="before")
        @classmethod
        def _legacy_schema_keyword(cls, data: Any) -> Any:
            return accept_schema_underscore(data)

        @property
        def schema_(self) -> dict[str, Any]:
            """Deprecated: the name this field had while pydantic's ``BaseModel.schema`` was in the way."""
            warn_schema_underscore()
            return self.schema


class ApprovalMessage(_TimelineFields):
    """The UI card of a tool call waiting for a person's approval."""

    type: Literal["agent_approval"] = "agent_approval"
    action_id: str
    tool_name: str
    #: The arguments as the model proposed them (what the card showed).
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: sha256 of the canonical JSON of ``arguments``: an approval naming another fingerprint is refused.
    arguments_fingerprint: str | None = None
    message: str = ""
    status: ApprovalStatus = ApprovalStatus.PENDING
    actions: list[CardAction] = Field(
        default_factory=lambda: [CardAction.APPROVE, CardAction.REJECT, CardAction.RESPOND]
    )
    decided_by: str | None = None
    decided_at: str | None = None
    reason: str | None = None
    #: Approved with these arguments instead of ``arguments`` (the tool ran with them).
    edited_arguments: dict[str, Any] | None = None
    #: RESPONDED: what the person answered in the tool's place (the model saw it as the tool's result).
    response: JsonValue = None
    #: when an unanswered approval expires (ISO-8601 UTC), if its wait has a deadline
    expires_at: str | None = None
    #: who may answer besides the owner, and each decision so far (None: the owner answers alone)
    people: Assignment | None = None
    model_visible: Literal[False] = False
    version: int = 1


CardMessage = Annotated[FormMessage | ApprovalMessage, Field(discriminator="type")]
TimelineMessage = Annotated[
    UserMessage | AiMessage | ToolMessage | FormMessage | ApprovalMessage, Field(discriminator="type")
]


def is_settled(card: FormMessage | ApprovalMessage) -> bool:
    """Whether ``card`` was answered or closed: its status leaves PENDING once, in the save that answers, cancels
    or expires it, and never changes again (only a form's values may still be redacted, when its tool completes)."""
    return card.status != "PENDING"


def form_message_id(turn_id: str, action_id: str) -> str:
    return f"{turn_id}:input:{action_id}"


def approval_message_id(turn_id: str, action_id: str) -> str:
    return f"{turn_id}:approval:{action_id}"
