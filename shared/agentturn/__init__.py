"""agentturn: durable LLM agent turns that stop for a person and resume exactly where they stopped.

The core imports no AWS SDK; adapters live in ``agentturn.aws``.

Every public name is imported on first use (PEP 562): ``import agentturn`` alone loads none of the runtime
(no runner, no JSON Schema validator), so a Lambda handler or a CLI command pays only for what it touches.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from agentturn.agent import Agent, ApprovalPolicy, ApprovalVerdict, ExecutionPolicy, ToolApprovalDecision
    from agentturn.chat import ChatModel, ChatRequest, ScriptedChatModel, ScriptExhaustedError
    from agentturn.commands import ResumeCommand, ResumeKind
    from agentturn.errors import (
        AgentTurnError,
        ConversationBusyError,
        FormValidationError,
        HandoffLostError,
        IdempotencyConflictError,
        InvalidResumeError,
        LeaseLostError,
        ModelError,
        ModelErrorKind,
        SnapshotUnreadableError,
        TurnNotFoundError,
        UnknownAgentError,
        VersionConflictError,
    )
    from agentturn.events import Event, EventType, Listener
    from agentturn.forms import REQUEST_USER_INPUT, FormDefinition, FormRequired, UserInputTool, require_form
    from agentturn.memory import ChatMemory, ChatMemoryProvider, InMemoryChatMemory
    from agentturn.messages import (
        AiMessage,
        ApprovalMessage,
        ApprovalStatus,
        CardAction,
        FormMessage,
        FormStatus,
        ModelMessage,
        TimelineMessage,
        ToolCall,
        ToolMessage,
        UserMessage,
    )
    from agentturn.queue import InMemoryResumeQueue, ResumeMessage, ResumeQueue
    from agentturn.runner import Runner
    from agentturn.state import SCHEMA_VERSION, Suspension, SuspensionType, Turn, TurnPhase, TurnStatus
    from agentturn.store import InMemoryTurnStore, Lease, RunnableTurn, TurnStore
    from agentturn.tools import Tool, ToolContext, ToolSpec
    from agentturn.typed_tools import ToolArgumentsError, tool
    from agentturn.validation import validate_form_data
    from agentturn.worker import Worker, WorkOutcome, WorkResult

#: public name -> the module that defines it
_LAZY: Final[dict[str, str]] = {
    "Agent": "agentturn.agent",
    "AgentTurnError": "agentturn.errors",
    "AiMessage": "agentturn.messages",
    "ApprovalMessage": "agentturn.messages",
    "ApprovalPolicy": "agentturn.agent",
    "ApprovalStatus": "agentturn.messages",
    "ApprovalVerdict": "agentturn.agent",
    "CardAction": "agentturn.messages",
    "ChatMemory": "agentturn.memory",
    "ChatMemoryProvider": "agentturn.memory",
    "ChatModel": "agentturn.chat",
    "ChatRequest": "agentturn.chat",
    "ConversationBusyError": "agentturn.errors",
    "Event": "agentturn.events",
    "EventType": "agentturn.events",
    "ExecutionPolicy": "agentturn.agent",
    "FormDefinition": "agentturn.forms",
    "FormMessage": "agentturn.messages",
    "FormRequired": "agentturn.forms",
    "FormStatus": "agentturn.messages",
    "FormValidationError": "agentturn.errors",
    "IdempotencyConflictError": "agentturn.errors",
    "InMemoryChatMemory": "agentturn.memory",
    "InMemoryResumeQueue": "agentturn.queue",
    "InMemoryTurnStore": "agentturn.store",
    "InvalidResumeError": "agentturn.errors",
    "Lease": "agentturn.store",
    "HandoffLostError": "agentturn.errors",
    "LeaseLostError": "agentturn.errors",
    "Listener": "agentturn.events",
    "ModelError": "agentturn.errors",
    "ModelErrorKind": "agentturn.errors",
    "ModelMessage": "agentturn.messages",
    "REQUEST_USER_INPUT": "agentturn.forms",
    "ResumeCommand": "agentturn.commands",
    "ResumeKind": "agentturn.commands",
    "ResumeMessage": "agentturn.queue",
    "ResumeQueue": "agentturn.queue",
    "RunnableTurn": "agentturn.store",
    "Runner": "agentturn.runner",
    "SCHEMA_VERSION": "agentturn.state",
    "ScriptExhaustedError": "agentturn.chat",
    "ScriptedChatModel": "agentturn.chat",
    "SnapshotUnreadableError": "agentturn.errors",
    "Suspension": "agentturn.state",
    "SuspensionType": "agentturn.state",
    "TimelineMessage": "agentturn.messages",
    "Tool": "agentturn.tools",
    "ToolApprovalDecision": "agentturn.agent",
    "ToolCall": "agentturn.messages",
    "ToolContext": "agentturn.tools",
    "ToolMessage": "agentturn.messages",
    "ToolArgumentsError": "agentturn.typed_tools",
    "ToolSpec": "agentturn.tools",
    "Turn": "agentturn.state",
    "TurnNotFoundError": "agentturn.errors",
    "TurnPhase": "agentturn.state",
    "TurnStatus": "agentturn.state",
    "TurnStore": "agentturn.store",
    "UnknownAgentError": "agentturn.errors",
    "UserInputTool": "agentturn.forms",
    "UserMessage": "agentturn.messages",
    "VersionConflictError": "agentturn.errors",
    "WorkOutcome": "agentturn.worker",
    "WorkResult": "agentturn.worker",
    "Worker": "agentturn.worker",
    "require_form": "agentturn.forms",
    "tool": "agentturn.typed_tools",
    "validate_form_data": "agentturn.validation",
}

#: names that were public once and still resolve, with a DeprecationWarning: name -> (module, why)
_DEPRECATED: Final[dict[str, tuple[str, str]]] = {
    "ToolProtocolError": (
        "agentturn.errors",
        "agentturn.ToolProtocolError is deprecated and no longer exported: it is never raised (a tool that breaks "
        "the form protocol fails the turn, see Turn.error); import it from agentturn.errors if you must",
    ),
}

__all__ = [
    "REQUEST_USER_INPUT",
    "SCHEMA_VERSION",
    "Agent",
    "AgentTurnError",
    "AiMessage",
    "ApprovalMessage",
    "ApprovalPolicy",
    "ApprovalStatus",
    "ApprovalVerdict",
    "CardAction",
    "ChatMemory",
    "ChatMemoryProvider",
    "ChatModel",
    "ChatRequest",
    "ConversationBusyError",
    "Event",
    "EventType",
    "ExecutionPolicy",
    "FormDefinition",
    "FormMessage",
    "FormRequired",
    "FormStatus",
    "FormValidationError",
    "HandoffLostError",
    "IdempotencyConflictError",
    "InMemoryChatMemory",
    "InMemoryResumeQueue",
    "InMemoryTurnStore",
    "InvalidResumeError",
    "Lease",
    "LeaseLostError",
    "Listener",
    "ModelError",
    "ModelErrorKind",
    "ModelMessage",
    "ResumeCommand",
    "ResumeKind",
    "ResumeMessage",
    "ResumeQueue",
    "RunnableTurn",
    "Runner",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "SnapshotUnreadableError",
    "Suspension",
    "SuspensionType",
    "TimelineMessage",
    "Tool",
    "ToolApprovalDecision",
    "ToolArgumentsError",
    "ToolCall",
    "ToolContext",
    "ToolMessage",
    "ToolSpec",
    "Turn",
    "TurnNotFoundError",
    "TurnPhase",
    "TurnStatus",
    "TurnStore",
    "UnknownAgentError",
    "UserInputTool",
    "UserMessage",
    "VersionConflictError",
    "WorkOutcome",
    "WorkResult",
    "Worker",
    "require_form",
    "tool",
    "validate_form_data",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        if name in _DEPRECATED:
            module, why = _DEPRECATED[name]
            warnings.warn(why, DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(module), name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
