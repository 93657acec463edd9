"""Agents, their execution policy and tool-approval decisions."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Literal

from agentturn.agents._signature import keyword_only_with_positional_fallback
from agentturn.agents.tools import Tool, ToolSpec
from agentturn.forms.definitions import REQUEST_USER_INPUT, UserInputTool
from agentturn.ports.chat_model import ChatModel
from agentturn.state.approvers import Approvers, DeadlineAction
from agentturn.state.messages import ToolCall

if TYPE_CHECKING:
    from agentturn.mcp.server import MCPServer
    from agentturn.state.turn import Turn


@dataclass(frozen=True)
class ExecutionPolicy:
    """Limits of one turn. Every field has a default; reaching a limit ends the turn with its own status."""

    #: model calls per turn (MAX_ITERATIONS_REACHED)
    max_iterations: int = 10
    #: model calls plus tool executions per turn (MAX_STEPS_REACHED)
    max_steps: int = 50
    #: logical business-tool calls per turn; a form replay is the same call (BUDGET_EXCEEDED)
    max_tool_calls: int = 20
    #: earlier conversation messages (model-visible) put in the model's context window
    context_window: int = 50
    #: what a business tool's exception does: tell the model, or fail the turn
    on_tool_error: Literal["return_to_model", "fail_turn"] = "return_to_model"
    #: seconds a person has to answer a form or an approval; None waits forever
    input_timeout: float | None = None
    #: what an expired wait does: tell the model (an "expired" tool result) or cancel the turn
    on_input_timeout: Literal["return_to_model", "cancel"] = "return_to_model"
    #: seconds a terminal turn's snapshot is kept before the store may delete it; None keeps it
    retention: float | None = 30 * 24 * 3600
    #: also remove submitted values from the UI card once the tool that needed them has completed
    redact_submitted_values: bool = False
    #: when one model message leaves several decisions to a person: continue once all are answered ("all"),
    #: or after each answer ("each": an approved call runs at once while the others still wait; the model
    #: is asked again only when every call of the message has its result)
    resume_after: Literal["all", "each"] = "all"
    #: a new user message while decisions wait (AG-UI's "pending interrupts block new input"): False refuses it
    #: (the spec's default); True declines/rejects the waiting cards with a recorded reason, ends the turn, and
    #: starts the next one with the message
    steer_away: bool = False

    def __post_init__(self) -> None:
        for name in ("max_iterations", "max_steps", "max_tool_calls", "context_window"):
            if getattr(self, name) < 0:
                raise ValueError(f"ExecutionPolicy.{name} must be >= 0")
        if self.resume_after not in ("all", "each"):
            raise ValueError(f"ExecutionPolicy.resume_after must be 'all' or 'each', not {self.resume_after!r}")
        for name in ("input_timeout", "retention"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"ExecutionPolicy.{name} must be > 0 or None")


class ApprovalVerdict(StrEnum):
    ALLOW = "ALLOW"
    REQUIRE_APPROVAL = "REQUIRE_APPROVAL"
    DENY = "DENY"


@dataclass(frozen=True)
class ToolApprovalDecision:
    verdict: ApprovalVerdict
    message: str = ""
    #: who may approve besides the turn's owner (None: the owner alone), frozen with the wait
    approvers: Approvers | None = None

    @classmethod
    def allow(cls) -> ToolApprovalDecision:
        return cls(ApprovalVerdict.ALLOW)

    @classmethod
    def require_approval(cls, message: str = "", *, approvers: Approvers | None = None) -> ToolApprovalDecision:
        """Wait for a person: the turn's owner, or — with ``approvers`` — the people it names (see
        :class:`~agentturn.state.approvers.Approvers`: users, groups, a quorum)."""
        if approvers is not None and not isinstance(approvers, Approvers):
            raise TypeError("approvers must be agentturn.Approvers")
        at = approvers.at_deadline if approvers is not None else None
        if at is not None and at.action is DeadlineAction.ANSWER:
            # Checked when the wait is defined, never at the deadline: an approval's default is a verdict.
            raise ValueError("an approval's default answer is AtDeadline.approve() or AtDeadline.reject(), not data")
        return cls(ApprovalVerdict.REQUIRE_APPROVAL, message, approvers)

    @classmethod
    def deny(cls, message: str = "") -> ToolApprovalDecision:
        return cls(ApprovalVerdict.DENY, message)


ApprovalPolicy = Callable[["Turn", ToolCall, Tool], ToolApprovalDecision]


class Agent:
    @keyword_only_with_positional_fallback
    def __init__(
        self,
        id: str,
        instructions: str,
        chat_model: ChatModel,
        *,
        tools: Iterable[Tool] = (),
        version: str = "1",
        approval_policy: ApprovalPolicy | None = None,
        policy: ExecutionPolicy | None = None,
        mcp_servers: Iterable[MCPServer] = (),
        continues: Iterable[str] | Callable[[str], bool] = (),
    ) -> None:
        if not id or not isinstance(id, str):
            raise ValueError("agent id must be a non-empty string")
        self.id = id
        self.instructions = instructions
        self.chat_model = chat_model
        self.version = str(version)
        # Which earlier versions' waiting turns this one takes over after a deploy (checked when each resumes:
        # agentturn.agents.continuation); a function of the earlier version, or the versions themselves.
        self._continues: Callable[[str], bool] | frozenset[str] = (
            continues if callable(continues) else frozenset(str(v) for v in _versions(continues))
        )
        self.approval_policy = approval_policy
        self.policy = policy or ExecutionPolicy()
        self._own_tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._own_tools:
                raise ValueError(f"agent {id!r}: duplicate tool name {tool.name!r}")
            self._own_tools[tool.name] = tool
        self.mcp_servers: tuple[MCPServer, ...] = ()
        servers = list(mcp_servers)
        if servers:
            # Imported only by agents that use MCP: the others never load the client.
            from agentturn.mcp.toolset import checked_servers, with_mcp_approval

            self.mcp_servers = checked_servers(servers)
            self.approval_policy = with_mcp_approval(approval_policy)

    @property
    def tools(self) -> dict[str, Tool]:
        """The agent's tools by name: its own, then its MCP servers' (``<server>__<tool>``), listed on first use
        and kept per process (``MCPServer.list_ttl``); a server that cannot be listed offers none for now."""
        if not self.mcp_servers:
            return self._own_tools
        from agentturn.mcp.toolset import server_tools

        merged = dict(self._own_tools)
        for tool in server_tools(self.mcp_servers):
            merged.setdefault(tool.name, tool)
        return merged

    @property
    def user_input_tool(self) -> UserInputTool | None:
        tool = self.tools.get(REQUEST_USER_INPUT)
        return tool if isinstance(tool, UserInputTool) else None

    def tool_specs(self) -> list[ToolSpec]:
        return [ToolSpec(t.name, t.description, t.parameters) for t in self.tools.values()]

    def continues(self, version: str) -> bool:
        """Whether this agent takes over turns that its ``version`` (an earlier one, of the same id) started."""
        if version == self.version:
            return False
        if isinstance(self._continues, frozenset):
            return version in self._continues
        return bool(self._continues(version))

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r}, version={self.version!r})"


def _versions(continues: Iterable[str]) -> list[str]:
    """The versions ``continues`` lists; a lone string is refused (it would read as its characters)."""
    if isinstance(continues, str):
        raise TypeError(f"continues takes a list of versions or a function, not the string {continues!r}")
    return list(continues)
