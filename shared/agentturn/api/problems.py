"""Errors of the HTTP API as RFC 9457 problem details (``application/problem+json``) with stable types.

Every refusal is a :class:`ProblemError`: raised wherever it is found (the request gate, a route, the
mapping of a core error) and rendered in one place. ``type`` URIs are part of the API contract: clients
branch on them, never on ``title`` or ``detail`` (which are for people and may be reworded).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from agentturn.errors import (
    AgentTurnError,
    AwaitedAnswer,
    ConversationBusyError,
    FormValidationError,
    IdempotencyConflictError,
    InvalidResumeError,
    RefusalReason,
    SnapshotUnreadableError,
    StorageError,
    ToolArgumentsInvalidError,
    TurnNotFoundError,
    UnknownAgentError,
    VersionConflictError,
)

PROBLEM_BASE: Final = "https://agentturn.dev/problems/"
PROBLEM_CONTENT_TYPE: Final = "application/problem+json"

#: Headers on every answer: private data, never cached by an intermediary; no content sniffing.
COMMON_HEADERS: Final[Mapping[str, str]] = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}

FieldErrors = Sequence[Mapping[str, str]]


class ProblemError(Exception):
    """An HTTP error answer. ``slug`` names the problem type (``PROBLEM_BASE + slug``)."""

    def __init__(
        self,
        status: int,
        slug: str,
        title: str,
        detail: str,
        *,
        errors: FieldErrors | None = None,
        headers: Mapping[str, str] | None = None,
        extensions: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{status} {slug}: {detail}")
        self.status = status
        self.slug = slug
        self.title = title
        self.detail = detail
        self.errors = [dict(e) for e in errors] if errors is not None else None
        self.headers = dict(headers or {})
        self.extensions = dict(extensions or {})

    def __reduce__(self) -> tuple[Any, ...]:
        # The default reduction would call ``ProblemError(message)``: rebuild from the fields instead.
        return (self.__class__, (self.status, self.slug, self.title, self.detail), dict(self.__dict__))

    @property
    def type(self) -> str:
        return PROBLEM_BASE + self.slug

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"type": self.type, "title": self.title, "status": self.status, "detail": self.detail}
        body.update(self.extensions)
        if self.errors is not None:
            body["errors"] = self.errors
        return body

    def to_json(self) -> str:
        return json.dumps(self.body(), ensure_ascii=False, separators=(",", ":"))

    def response_headers(self) -> dict[str, str]:
        return {"Content-Type": PROBLEM_CONTENT_TYPE, **COMMON_HEADERS, **self.headers}

    def to_api_gateway(self) -> dict[str, Any]:
        """The answer as an HTTP API (payload 2.0) Lambda response, for refusals made before routing."""
        return {
            "statusCode": self.status,
            "headers": self.response_headers(),
            "body": self.to_json(),
            "isBase64Encoded": False,
        }


# ---------------------------------------------------------------------------------- the catalogue


def unauthenticated() -> ProblemError:
    return ProblemError(
        401,
        "unauthenticated",
        "Authentication required",
        "the request carries no verified identity (a JWT with a 'sub' claim)",
        headers={"WWW-Authenticate": "Bearer"},
    )


def token_refused(reason: str) -> ProblemError:
    """A bearer token the streamed AG-UI entry refused, as API Gateway's JWT authorizer would (with its reason)."""
    return ProblemError(
        401,
        "unauthenticated",
        "Authentication required",
        f"the bearer token was refused: {reason}",
        headers={"WWW-Authenticate": f'Bearer error="invalid_token", error_description="{reason}"'},
    )


def route_not_found(method: str, path: str) -> ProblemError:
    return ProblemError(404, "route-not-found", "No such route", f"no route for {method} {path!r}")


def method_not_allowed(method: str, path: str, allowed: Sequence[str]) -> ProblemError:
    return ProblemError(
        405,
        "method-not-allowed",
        "Method not allowed",
        f"{method} is not allowed on {path!r}; use {', '.join(allowed)}",
        headers={"Allow": ", ".join(allowed)},
    )


def turn_not_found(turn_id: str) -> ProblemError:
    # The same answer whether the turn does not exist or belongs to someone else: no existence leak.
    return ProblemError(404, "turn-not-found", "Turn not found", f"there is no turn {turn_id!r}")


def action_not_found(turn_id: str, action_id: str) -> ProblemError:
    return ProblemError(404, "action-not-found", "Action not found", f"turn {turn_id!r} has no action {action_id!r}")


def agent_not_found(agent_id: str, known: Sequence[str]) -> ProblemError:
    return ProblemError(
        404, "agent-not-found", "Agent not found", f"there is no agent {agent_id!r}; use one of {list(known)!r}"
    )


def malformed_body(detail: str) -> ProblemError:
    return ProblemError(400, "malformed-json", "Malformed JSON body", detail)


def body_required() -> ProblemError:
    return ProblemError(400, "body-required", "Request body required", "this route takes a JSON object body")


#: What an ``Idempotency-Key`` may be, in words (README "HTTP API", the OpenAPI document and the check agree).
IDEMPOTENCY_KEY_RULE: Final = "1 to {max_length} visible ASCII characters other than ',' and '\"' (a UUID is one)"


def idempotency_key_required() -> ProblemError:
    return ProblemError(
        400,
        "idempotency-key-required",
        "Idempotency-Key header required",
        "send a unique Idempotency-Key header (and the same one when retrying this request)",
        errors=[{"path": "/Idempotency-Key", "in": "header", "message": "is required"}],
    )


def invalid_idempotency_key(max_length: int) -> ProblemError:
    rule = IDEMPOTENCY_KEY_RULE.format(max_length=max_length)
    return ProblemError(
        400,
        "invalid-idempotency-key",
        "Invalid Idempotency-Key header",
        f"the Idempotency-Key header must be {rule}",
        errors=[{"path": "/Idempotency-Key", "in": "header", "message": f"must be {rule}"}],
    )


def payload_too_large(size: int, limit: int) -> ProblemError:
    return ProblemError(
        413, "payload-too-large", "Request body too large", f"the body is {size} bytes; at most {limit} are accepted"
    )


def tool_arguments_invalid(exc: ToolArgumentsInvalidError) -> ProblemError:
    # The same checks as a form (against the tool's parameter schema frozen with the wait); pointers into the
    # edited ``arguments`` object, which is what an edit form maps to its fields.
    return ProblemError(
        422,
        "tool-arguments-validation",
        "Edited arguments do not match the tool's parameters",
        f"{exc.subject} have {len(exc.errors)} problem(s); fix them, or approve the call as shown",
        errors=exc.errors,
    )


_ROUTES_FOR: Final[Mapping[AwaitedAnswer, str]] = {
    AwaitedAnswer.FORM: 'it is a form: POST {actions}/submit with {{"data": {{...}}}}, or {actions}/decline '
    'with {{"reason"?}}',
    AwaitedAnswer.TOOL_APPROVAL: "it is a tool call waiting for approval: POST {actions}/approve with {{}} or "
    '{{"arguments": {{...}}}}, {actions}/reject with {{"reason"?}}, or {actions}/respond with '
    '{{"content": ...}}',
    AwaitedAnswer.TEXT: 'it waits for a message: POST /conversations/{{conversationId}}/turns with {{"input"}}',
}


def wrong_action_kind(exc: InvalidResumeError) -> ProblemError:
    """409 for an answer of the wrong kind, in HTTP's terms (the core's message names Python calls)."""
    if exc.awaited is None:
        return ProblemError(409, "wrong-action-kind", "Wrong kind of answer for this action", str(exc))
    actions = f"/turns/{exc.turn_id or '{turnId}'}/actions/{exc.action_id or '{actionId}'}"
    action = f"action {exc.action_id!r}" if exc.action_id else "this action"
    return ProblemError(
        409,
        "wrong-action-kind",
        "Wrong kind of answer for this action",
        f"{action} cannot be answered this way; {_ROUTES_FOR[exc.awaited].format(actions=actions)}",
        extensions={"awaits": exc.awaited.value},
    )


def unsupported_media_type(content_type: str | None) -> ProblemError:
    shown = repr(content_type) if content_type else "no Content-Type"
    return ProblemError(
        415,
        "unsupported-media-type",
        "Unsupported media type",
        f"bodies must be JSON (Content-Type: application/json; charset=utf-8), not {shown}",
        headers={"Accept-Post": "application/json"},
    )


def request_validation(errors: FieldErrors) -> ProblemError:
    return ProblemError(
        422,
        "request-validation",
        "Invalid request",
        f"the request has {len(errors)} problem(s)",
        errors=errors,
    )


def form_validation(errors: FieldErrors) -> ProblemError:
    # Paths are JSON Pointers into the submitted ``data`` object: what a form renderer maps to its fields.
    return ProblemError(
        422,
        "form-validation",
        "Form data does not match the form's schema",
        f"the submitted data has {len(errors)} problem(s)",
        errors=errors,
    )


def idempotency_key_reused(request_id: str) -> ProblemError:
    return ProblemError(
        422,
        "idempotency-key-reused",
        "Idempotency-Key reused with a different request",
        f"Idempotency-Key {request_id!r} was already used on this turn for a different request",
        errors=[{"path": "/Idempotency-Key", "in": "header", "message": "was used before with a different request"}],
    )


def conversation_busy(conversation_id: str, active_turn_id: str | None) -> ProblemError:
    return ProblemError(
        409,
        "conversation-busy",
        "Conversation busy",
        f"conversation {conversation_id!r} has a turn that has not finished yet",
        extensions={"activeTurnId": active_turn_id},
    )


def concurrent_update(turn_id: str) -> ProblemError:
    return ProblemError(
        409,
        "concurrent-update",
        "Concurrent update",
        f"turn {turn_id!r} was changed by another request at the same time; read it again and retry",
    )


def service_unavailable(detail: str, retry_after_seconds: int = 1) -> ProblemError:
    return ProblemError(
        503,
        "service-unavailable",
        "Service temporarily unavailable",
        detail,
        headers={"Retry-After": str(retry_after_seconds)},
    )


def turn_unreadable(exc: SnapshotUnreadableError) -> ProblemError:
    """The turn exists but its stored snapshot cannot be read: nothing about it can be shown or changed. Its
    attempts end it FAILED (``errorType`` then says so); the detail names the turn, never the stored content."""
    extensions: dict[str, Any] = {"turnId": exc.turn_id, "turnStatus": exc.status, "errorType": exc.error_type}
    return ProblemError(
        410,
        "turn-unreadable",
        "Turn cannot be read",
        f"the stored state of turn {exc.turn_id!r} cannot be read; it cannot be shown or answered any more",
        extensions=extensions,
    )


def internal_error() -> ProblemError:
    # Never the exception text: it can hold table names, ids of other callers, or stack details.
    return ProblemError(500, "internal-error", "Internal error", "the request failed on the server; it was logged")


_RESUME_CONFLICTS: Final[Mapping[RefusalReason, tuple[str, str]]] = {
    RefusalReason.ACTION_NOT_PENDING: ("action-not-pending", "Action no longer pending"),
    RefusalReason.TURN_TERMINAL: ("turn-terminal", "Turn already finished"),
    RefusalReason.NOT_WAITING: ("turn-not-waiting", "Turn is not waiting for a person"),
    RefusalReason.WRONG_COMMAND: ("wrong-action-kind", "Wrong kind of answer for this action"),
    RefusalReason.NOT_SUSPENDABLE: ("turn-not-waiting", "Turn is not waiting for a person"),
    RefusalReason.INPUT_EXPIRED: ("input-expired", "The time to answer has passed"),
    RefusalReason.ARGUMENTS_CHANGED: ("arguments-changed", "The approval names other arguments than the card"),
    RefusalReason.ALREADY_DECIDED: ("already-decided", "You already decided on this action"),
}


def from_core_error(exc: AgentTurnError, *, conversation_id: str | None = None) -> ProblemError:
    """The problem a core error means to a caller. ``conversation_id`` is the caller's (public) id."""
    if isinstance(exc, ToolArgumentsInvalidError):
        return tool_arguments_invalid(exc)
    if isinstance(exc, FormValidationError):
        return form_validation(exc.errors)
    if isinstance(exc, IdempotencyConflictError):
        return idempotency_key_reused(exc.request_id)
    if isinstance(exc, TurnNotFoundError):
        return turn_not_found(exc.turn_id)
    if isinstance(exc, SnapshotUnreadableError):
        return turn_unreadable(exc)
    if isinstance(exc, InvalidResumeError):
        # A caller who may not answer an action is told what a caller naming a missing one is: no existence leak.
        if exc.reason in (RefusalReason.UNKNOWN_ACTION, RefusalReason.NOT_PERMITTED):
            return ProblemError(404, "action-not-found", "Action not found", str(exc))
        if exc.reason is RefusalReason.WRONG_COMMAND:
            return wrong_action_kind(exc)
        slug, title = _RESUME_CONFLICTS.get(exc.reason, ("invalid-resume", "Answer does not fit the turn"))
        return ProblemError(409, slug, title, str(exc))
    if isinstance(exc, ConversationBusyError):
        return conversation_busy(conversation_id or "?", exc.active_turn_id)
    if isinstance(exc, VersionConflictError):
        return concurrent_update(exc.turn_id)
    if isinstance(exc, StorageError) and exc.retryable:
        return service_unavailable("the service is busy; retry shortly")
    if isinstance(exc, UnknownAgentError):
        # A turn whose agent version is not deployed: an operator's problem, not the caller's.
        return ProblemError(
            503,
            "agent-unavailable",
            "Agent unavailable",
            f"agent {exc.agent_id!r} version {exc.version!r} is not deployed",
        )
    return internal_error()
