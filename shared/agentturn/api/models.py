"""Request bodies and public views of the HTTP API (camelCase JSON); the OpenAPI document is built from them.

Views expose what a client needs and nothing of the runtime's bookkeeping: no tool states, no accepted
request fingerprints, no projection marks, no owner ids.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator
from pydantic.alias_generators import to_camel

from agentturn.state.messages import TimelineMessage
from agentturn.state.turn import SuspensionType, TurnPhase, TurnStatus
from agentturn.state.wire import accept_schema_underscore, schema_field_allowed, warn_schema_underscore

#: Conversation ids are chosen by clients; no "/" so that "<owner>/<conversation>" stays unambiguous.
CONVERSATION_ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
AGENT_ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
MAX_INPUT_CHARS: Final = 32_000
MAX_METADATA_KEYS: Final = 32
MAX_REASON_CHARS: Final = 2_000
#: Metadata keys the runtime sets itself; a client may not.
RESERVED_METADATA_KEYS: Final = frozenset({"ownerId"})


class ApiModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True)


# ------------------------------------------------------------------------------------------ requests


class StartTurnRequest(ApiModel):
    input: str = Field(min_length=1, max_length=MAX_INPUT_CHARS, description="What the user says.")
    agent_id: str | None = Field(
        default=None, pattern=AGENT_ID_PATTERN, description="The agent to run; the deployment's default if absent."
    )
    metadata: dict[str, JsonValue] | None = Field(
        default=None,
        max_length=MAX_METADATA_KEYS,
        description="Caller attributes kept with the turn (channel, locale, ...).",
    )

    @field_validator("input")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("input must contain more than whitespace")
        return value

    @field_validator("metadata")
    @classmethod
    def _no_reserved_keys(cls, value: dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
        reserved = sorted(RESERVED_METADATA_KEYS.intersection(value or {}))
        if reserved:
            raise ValueError(f"metadata keys {reserved!r} are set by the runtime")
        return value


class SubmitFormRequest(ApiModel):
    data: dict[str, JsonValue] = Field(description="The form's values; validated against the schema on the card.")


class DeclineRequest(ApiModel):
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS, description="Shown to the model.")


class ApproveRequest(ApiModel):
    """An empty body or ``{}`` approves the call as shown; ``arguments`` approves it with edits."""

    arguments: dict[str, JsonValue] | None = Field(
        default=None,
        description="Run the tool with these arguments instead of the model's; validated against the tool's "
        "parameter schema (`parametersSchema` of the pending action), with the rules of forms.",
    )
    arguments_fingerprint: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description="The `argumentsFingerprint` of the card the person saw: if the card's arguments are not "
        "those, the approval is refused (409). Without it, the action id alone names the call.",
    )


class RespondRequest(ApiModel):
    """Answer in the tool's place: the tool does not run; ``content`` is its result for the model."""

    content: JsonValue = Field(description="Any JSON value but null; the model reads it as the tool's result.")

    @field_validator("content")
    @classmethod
    def _not_null(cls, value: JsonValue) -> JsonValue:
        if value is None:
            raise ValueError("content must not be null")
        return value


class RejectRequest(ApiModel):
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS, description="Shown to the model.")


# ------------------------------------------------------------------------------------------- views


with schema_field_allowed():

    class SuspensionView(ApiModel):
        type: SuspensionType
        #: The id the answer must name (``/turns/{turnId}/actions/{actionId}/...``).
        action_id: str
        #: The same value under the runtime's name for it.
        correlation_id: str
        message: str
        form_key: str | None = None
        #: The JSON Schema frozen when the turn stopped: render and validate against this one.
        schema: dict[str, Any] | None = None  # type: ignore[assignment]  # shadows BaseModel.schema (pydantic v1)
        tool_name: str | None = None
        input_target: Literal["MODEL", "TOOL"] | None = None
        #: For approvals: the arguments of the tool call waiting for a decision.
        arguments: dict[str, Any] | None = None
        #: For approvals: sha256 (hex) of the canonical JSON of ``arguments``; send it back with the approval.
        arguments_fingerprint: str | None = None
        #: For approvals: the tool's parameter schema (frozen with the wait), to edit the arguments against.
        parameters_schema: dict[str, Any] | None = None
        #: ISO-8601 UTC time after which the wait can no longer be answered, when the turn has an input timeout.
        expires_at: str | None = None
        #: For a wait that names its answerers (``Approvers``): ``waiting for finance (1 of 2)``. Absent where the
        #: turn's owner answers.
        waiting_for: str | None = None

        @model_validator(mode="before")
        @classmethod
        def _legacy_schema_keyword(cls, data: Any) -> Any:
            return accept_schema_underscore(data)

        @property
        def schema_(self) -> dict[str, Any] | None:
            """Deprecated: the name this field had while pydantic's ``BaseModel.schema`` was in the way."""
            warn_schema_underscore()
            return self.schema


class ToolCallView(ApiModel):
    id: str
    name: str
    arguments: dict[str, Any]


class TurnErrorView(ApiModel):
    type: str
    message: str


class RetryView(ApiModel):
    """The turn failed an attempt for a reason that may pass and will be tried again (not before ``notBefore``)."""

    attempts: int
    reason: str
    not_before: str | None


class TurnView(ApiModel):
    turn_id: str
    conversation_id: str
    agent_id: str
    agent_version: str
    status: TurnStatus
    phase: TurnPhase
    #: The first of ``pendingActions`` (for clients that handle one decision at a time).
    suspension: SuspensionView | None
    #: Every decision the turn waits for, in the order of the model's calls; each is answered on its own.
    pending_actions: list[SuspensionView] = Field(default_factory=list)
    pending_tool_calls: list[ToolCallView]
    final_output: str | None
    error: TurnErrorView | None
    #: Present while a failed attempt waits to be retried (a throttled model, an agent not deployed yet).
    retry: RetryView | None = None
    iteration_count: int
    step_count: int
    tool_call_count: int
    cancel_requested: bool
    metadata: dict[str, Any]
    version: int
    created_at: str
    updated_at: str


class ActionAccepted(ApiModel):
    """Built only from what the turn stored when it accepted the request: a retry gets these same bytes."""

    turn_id: str
    action_id: str | None
    status: Literal["ACCEPTED"] = "ACCEPTED"
    #: The turn version that holds the answer; ``GET /turns/{turnId}`` shows progress from there.
    version: int
    accepted_at: str


class CancelAccepted(ApiModel):
    turn_id: str
    status: Literal["CANCEL_REQUESTED"] = "CANCEL_REQUESTED"


class MessagesView(ApiModel):
    conversation_id: str
    #: The turn holding the conversation, while one has not finished.
    active_turn_id: str | None
    #: Oldest first: user, ai and tool messages and the ``agent_form`` / ``agent_approval`` cards, in the
    #: wire format of DESIGN.md (without the storage sort key).
    messages: list[TimelineMessage]

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, exclude={"messages": {"__all__": {"sort_key"}}})


class ConversationSummaryView(ApiModel):
    conversation_id: str
    #: The start of the first line of the conversation's first message.
    title: str
    #: When its latest turn started (ISO 8601, UTC).
    last_activity_at: str


class ConversationsView(ApiModel):
    """The caller's conversations, newest activity first."""

    conversations: list[ConversationSummaryView]
    #: Opaque; pass it as ``cursor`` for the next (older) page. Absent on the last page.
    next_cursor: str | None = None


class InboxItemView(ApiModel):
    """A card waiting for the caller: in a conversation of theirs, or assigned to them or a group of theirs."""

    turn_id: str
    action_id: str
    #: ``agent_approval`` or ``agent_form``
    type: str
    #: The caller's own conversation id, when the card is in a conversation of theirs (absent for an approver).
    conversation_id: str | None = None
    #: What the turn is about (the first line of its input), for an approver who cannot open the conversation.
    title: str = ""
    #: The card's title: the tool to approve, or the form's description.
    card_title: str
    #: Who asked (the subject who started the turn).
    requested_by: str | None = None
    #: Since when it waits (ISO 8601, UTC), when known.
    since: str | None = None
    #: When it can no longer be answered (ISO 8601, UTC); absent when it waits forever.
    deadline: str | None = None
    #: ``waiting for finance (1 of 2)`` on a card several people answer.
    waiting_for: str | None = None
    #: The card itself (arguments, schema, decisions so far): what an approver needs to decide.
    card: TimelineMessage


class InboxView(ApiModel):
    """What waits for the caller, deadline first (none last), then oldest first."""

    items: list[InboxItemView]
    #: Opaque and the caller's alone; pass it as ``cursor`` for the next page. Absent on the last page.
    next_cursor: str | None = None

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, exclude={"items": {"__all__": {"card": {"sort_key"}}}})


class AuditView(ApiModel):
    """The turn's decisions, one immutable record each, in the order they were made."""

    turn_id: str
    records: list[dict[str, Any]]
    #: what the tools of approved cards did, one record each (beside the decisions, never written into them)
    outcomes: list[dict[str, Any]] = Field(default_factory=list)


class ProblemLocation(StrEnum):
    """Which part of the request a field problem is in (absent for form data: its paths point into ``data``)."""

    BODY = "body"
    QUERY = "query"
    PATH = "path"
    HEADER = "header"


class FieldProblem(ApiModel):
    path: str = Field(description="JSON Pointer; for form-validation, into the submitted data object.")
    location: ProblemLocation | None = Field(
        default=None,
        alias="in",
        description="Where in the request the field is (a query parameter, a header, ...); absent for form data.",
    )
    message: str


class Problem(ApiModel):
    """RFC 9457 problem details."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    errors: list[FieldProblem] | None = None
