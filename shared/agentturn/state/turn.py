"""The turn: one serialisable pydantic model that is the whole durable state of an agent turn."""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, model_validator

from agentturn.state.approvers import Assignment
from agentturn.state.commands import ResumeCommand
from agentturn.state.messages import (
    ApprovalMessage,
    CardMessage,
    FormMessage,
    ModelMessage,
    ToolCall,
)
from agentturn.state.wire import WireModel

#: Bumped whenever the stored shape of Turn changes incompatibly; loaders refuse versions they do not know.
#: 2: ``suspensions`` (every pending decision) replaced the single ``suspension``; version 1 still loads.
#: 3: messages and cards may leave out the timeline identity their turn implies (agentturn.timeline.identity).
SCHEMA_VERSION = 3


class TurnStatus(StrEnum):
    READY = "READY"
    RUNNING = "RUNNING"
    WAITING_FOR_USER = "WAITING_FOR_USER"
    WAITING_FOR_APPROVAL = "WAITING_FOR_APPROVAL"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    MAX_ITERATIONS_REACHED = "MAX_ITERATIONS_REACHED"
    MAX_STEPS_REACHED = "MAX_STEPS_REACHED"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"

    @property
    def is_blocked(self) -> bool:
        return self in _BLOCKED

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL

    @property
    def is_runnable(self) -> bool:
        """A worker may claim and continue the turn."""
        return self in _RUNNABLE


_BLOCKED = frozenset({TurnStatus.WAITING_FOR_USER, TurnStatus.WAITING_FOR_APPROVAL})
_RUNNABLE = frozenset({TurnStatus.READY, TurnStatus.RUNNING})
_TERMINAL = frozenset(
    {
        TurnStatus.COMPLETED,
        TurnStatus.FAILED,
        TurnStatus.CANCELLED,
        TurnStatus.MAX_ITERATIONS_REACHED,
        TurnStatus.MAX_STEPS_REACHED,
        TurnStatus.BUDGET_EXCEEDED,
    }
)


class TurnPhase(StrEnum):
    MODEL = "MODEL"
    TOOLS = "TOOLS"
    FINISHED = "FINISHED"


class SuspensionType(StrEnum):
    USER_INPUT = "USER_INPUT"
    TOOL_APPROVAL = "TOOL_APPROVAL"


InputTarget = Literal["MODEL", "TOOL"]
#: When a turn waiting on several decisions continues: once all are answered, or after each answer.
ResumeAfter = Literal["all", "each"]


class Suspension(WireModel):
    """Why a turn waits and what resumes it: ``correlation_id`` is the action id a resume must name."""

    type: SuspensionType
    correlation_id: str
    message: str = ""
    resume_phase: TurnPhase = TurnPhase.MODEL
    #: For forms: formKey, schema (frozen copy), toolName, inputTarget ("MODEL" or "TOOL").
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: Epoch seconds after which nobody may answer any more (the input timeout); None waits forever.
    expires_at: float | None = None
    #: Frozen with the wait: what its expiry does (tell the model, or cancel the turn).
    on_expiry: Literal["return_to_model", "cancel"] = "return_to_model"
    #: Frozen with the wait: whether answering it resumes the turn while other decisions still wait.
    resume_after: ResumeAfter = "all"
    #: Frozen with the wait: who may answer it and each decision so far (None: its owner answers alone).
    people: Assignment | None = None

    def is_expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    @classmethod
    def user_input(cls, message: str) -> Suspension:
        """A plain-text wait point: resumed by ``ResumeCommand.user_input(content)``; no form card."""
        return cls(
            type=SuspensionType.USER_INPUT,
            correlation_id=f"text-{uuid.uuid4().hex[:12]}",
            message=message,
            resume_phase=TurnPhase.MODEL,
        )

    @property
    def is_form(self) -> bool:
        return self.type is SuspensionType.USER_INPUT and "formKey" in self.metadata

    @property
    def input_target(self) -> InputTarget | None:
        target = self.metadata.get("inputTarget")
        return target if target in ("MODEL", "TOOL") else None

    # Typed reads of the metadata: the stored shape stays the seed's camelCase dict.

    @property
    def action_id(self) -> str:
        """The id an answer must name (``ResumeCommand.submit_form(action_id, ...)``); = ``correlation_id``."""
        return self.correlation_id

    @property
    def form_key(self) -> str | None:
        """The form asked for; None for a plain-text wait or a tool approval."""
        key = self.metadata.get("formKey")
        return key if isinstance(key, str) else None

    @property
    def schema(self) -> dict[str, Any] | None:  # type: ignore[override]  # BaseModel.schema: pydantic v1's classmethod
        """The JSON Schema frozen when the form was asked for (a copy: editing it changes no stored turn)."""
        schema = self.metadata.get("schema")
        return copy.deepcopy(schema) if isinstance(schema, dict) else None

    @property
    def tool_name(self) -> str | None:
        """The tool that asked for the form, or whose call waits for approval."""
        name = self.metadata.get("toolName")
        return name if isinstance(name, str) else None

    @property
    def arguments(self) -> dict[str, Any] | None:
        """For an approval: the arguments of the call as shown to the person (a copy)."""
        arguments = self.metadata.get("arguments")
        return copy.deepcopy(arguments) if isinstance(arguments, dict) else None

    @property
    def arguments_fingerprint(self) -> str | None:
        """For an approval: the fingerprint of exactly the arguments shown (:func:`arguments_fingerprint`)."""
        stored = self.metadata.get("argumentsFingerprint")
        if isinstance(stored, str):
            return stored
        # A wait frozen before fingerprints existed: the same function of the same stored arguments.
        arguments = self.metadata.get("arguments")
        return arguments_fingerprint(arguments) if isinstance(arguments, dict) else None

    @property
    def parameters_schema(self) -> dict[str, Any] | None:
        """For an approval: the tool's parameter schema frozen with the wait (edited arguments obey it)."""
        schema = self.metadata.get("parametersSchema")
        return copy.deepcopy(schema) if isinstance(schema, dict) else None

    @property
    def waiting_status(self) -> TurnStatus:
        """The status of a turn whose first pending decision is this one."""
        if self.type is SuspensionType.TOOL_APPROVAL:
            return TurnStatus.WAITING_FOR_APPROVAL
        return TurnStatus.WAITING_FOR_USER


def arguments_fingerprint(arguments: dict[str, Any]) -> str:
    """sha256 (hex) of the canonical JSON of ``arguments``: sorted keys, no spaces, UTF-8, as a client
    can compute it too. An approval that names another fingerprint was given for other arguments."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class ToolCallState(WireModel):
    """Per logical tool call: what survives suspension and replay."""

    #: counted against max_tool_calls (a replay of the same call is not counted again)
    counted: bool = False
    #: a person approved this call; it runs without asking again
    approved: bool = False
    #: the form this call's tool asked for, once submitted; removed when the tool completes (invariant 8)
    submitted_form_data: dict[str, Any] | None = None
    #: the tool already raised FormRequired once; raising it again after submission is a protocol error
    form_requested: bool = False
    #: a person approved the call with these arguments instead of the model's; the tool runs with them, and
    #: its ToolMessage says so (removed when the tool completes)
    edited_arguments: dict[str, Any] | None = None
    #: the state a tool gave with its input round (``InputRoundRequired``), kept until the tool completes
    round_state: dict[str, Any] | None = None
    #: the answers of the call's current round by request key (``{"action", "content"?}``), once any is given
    round_answers: dict[str, dict[str, Any]] | None = None
    #: how many input rounds the call asked
    rounds: int = 0


class TurnErrorInfo(WireModel):
    type: str
    message: str


class RetryState(WireModel):
    """A run that failed for a reason that may pass (a throttled model, an agent version not deployed here):
    how many attempts in a row failed, why the last one did, and when the next may start."""

    attempts: int = 0
    reason: str = ""
    error: str = ""
    #: epoch seconds; before it, a worker leaves the turn alone (see :meth:`Turn.is_due`)
    not_before: float | None = None


class ProjectionMark(WireModel):
    """What the timeline holds of this turn once the projection after the save that carries this record ran
    (:mod:`agentturn.timeline.projection`)."""

    messages: int = 0
    cards: dict[str, int] = Field(default_factory=dict)


class AcceptedRequest(WireModel):
    """An accepted resume request, by its idempotency key: a retry with the same body gets the same answer."""

    fingerprint: str
    action_id: str | None
    version: int
    accepted_at: str
    #: the subject who gave it, for an answer to a card with approvers (their key is theirs alone)
    by: str | None = None


#: How many accepted request ids a turn remembers (a turn sees a handful of resumes; this bounds the snapshot).
MAX_ACCEPTED_REQUESTS = 64


class QueuedAnswer(WireModel):
    """An answer to a PENDING card of a turn that was running when it came (``resume_after="each"``): kept by
    the store beside the snapshot, outside its body, until the run that holds the turn applies it as it waits
    again (:mod:`agentturn.engine.queued_answers`)."""

    command: ResumeCommand
    #: The store-clock epoch seconds the submit accepted it: the answer is applied as of then (its card shows it).
    accepted_at: float
    #: Recognises a queueing write whose answer was lost as ours.
    nonce: str


class Turn(WireModel):
    schema_version: int = SCHEMA_VERSION
    id: str
    conversation_id: str
    agent_id: str
    agent_version: str
    status: TurnStatus = TurnStatus.READY
    phase: TurnPhase = TurnPhase.MODEL
    input: str = ""
    messages: list[ModelMessage] = Field(default_factory=list)
    pending_tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_states: dict[str, ToolCallState] = Field(default_factory=dict)
    #: Every decision the turn waits for, in the order of the calls that asked (see :attr:`suspension`).
    suspensions: list[Suspension] = Field(default_factory=list)
    cards: list[CardMessage] = Field(default_factory=list)
    final_output: str | None = None
    error: TurnErrorInfo | None = None
    iteration_count: int = 0
    step_count: int = 0
    tool_call_count: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)
    version: int = 0
    cancel_requested: bool = False
    created_at: str = ""
    updated_at: str = ""
    event_sequence: int = 0
    projection: ProjectionMark = Field(default_factory=ProjectionMark)
    accepted_requests: dict[str, AcceptedRequest] = Field(default_factory=dict)
    #: Seconds a person has to answer a wait point of this turn (overrides the agent's policy).
    input_timeout: float | None = None
    #: Epoch seconds after which a terminal turn may be deleted by the store (DynamoDB TTL).
    retain_until: float | None = None
    #: Set while the turn waits to be tried again after a failure that may pass; cleared by a run that works.
    retry: RetryState | None = None
    #: Answers the store kept beside the turn when it was read (:class:`QueuedAnswer`); never in the snapshot.
    queued_answers: list[QueuedAnswer] = Field(default_factory=list, exclude=True)
    #: How many of the queued answers this copy has applied (or dropped, on a terminal turn): its save removes
    #: them, on the condition that the store holds exactly that many. Never in the snapshot.
    answers_taken: int = Field(default=0, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _single_suspension(cls, data: Any) -> Any:
        """A snapshot of schema version 1 (or a caller's ``suspension=...``) held one wait: the list's only one.
        A snapshot saved by an earlier release may say ``historyEmpty``, which nothing reads any more."""
        if isinstance(data, dict) and "historyEmpty" in data:
            data = {k: v for k, v in data.items() if k != "historyEmpty"}
        if isinstance(data, dict) and "suspension" in data:
            if "suspensions" in data:
                raise ValueError("give `suspensions` or `suspension`, not both")
            data = dict(data)
            single = data.pop("suspension")
            data["suspensions"] = [] if single is None else [single]
        return data

    @property
    def suspension(self) -> Suspension | None:
        """The first pending decision (kept for callers that handle one at a time); None when none waits."""
        return self.suspensions[0] if self.suspensions else None

    @suspension.setter
    def suspension(self, value: Suspension | None) -> None:
        self.suspensions = [] if value is None else [value]

    def suspension_for(self, action_id: str | None) -> Suspension | None:
        """The pending decision ``action_id`` names, if it still waits."""
        return next((s for s in self.suspensions if s.correlation_id == action_id), None)

    def is_due(self, now: float) -> bool:
        """Whether a worker may run the turn now (not inside the backoff of a failed attempt)."""
        return self.retry is None or self.retry.not_before is None or now >= self.retry.not_before

    def card(self, message_id: str) -> FormMessage | ApprovalMessage | None:
        return next((c for c in self.cards if c.message_id == message_id), None)

    def pending_cards(self) -> list[FormMessage | ApprovalMessage]:
        return [c for c in self.cards if c.status.value == "PENDING"]

    def tool_state(self, call_id: str) -> ToolCallState:
        return self.tool_states.setdefault(call_id, ToolCallState())

    @property
    def timeline_prefix(self) -> str:
        """Sort-key prefix of this turn's timeline entries: turns of a conversation are sequential."""
        return f"{self.created_at}#{self.id}"
