"""agentturn: durable LLM agent turns that stop for a person and resume exactly where they stopped.

The core imports no AWS SDK; adapters live in ``agentturn.aws``.
"""

from __future__ import annotations

from agentturn.agent import Agent, ApprovalPolicy, ApprovalVerdict, ExecutionPolicy, ToolApprovalDecision
from agentturn.chat import ChatModel, ChatRequest, ScriptedChatModel, ScriptExhaustedError
from agentturn.commands import ResumeCommand, ResumeKind
from agentturn.errors import (
    AgentTurnError,
    ConversationBusyError,
    FormValidationError,
    IdempotencyConflictError,
    InvalidResumeError,
    LeaseLostError,
    SnapshotUnreadableError,
    ToolProtocolError,
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
from agentturn.state import (
    SCHEMA_VERSION,
    Suspension,
    SuspensionType,
    Turn,
    TurnPhase,
    TurnStatus,
)
from agentturn.store import InMemoryTurnStore, Lease, RunnableTurn, TurnStore
from agentturn.tools import Tool, ToolContext, ToolSpec
from agentturn.validation import validate_form_data
from agentturn.worker import Worker, WorkOutcome, WorkResult

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
    "IdempotencyConflictError",
    "InMemoryChatMemory",
    "InMemoryResumeQueue",
    "InMemoryTurnStore",
    "InvalidResumeError",
    "Lease",
    "LeaseLostError",
    "Listener",
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
    "ToolCall",
    "ToolContext",
    "ToolMessage",
    "ToolProtocolError",
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
    "validate_form_data",
]
