"""Typed errors of the core. Adapters translate their SDK's errors into these."""

from __future__ import annotations

from typing import Any


class AgentTurnError(Exception):
    """Base class of every error agentturn raises on purpose."""


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


class InvalidResumeError(AgentTurnError):
    """A resume command that does not fit the turn: wrong type, wrong or stale action id, turn not blocked."""

    def __init__(self, message: str, *, reason: str = "invalid_resume") -> None:
        super().__init__(message)
        self.reason = reason


class FormValidationError(AgentTurnError):
    """Submitted form data does not satisfy the schema frozen in the snapshot."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        summary = "; ".join(f"{e['path']}: {e['message']}" for e in errors[:5])
        super().__init__(f"form data is invalid: {summary}")
        self.errors = errors


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
