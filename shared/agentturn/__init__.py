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
    from agentturn.agents.agent import Agent, ApprovalPolicy, ApprovalVerdict, ExecutionPolicy, ToolApprovalDecision
    from agentturn.agents.tools import Tool, ToolContext, ToolSpec
    from agentturn.agents.typed_tools import ToolArgumentsError, tool
    from agentturn.engine.events import Event, EventType, Listener
    from agentturn.engine.runner import Runner
    from agentturn.engine.worker import Worker, WorkOutcome, WorkResult
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
    from agentturn.forms.definitions import (
        REQUEST_USER_INPUT,
        FormDefinition,
        FormRequired,
        UserInputTool,
        require_form,
    )
    from agentturn.forms.validation import validate_form_data
    from agentturn.mcp.server import MCPServer
    from agentturn.ports.chat_model import ChatModel, ChatRequest, ScriptedChatModel, ScriptExhaustedError
    from agentturn.ports.memory import ChatMemory, ChatMemoryProvider, InMemoryChatMemory
    from agentturn.ports.queue import InMemoryResumeQueue, ResumeMessage, ResumeQueue
    from agentturn.ports.store import InMemoryTurnStore, Lease, RunnableTurn, TurnStore
    from agentturn.state.approvers import Approvers, AtDeadline, DeadlineAction, Principal
    from agentturn.state.commands import ResumeCommand, ResumeKind
    from agentturn.state.messages import (
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
    from agentturn.state.turn import SCHEMA_VERSION, Suspension, SuspensionType, Turn, TurnPhase, TurnStatus

#: public name -> the module that defines it
_LAZY: Final[dict[str, str]] = {
    "Agent": "agentturn.agents.agent",
    "AgentTurnError": "agentturn.errors",
    "AiMessage": "agentturn.state.messages",
    "ApprovalMessage": "agentturn.state.messages",
    "ApprovalPolicy": "agentturn.agents.agent",
    "ApprovalStatus": "agentturn.state.messages",
    "ApprovalVerdict": "agentturn.agents.agent",
    "Approvers": "agentturn.state.approvers",
    "AtDeadline": "agentturn.state.approvers",
    "DeadlineAction": "agentturn.state.approvers",
    "Principal": "agentturn.state.approvers",
    "CardAction": "agentturn.state.messages",
    "ChatMemory": "agentturn.ports.memory",
    "ChatMemoryProvider": "agentturn.ports.memory",
    "ChatModel": "agentturn.ports.chat_model",
    "ChatRequest": "agentturn.ports.chat_model",
    "ConversationBusyError": "agentturn.errors",
    "Event": "agentturn.engine.events",
    "EventType": "agentturn.engine.events",
    "ExecutionPolicy": "agentturn.agents.agent",
    "FormDefinition": "agentturn.forms.definitions",
    "FormMessage": "agentturn.state.messages",
    "FormRequired": "agentturn.forms.definitions",
    "FormStatus": "agentturn.state.messages",
    "FormValidationError": "agentturn.errors",
    "IdempotencyConflictError": "agentturn.errors",
    "InMemoryChatMemory": "agentturn.ports.memory",
    "InMemoryResumeQueue": "agentturn.ports.queue",
    "InMemoryTurnStore": "agentturn.ports.store",
    "InvalidResumeError": "agentturn.errors",
    "Lease": "agentturn.ports.store",
    "HandoffLostError": "agentturn.errors",
    "LeaseLostError": "agentturn.errors",
    "Listener": "agentturn.engine.events",
    "MCPServer": "agentturn.mcp.server",
    "ModelError": "agentturn.errors",
    "ModelErrorKind": "agentturn.errors",
    "ModelMessage": "agentturn.state.messages",
    "REQUEST_USER_INPUT": "agentturn.forms.definitions",
    "ResumeCommand": "agentturn.state.commands",
    "ResumeKind": "agentturn.state.commands",
    "ResumeMessage": "agentturn.ports.queue",
    "ResumeQueue": "agentturn.ports.queue",
    "RunnableTurn": "agentturn.ports.store",
    "Runner": "agentturn.engine.runner",
    "SCHEMA_VERSION": "agentturn.state.turn",
    "ScriptExhaustedError": "agentturn.ports.chat_model",
    "ScriptedChatModel": "agentturn.ports.chat_model",
    "SnapshotUnreadableError": "agentturn.errors",
    "Suspension": "agentturn.state.turn",
    "SuspensionType": "agentturn.state.turn",
    "TimelineMessage": "agentturn.state.messages",
    "Tool": "agentturn.agents.tools",
    "ToolApprovalDecision": "agentturn.agents.agent",
    "ToolCall": "agentturn.state.messages",
    "ToolContext": "agentturn.agents.tools",
    "ToolMessage": "agentturn.state.messages",
    "ToolArgumentsError": "agentturn.agents.typed_tools",
    "ToolSpec": "agentturn.agents.tools",
    "Turn": "agentturn.state.turn",
    "TurnNotFoundError": "agentturn.errors",
    "TurnPhase": "agentturn.state.turn",
    "TurnStatus": "agentturn.state.turn",
    "TurnStore": "agentturn.ports.store",
    "UnknownAgentError": "agentturn.errors",
    "UserInputTool": "agentturn.forms.definitions",
    "UserMessage": "agentturn.state.messages",
    "VersionConflictError": "agentturn.errors",
    "WorkOutcome": "agentturn.engine.worker",
    "WorkResult": "agentturn.engine.worker",
    "Worker": "agentturn.engine.worker",
    "require_form": "agentturn.forms.definitions",
    "tool": "agentturn.agents.typed_tools",
    "validate_form_data": "agentturn.forms.validation",
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
    "Approvers",
    "AtDeadline",
    "CardAction",
    "ChatMemory",
    "ChatMemoryProvider",
    "ChatModel",
    "ChatRequest",
    "ConversationBusyError",
    "DeadlineAction",
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
    "MCPServer",
    "ModelError",
    "ModelErrorKind",
    "ModelMessage",
    "Principal",
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
