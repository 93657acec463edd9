"""Resume commands: what a person's answer to a suspended turn looks like."""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any, overload

from pydantic import Field, JsonValue

from agentturn.state.approvers import Principal
from agentturn.state.wire import WireModel

#: Metadata keys of who answers: the verified subject, and the groups their token carries.
SUBMITTED_BY = "submittedBy"
GROUPS = "groups"


class ResumeKind(StrEnum):
    TEXT_INPUT = "TEXT_INPUT"
    FORM_INPUT = "FORM_INPUT"
    APPROVE_TOOL = "APPROVE_TOOL"
    REJECT_TOOL = "REJECT_TOOL"
    DECLINE_INPUT = "DECLINE_INPUT"
    #: a person answers in the tool's place: the tool does not run
    RESPOND_TOOL = "RESPOND_TOOL"


class ResumeCommand(WireModel):
    """Immutable by convention: ``with_metadata`` returns a new command.

    ``metadata`` holds audit attributes (submittedBy, requestId, channel); the form data itself is ``data``.
    """

    kind: ResumeKind
    action_id: str | None = None
    content: str | None = None
    data: dict[str, Any] | None = None
    reason: str | None = None
    #: APPROVE_TOOL with edits: the arguments the tool runs with instead of the model's
    arguments: dict[str, Any] | None = None
    #: APPROVE_TOOL: the fingerprint of the arguments the person saw (``Suspension.arguments_fingerprint``)
    arguments_fingerprint: str | None = None
    #: RESPOND_TOOL: the person's answer, which the model reads as the tool's result
    response: JsonValue = None
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
    def approve_tool(
        cls, call_id: str, arguments: dict[str, Any] | None = None, *, arguments_fingerprint: str | None = None
    ) -> ResumeCommand:
        """Approve the call ``call_id``; with ``arguments``, approve it with those instead of the model's.

        Edited arguments are validated against the tool's parameter schema frozen with the wait (the rules of
        forms). ``arguments_fingerprint`` binds the approval to the arguments the person saw: if it is not the
        card's, the approval is refused.
        """
        if arguments is not None and not isinstance(arguments, dict):
            raise TypeError("edited arguments must be a dict")
        return cls(
            kind=ResumeKind.APPROVE_TOOL,
            action_id=call_id,
            arguments=arguments,
            arguments_fingerprint=arguments_fingerprint,
        )

    @classmethod
    def respond(cls, call_id: str, content: JsonValue) -> ResumeCommand:
        """Answer in the tool's place: the call ``call_id`` does not run; ``content`` becomes its ToolMessage
        (marked as written by a person)."""
        if content is None:
            raise ValueError("a response needs content")
        return cls(kind=ResumeKind.RESPOND_TOOL, action_id=call_id, response=content)

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
        body: dict[str, Any] = {
            "kind": self.kind.value,
            "actionId": self.action_id,
            "content": self.content,
            "data": self.data,
        }
        body["reason"] = self.reason
        # Only when present, so that what older versions accepted keeps its fingerprint across a deployment.
        if self.arguments is not None:
            body["arguments"] = self.arguments
        if self.arguments_fingerprint is not None:
            body["argumentsFingerprint"] = self.arguments_fingerprint
        if self.response is not None:
            body["response"] = self.response
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def by(self, principal: Principal) -> ResumeCommand:
        """This answer given by ``principal`` (a copy): cards with approvers admit only the people they name, so a
        library caller says who answers, as the HTTP routes and AG-UI do from the verified token."""
        copied = self.deep_copy()
        copied.metadata[SUBMITTED_BY] = principal.subject
        copied.metadata[GROUPS] = sorted(principal.groups)
        return copied

    @property
    def answerer(self) -> Principal | None:
        """Who gives this answer, if the caller said (:meth:`by`, or metadata ``submittedBy``)."""
        subject = self.metadata.get(SUBMITTED_BY)
        if not isinstance(subject, str) or not subject:
            return None
        groups = self.metadata.get(GROUPS)
        names = [g for g in groups if isinstance(g, str)] if isinstance(groups, list) else []
        return Principal(subject, frozenset(names))

    def with_metadata(self, key: str, value: Any) -> ResumeCommand:
        copied = self.deep_copy()
        copied.metadata[key] = value
        return copied
