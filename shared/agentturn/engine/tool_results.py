"""The tool results the model sees when a call did not simply return: one place for every payload.

A model reads these to explain to the person what happened (a form declined, an approval rejected, a tool
that failed), so their shape is part of the contract with the model: the Runner and the resume rules build
them here rather than each spelling its own dict.
"""

from __future__ import annotations

from typing import Any, Literal

#: How a wait for a person ended without an answer.
Unanswered = Literal["declined", "expired"]


def submitted(form_key: str, data: dict[str, Any]) -> dict[str, Any]:
    """A model-requested form the person filled in: the seed's ToolMessage content."""
    return {"status": "submitted", "formKey": form_key, "data": data}


def unanswered_form(form_key: Any, status: Unanswered, reason: str | None) -> dict[str, Any]:
    """A model-requested form nobody filled in: declined (with the person's reason) or expired."""
    return {"status": status, "formKey": form_key, "reason": reason}


def unanswered_tool_form(form_key: Any, status: Unanswered, reason: str | None, tool_name: str) -> dict[str, Any]:
    """A tool-requested form nobody filled in: the tool is not replayed, so for the model the call failed."""
    missed = "declined" if status == "declined" else "did not fill in"
    return {
        "status": "error",
        "error": f"input_{status}",
        "formKey": form_key,
        "reason": reason,
        "message": f"the user {missed} form {form_key!r} in time; {tool_name} did not run",
    }


def unanswered_approval(tool_name: str, status: Unanswered) -> dict[str, Any]:
    """An approval nobody gave (declined or expired): the tool did not run."""
    return {"status": status, "toolName": tool_name, "message": f"approval {status}; the tool did not run"}


def rejected(tool_name: str, reason: str) -> dict[str, Any]:
    """A person rejected the call: it did not run, and the model can say why."""
    return {"status": "rejected", "toolName": tool_name, "reason": reason}


def denied(tool_name: str, reason: str | None) -> dict[str, Any]:
    """The agent's approval policy refused the call outright."""
    return {"status": "denied", "toolName": tool_name, "reason": reason or "denied by policy"}


def tool_failed(message: str) -> dict[str, Any]:
    """The tool raised (and the policy lets the model see it rather than failing the turn)."""
    return {"status": "error", "error": "tool_failed", "message": message}


def unknown_tool(tool_name: str, allowed: list[str]) -> dict[str, Any]:
    """The model called a tool the agent does not have."""
    return {"status": "error", "error": "unknown_tool", "message": f"no tool {tool_name!r}; use {allowed!r}"}


def unknown_form_key(form_key: Any, allowed: list[str]) -> dict[str, Any]:
    """The model asked for a form the agent did not register: it is told which ones exist."""
    return {
        "status": "error",
        "error": "unknown_form_key",
        "formKey": form_key,
        "allowedFormKeys": allowed,
        "message": f"formKey {form_key!r} is not registered; use one of {allowed!r}",
    }


def edited(original: dict[str, Any], arguments: dict[str, Any], result: Any) -> dict[str, Any]:
    """A call a person approved with other arguments than the model proposed: the tool's ``result`` with what
    was changed, so that the conversation stays truthful about what ran."""
    return {
        "status": "edited",
        "message": "a person changed the arguments of this call before approving it; the tool ran with "
        "`arguments`, not with `originalArguments`",
        "originalArguments": original,
        "arguments": arguments,
        "result": result,
    }


def answered_by_person(tool_name: str, response: Any) -> dict[str, Any]:
    """A person answered in the tool's place (``ResumeCommand.respond``): the model reads that a person wrote
    ``response`` and that the tool did not run, so that it never reports the answer as the tool's own."""
    return {
        "status": "answered_by_person",
        "toolName": tool_name,
        "message": f"a person answered in place of {tool_name}; the tool did not run, and `response` is what "
        "the person wrote",
        "response": response,
    }


def written_by_person() -> dict[str, Any]:
    """``ToolMessage.metadata`` of a result a person wrote in the tool's place (``ResumeCommand.respond``)."""
    return {"writtenBy": "person"}
