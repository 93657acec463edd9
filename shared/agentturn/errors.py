"""Typed errors of the core. Adapters translate their SDK's errors into these.

Every error here survives ``pickle`` (a worker pool, a multiprocessing test) with its attributes: the base
class rebuilds an error from its message and attributes without calling ``__init__``, so no subclass has to
keep its constructor's signature and its ``args`` in step.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


def _rebuild(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class AgentTurnError(Exception):
    """Base class of every error agentturn raises on purpose."""

    def __reduce__(self) -> tuple[Any, ...]:
        # The default reduction calls ``cls(*self.args)``, which breaks on keyword-only or differently
        # shaped constructors (and garbles errors whose message is not their first argument).
        return (_rebuild, (self.__class__, self.args, dict(self.__dict__)))


class StorageError(AgentTurnError):
    """A storage request failed, and trying it again as it is will not help (a bug, a misconfiguration).

    Adapters raise it (or :class:`StorageUnavailableError`) in place of their SDK's errors: nothing above
    the ports knows the SDK. ``retryable`` says whether the same request may succeed later; ``code`` is the
    service's error code, when it gave one.
    """

    def __init__(self, message: str, *, code: str | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.retryable = retryable


class StorageUnavailableError(StorageError):
    """The storage service did not answer now: throttled, a 5xx, a lost connection or a timeout. The same
    request may succeed later (HTTP answers 503; the SQS worker fails only that record, for SQS to retry)."""

    def __init__(self, message: str, *, code: str | None = None, retryable: bool = True) -> None:
        super().__init__(message, code=code, retryable=retryable)


class BodyTooLargeError(StorageError, ValueError):
    """A body does not fit in a DynamoDB item and no S3 bucket is configured to spill it to."""


class BodyMissingError(StorageError):
    """A stored item's body cannot be found: no body attribute, or an S3 object that does not exist (deleted
    by hand, replaced by a concurrent save, a foreign bucket). ``key`` is the object's key, if it has one."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class TurnNotFoundError(AgentTurnError):
    def __init__(self, turn_id: str) -> None:
        super().__init__(f"turn {turn_id!r} not found")
        self.turn_id = turn_id


class VersionConflictError(AgentTurnError):
    """A conditional write lost: the stored version (or lease) is not the one the writer expected."""

    def __init__(self, turn_id: str, expected_version: int | None, actual_version: int | None = None) -> None:
        detail = f"turn {turn_id!r}: expected version {expected_version!r}"
        if actual_version is not None:
            detail += f", found {actual_version!r}"
        super().__init__(detail)
        self.turn_id = turn_id
        self.expected_version = expected_version
        self.actual_version = actual_version


class LeaseLostError(VersionConflictError):
    """The writer's lease is no longer the current one: another worker owns the turn (fencing)."""

    def __init__(self, turn_id: str, lease_id: str) -> None:
        AgentTurnError.__init__(self, f"turn {turn_id!r}: lease {lease_id!r} is no longer held")
        self.turn_id = turn_id
        self.expected_version = None
        self.actual_version = None
        self.lease_id = lease_id


class AnswersQueuedError(VersionConflictError):
    """A save that would leave a turn waiting (or ended) found answers queued beside it that it had not taken:
    ``answers`` (the store's :class:`~agentturn.state.turn.QueuedAnswer` list, oldest first). Nothing was
    written; the writer applies them and saves again (:mod:`agentturn.engine.queued_answers`)."""

    def __init__(self, turn_id: str, answers: list[Any]) -> None:
        AgentTurnError.__init__(self, f"turn {turn_id!r}: {len(answers)} answer(s) queued beside it")
        self.turn_id = turn_id
        self.expected_version = None
        self.actual_version = None
        self.answers = answers


class HandoffLostError(VersionConflictError):
    """A run started from the snapshot its resume message carried found the turn held by another worker, or moved
    on since that snapshot (a duplicate delivery): nothing it computed was kept (:mod:`agentturn.engine.handoff`)."""

    def __init__(self, turn_id: str, version: int) -> None:
        AgentTurnError.__init__(self, f"turn {turn_id!r}: the snapshot at version {version} is no longer this run's")
        self.turn_id = turn_id
        self.expected_version = version
        self.actual_version = None


class SnapshotUnreadableError(AgentTurnError, ValueError):
    """A stored turn whose snapshot cannot be read: a corrupt or undecodable body, a body object that is gone,
    or a ``schemaVersion`` newer than this code reads.

    It carries what the store knows of the turn without its body (the item's own attributes), which is what
    counting its attempts and ending it FAILED need: ``status``, ``version``, ``conversation_id``, the
    unreadable ``attempts`` recorded so far and when the next one is due (``not_before``), and ``error_type``
    once it has ended FAILED (:data:`agentturn.ports.store.SNAPSHOT_UNREADABLE`).
    """

    def __init__(
        self,
        turn_id: str,
        detail: str,
        *,
        status: str | None = None,
        version: int = 0,
        conversation_id: str | None = None,
        attempts: int = 0,
        not_before: float | None = None,
        error_type: str | None = None,
    ) -> None:
        super().__init__(f"the snapshot of turn {turn_id!r} cannot be read: {detail}")
        self.turn_id = turn_id
        self.detail = detail
        self.status = status
        self.version = version
        self.conversation_id = conversation_id
        self.attempts = attempts
        self.not_before = not_before
        self.error_type = error_type


class SnapshotRoundTripError(AgentTurnError):
    """A turn's snapshot text does not read back as the turn (a serializer that loses or changes something):
    the write is refused before anything is stored. Raised by stores built with ``check_round_trip``."""

    def __init__(self, turn_id: str, field: str) -> None:
        super().__init__(f"the snapshot of turn {turn_id!r} does not read back as written: {field!r} differs")
        self.turn_id = turn_id
        self.field = field


class RefusalReason(StrEnum):
    """Why a resume command was refused. A ``str`` enum: ``reason == "turn_terminal"`` keeps working, and
    the HTTP layer maps the member, never the text of a message."""

    #: none of the reasons below (the default)
    INVALID_RESUME = "invalid_resume"
    #: the turn has no action with that id
    UNKNOWN_ACTION = "unknown_action"
    #: the action was answered or closed already
    ACTION_NOT_PENDING = "action_not_pending"
    #: the turn has finished (or is being cancelled)
    TURN_TERMINAL = "turn_terminal"
    #: the turn is not waiting for a person
    NOT_WAITING = "not_waiting"
    #: a form answer for an approval, or the other way round
    WRONG_COMMAND = "wrong_command"
    #: the turn cannot be suspended in its current state
    NOT_SUSPENDABLE = "not_suspendable"
    #: the time to answer has passed
    INPUT_EXPIRED = "input_expired"
    #: an approval given for other arguments than the card shows (its fingerprint differs)
    ARGUMENTS_CHANGED = "arguments_changed"
    #: an expiry was applied to a wait that has not expired
    NOT_EXPIRED = "not_expired"
    #: the caller may not answer this action (told as "no such action": it does not say the action exists)
    NOT_PERMITTED = "not_permitted"
    #: this person already decided on this action (a card that waits for several people)
    ALREADY_DECIDED = "already_decided"


class AwaitedAnswer(StrEnum):
    """The kind of answer a refused command should have been (``InvalidResumeError.awaited``), so that each
    surface (Python, HTTP, AG-UI) can say how to give it in its own terms."""

    #: a form card: submit its data, or decline it
    FORM = "form"
    #: a tool approval card: approve (maybe with edited arguments), reject, or respond in the tool's place
    TOOL_APPROVAL = "tool_approval"
    #: free text from the person
    TEXT = "text"


class InvalidResumeError(AgentTurnError):
    """A resume command that does not fit the turn: wrong type, wrong or stale action id, turn not blocked."""

    def __init__(
        self,
        message: str,
        *,
        reason: RefusalReason | str = RefusalReason.INVALID_RESUME,
        awaited: AwaitedAnswer | None = None,
        turn_id: str | None = None,
        action_id: str | None = None,
    ) -> None:
        super().__init__(message)
        # A plain string naming a member is accepted (and checked): a misspelt reason fails here, loudly.
        self.reason = RefusalReason(reason)
        #: For ``WRONG_COMMAND``: what the action waits for (the message words it for Python callers).
        self.awaited = awaited
        #: The turn and the action refused (where the refusal knows them): for an answer in HTTP's terms.
        self.turn_id = turn_id
        self.action_id = action_id


class FormValidationError(AgentTurnError):
    """Submitted form data does not satisfy the schema frozen in the snapshot."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        summary = "; ".join(f"{e['path']}: {e['message']}" for e in errors[:5])
        super().__init__(f"{self.subject} is invalid: {summary}")
        self.errors = errors

    @property
    def subject(self) -> str:
        return "form data"


class ToolArgumentsInvalidError(FormValidationError):
    """A person's edited arguments for an approved tool call do not satisfy the tool's parameter schema (frozen
    with the wait). A :class:`FormValidationError` (the same checks, the same ``errors``), worded as a tool call."""

    def __init__(self, tool_name: str | None, errors: list[dict[str, str]]) -> None:
        self.tool_name = tool_name
        super().__init__(errors)

    @property
    def subject(self) -> str:
        return f"the edited arguments of tool {self.tool_name!r}" if self.tool_name else "the edited arguments"


class ConversationBusyError(AgentTurnError):
    """The conversation already has an active (non-terminal) turn."""

    def __init__(self, conversation_id: str, active_turn_id: str | None) -> None:
        super().__init__(f"conversation {conversation_id!r} is busy with turn {active_turn_id!r}")
        self.conversation_id = conversation_id
        self.active_turn_id = active_turn_id


class UnknownAgentError(AgentTurnError):
    def __init__(self, agent_id: str, version: str | None = None) -> None:
        what = f"agent {agent_id!r}" + (f" version {version!r}" if version is not None else "")
        super().__init__(f"{what} is not registered")
        self.agent_id = agent_id
        self.version = version


class AgentChangedError(UnknownAgentError):
    """The version a turn was started with is gone, and the version that declares it continues it
    (``Agent(continues=...)``) cannot: ``problems`` says why (a tool the turn waits on is gone, a form's frozen
    schema is no longer the one offered)."""

    def __init__(self, agent_id: str, version: str, successor: str, problems: list[str]) -> None:
        AgentTurnError.__init__(
            self,
            f"agent {agent_id!r} version {successor!r} cannot continue a turn of version {version!r}: "
            + "; ".join(problems),
        )
        self.agent_id = agent_id
        self.version = version
        self.successor = successor
        self.problems = problems


class ToolProtocolError(AgentTurnError):
    """A tool broke the form protocol (e.g. raised FormRequired again after data was submitted)."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details


class IdempotencyConflictError(AgentTurnError):
    """The same request id was used before with a different request."""

    def __init__(self, turn_id: str, request_id: str) -> None:
        super().__init__(f"request id {request_id!r} was already used on turn {turn_id!r} with a different request")
        self.turn_id = turn_id
        self.request_id = request_id


class ModelErrorKind(StrEnum):
    """Why a chat model call failed, independent of the provider."""

    #: the provider is rate-limiting this caller (HTTP 429, Bedrock ``ThrottlingException``)
    THROTTLED = "throttled"
    #: the request was refused as invalid (HTTP 400/422, Bedrock ``ValidationException``)
    INVALID_REQUEST = "invalid_request"
    #: missing, wrong or insufficient credentials (HTTP 401/403, Bedrock ``AccessDeniedException``)
    AUTH = "auth"
    #: the model or endpoint does not exist (HTTP 404, Bedrock ``ResourceNotFoundException``)
    NOT_FOUND = "not_found"
    #: no answer in time
    TIMEOUT = "timeout"
    #: the endpoint could not be reached, or the connection broke
    CONNECTION = "connection"
    #: the provider or the model failed on its side (HTTP 5xx, Bedrock ``InternalServerException``)
    SERVER_ERROR = "server_error"
    #: the provider answered something that is not a usable chat response
    MALFORMED_RESPONSE = "malformed_response"
    #: the adapter is not set up to make a call (no region, no credentials found, ...)
    CONFIGURATION = "configuration"


class ModelError(AgentTurnError):
    """A chat model call failed: refused, throttled, timed out, unreachable, or answered nonsense.

    ``kind`` says why in provider-neutral terms; ``retryable`` whether the same request may succeed later
    (``retry_after``, in seconds, when the provider said how long to wait); ``status`` is the HTTP status
    and ``code`` the provider's error code, when there were any. The message never holds credentials.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ModelErrorKind,
        provider: str,
        model: str,
        status: int | None = None,
        code: str | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.provider = provider
        self.model = model
        self.status = status
        self.code = code
        self.retryable = retryable
        self.retry_after = retry_after
