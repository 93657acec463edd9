"""The support-ticket cycle in LangGraph: a StateGraph (model node + ToolNode, ``tools_condition``), the tool
asks for the form with ``interrupt()`` and is resumed with ``Command(resume=...)``.

The model is scripted and zero-latency, a function of the conversation exactly like agentturn's demo model:
after a user message it calls ``create_support_ticket`` with the same arguments, after the tool result it
answers with the same sentence. The tool is the demo's: it asks for the same form (key and JSON Schema go
out as the interrupt value, as a LangGraph app would send them to its UI) and records the ticket under the
idempotency key ``thread:tool_call_id``. LangGraph does not validate the resume value against the schema;
agentturn does (``jsonschema``) — that work is on our side of every CPU figure only.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Sequence
from typing import Annotated, Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

from agentturn.demo.agents import DEMO_LABEL, SUPPORT_TICKET_FORM

INSTRUCTIONS = "创建故障工单缺少必要信息时调用 request_user_input；不要猜测缺失字段。"


class ScriptedToolCallingModel(BaseChatModel):
    """A zero-latency chat model that emits the demo model's tool call and answer."""

    @property
    def _llm_type(self) -> str:
        return "scripted-support-ticket"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedToolCallingModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            result = json.loads(str(last.content))
            reply = AIMessage(
                content=(
                    f"{DEMO_LABEL}Ticket {result['id']} created: {result['title']} (priority {result['priority']}), "
                    f"affected system {result['affectedSystem']}, impact {result['impactScope']}."
                )
            )
        else:
            text = str(last.content).lower()
            number = sum(1 for m in messages if isinstance(m, AIMessage)) + 1
            priority = "HIGH" if "high" in text else "NORMAL"
            title = "登录故障 (login failure)" if "login" in text else "故障 (incident)"
            reply = AIMessage(
                content="",
                tool_calls=[
                    {
                        "id": f"call-{number}",
                        "name": "create_support_ticket",
                        "args": {"title": title, "priority": priority},
                    }
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


class Ledger:
    """The ticket system: one ticket per idempotency key, however often the tool is replayed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entries: dict[str, dict[str, Any]] = {}

    def record(self, key: str, payload: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if key not in self.entries:
                self.entries[key] = {"id": f"TICKET-{hashlib.sha256(key.encode()).hexdigest()[:8].upper()}", **payload}
            return dict(self.entries[key])


def build_graph(checkpointer: BaseCheckpointSaver[Any], ledger: Ledger | None = None) -> Any:
    ledger = ledger or Ledger()
    model = ScriptedToolCallingModel()

    @tool
    def create_support_ticket(
        title: str, tool_call_id: Annotated[str, InjectedToolCallId], config: RunnableConfig, priority: str = "NORMAL"
    ) -> dict[str, Any]:
        """创建故障工单 (create an incident ticket)"""
        # Before any side effect: ask for the two fields (on resume, interrupt() returns the submitted data).
        submitted = interrupt(
            {
                "formKey": SUPPORT_TICKET_FORM.form_key,
                "description": SUPPORT_TICKET_FORM.description,
                "schema": SUPPORT_TICKET_FORM.schema,
            }
        )
        thread = config["configurable"]["thread_id"]
        return ledger.record(
            f"{thread}:{tool_call_id}",
            {
                "title": title,
                "priority": priority,
                "affectedSystem": submitted["affectedSystem"],
                "impactScope": submitted["impactScope"],
            },
        )

    tools = [create_support_ticket]
    bound = model.bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke([SystemMessage(INSTRUCTIONS), *state["messages"]])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


class LangGraphCycle:
    """ask → interrupt → Command(resume=data) → tool → answer, on one thread (= conversation)."""

    def __init__(self, graph: Any, *, durability: str | None = None) -> None:
        self.graph = graph
        self.durability = durability
        self.last_phases: dict[str, float] = {}

    def __call__(self, thread_id: str, text: str, data: dict[str, Any]) -> None:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        kwargs: dict[str, Any] = {} if self.durability is None else {"durability": self.durability}
        started = time.perf_counter()
        stopped = self.graph.invoke({"messages": [HumanMessage(text)]}, config, **kwargs)
        assert stopped.get("__interrupt__"), stopped
        asked = time.perf_counter()
        # LangGraph has no separate submit: the answer is the resume itself (the caller waits for the run).
        done = self.graph.invoke(Command(resume=data), config, **kwargs)
        last = done["messages"][-1]
        assert isinstance(last, AIMessage) and "created" in str(last.content), last
        finished = time.perf_counter()
        self.last_phases = {"ask": asked - started, "resume": finished - asked}
