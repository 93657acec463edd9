"""Resume commands: what a person's answer to a suspended turn looks like."""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any, overload

from pydantic import Field

from agentturn._wire import WireModel


class ResumeKind(StrEnum):
    TEXT_INPUT = "TEXT_INPUT"
    FORM_INPUT = "FORM_INPUT"
    APPROVE_TOOL = "APPROVE_TOOL"
    REJECT_TOOL = "REJECT_TOOL"
    DECLINE_INPUT = "DECLINE_INPUT"


class ResumeCommand(WireModel):
    """Immutable by convention: ``with_metadata`` returns a new command.

    ``metadata`` holds audit attributes (submittedBy, requestId, channel); the form data itself is ``data``.
    """

    kind: ResumeKind
    action_id: str | None = None
    content: str | None = None
    data: dict[str, Any] | None = None
    reason: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @overload
    @classmethod
    def user_input(cls, content: str, /) -> ResumeCommand: ...

    @overload
    @classmethod
    def user_input(cls, action_id: str, data: dict[str, Any], /) -> ResumeCommand: ...

    @classmethod
    def user_input(cls, first: str, data: dict[str, Any] | None = None, /) -> ResumeCommand:
        """``user_input(text)`` answers a plain-text wait; ``user_input(action_id, data)`` submits a form.

        The two-argument form is the seed's and keeps working; :meth:`submit_form` says the same thing without
        giving one argument two meanings.
        """
        if data is None:
            return cls(kind=ResumeKind.TEXT_INPUT, content=first)
        return cls.submit_form(first, data)

    @classmethod
    def submit_form(cls, action_id: str, data: dict[str, Any]) -> ResumeCommand:
        """Submit a form's data to the suspension ``action_id`` names (``turn.suspension.action_id``)."""
        if not isinstance(data, dict):
            raise TypeError("form data must be a dict")
        return cls(kind=ResumeKind.FORM_INPUT, action_id=action_id, data=data)

    @classmethod
    def decline_input(cls, action_id: str, reason: str | None = None) -> ResumeCommand:
        """The person closes the form instead of filling it in."""
        return cls(kind=ResumeKind.DECLINE_INPUT, action_id=action_id, reason=reason)

    @classmethod
    def approve_tool(cls, call_id: str) -> ResumeCommand:
        return cls(kind=ResumeKind.APPROVE_TOOL, action_id=call_id)

    @classmethod
    def reject_tool(cls, call_id: str, reason: str | None = None) -> ResumeCommand:
        return cls(kind=ResumeKind.REJECT_TOOL, action_id=call_id, reason=reason)

    @property
    def request_id(self) -> str | None:
        """The caller's idempotency key (metadata ``requestId``), if any."""
        value = self.metadata.get("requestId")
        return value if isinstance(value, str) and value else None

    def fingerprint(self) -> str:
        """What makes two requests "the same": the answer itself, not who sent it or when."""
        body = {"kind": self.kind.value, "actionId": self.action_id, "content": self.content, "data": self.data}
        body["reason"] = self.reason
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def with_metadata(self, key: str, value: Any) -> ResumeCommand:
        return self.model_copy(update={"metadata": {**self.metadata, key: value}}, deep=True)
