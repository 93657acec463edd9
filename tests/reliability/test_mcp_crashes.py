"""The crash suite's promise for an MCP flow: a server's question, answered, retried — with every storage and
queue boundary failing before or after its write, seed by seed. 0 lost (every turn ends COMPLETED), 0 doubled
(one result for the call, one answer), 0 stuck; every retry the server sees carries the same requestState and
the same idempotency key, so a server can recognise a repeat."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pytest

from agentturn import Agent, MCPServer, ScriptedChatModel, ToolMessage, TurnStatus
from agentturn.mcp.calls import IDEMPOTENCY_META_KEY
from agentturn.mcp.listing import clear_cache
from agentturn.ports.queue import InMemoryResumeQueue
from agentturn.state.turn import Suspension, Turn
from agentturn.timeline.repair import reconcile
from tests.reliability import test_crashes
from tests.reliability.faults import FaultPlan, FaultyQueue, FaultyStore, faulty_memory
from tests.reliability.kit import Stack, quiet_logs
from tests.scenarios.scripts import ai_calls, final_from_last_tool, reply_after_tools
from tests.support.clock import FakeClock
from tests.support.mcp_server import RunningServer

SEEDS = int(os.environ.get("AGENTTURN_MCP_CRASH_SEEDS", "40"))


@dataclass
class MCPWorld(test_crashes.World):
    def _answer(self, turn: Turn, suspension: Suspension) -> None:
        action = suspension.correlation_id
        event = Stack.submit_event(turn.id, action, {"data": {"system": "SSO"}}, f"client-{turn.id}-{action}")
        for _ in range(6):
            answer = self._call(self.stack.submit, event)
            if answer is None or answer.status >= 500:
                continue
            assert answer.status == 202, answer.body
            return


def _mcp_world(seed: int, url: str) -> MCPWorld:
    clock = FakeClock()
    inner, timeline = test_crashes.InMemoryTurnStore(clock=clock), test_crashes.InMemoryChatMemory()
    queue = InMemoryResumeQueue()
    plan = FaultPlan(seed, clock=clock, rate=0.2)
    agent = Agent(
        id="mcp-agent",
        instructions="",
        chat_model=ScriptedChatModel(
            reply_after_tools(ai_calls(("call-1", "desk__create_ticket", {"title": "login"})), final_from_last_tool)
        ),
        mcp_servers=[MCPServer(url, name="desk", approve="none")],
    )
    stack = Stack(
        inner,
        timeline,
        clock,
        queue=queue,
        ports=(FaultyStore(inner, plan), faulty_memory(timeline, plan), FaultyQueue(queue, plan)),
        agents=[agent],
    )
    return MCPWorld(seed, plan, stack, inner, timeline, queue, clock, flow="mcp")


def test_crashes_at_any_boundary_lose_and_double_nothing_in_an_mcp_flow(
    desk: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(test_crashes._FLOW_INPUTS, "mcp", {"input": "open a ticket", "agentId": "mcp-agent"})
    figures = {"lost": 0, "doubled": 0, "stuck": 0, "faults": 0, "server_retries": 0, "questions_asked_again": 0}
    for seed in range(SEEDS):
        clear_cache()
        world = _mcp_world(seed, desk.url)
        with quiet_logs():
            world.run()
        where = f"seed {seed} (faults {world.plan.log})"
        turns = world.turns()
        figures["faults"] += len(world.plan.log)
        # A start whose answer was lost may leave an orphan turn that never took the conversation (the crash
        # suite's rule): it ends, it does not run; exactly one turn completes.
        figures["lost"] += sum(not t.status.is_terminal for t in turns)
        assert all(t.status.is_terminal for t in turns), f"{where}: {[(t.id, t.status) for t in turns]}"
        completed = [t for t in turns if t.status is TurnStatus.COMPLETED]
        assert len(completed) == 1, f"{where}: {[(t.status, t.error) for t in turns]}"
        (turn,) = completed
        results = [m for m in turn.messages if isinstance(m, ToolMessage) and m.tool_call_id == "call-1"]
        figures["doubled"] += len(results) != 1
        assert len(results) == 1, where
        assert isinstance(results[0].content, dict), where
        assert results[0].content["text"].startswith("created 'login' for SSO"), f"{where}: {results[0].content}"
        # every call of this turn carried its one key; a crash before the question was saved asks it again (a
        # new call without state), and every retry carries the state of the one question the snapshot kept
        exchanges = [
            e
            for e in desk.recorder.calls("create_ticket")
            if e.request["params"]["_meta"].get(IDEMPOTENCY_META_KEY) == f"{turn.id}:call-1"
        ]
        asks = [e for e in exchanges if "requestState" not in e.request["params"]]
        retries = [e.request["params"] for e in exchanges if "requestState" in e.request["params"]]
        assert asks and retries, where
        states = {r["requestState"] for r in retries}
        assert len(states) == 1, f"{where}: retries carried {len(states)} different states"
        (state,) = states
        assert state in {json.loads(e.response)["result"]["requestState"] for e in asks}, where
        figures["server_retries"] += len(retries)
        figures["questions_asked_again"] += len(asks) - 1
        # the timeline converges to the snapshot (the repair a reader's visit makes; nothing stuck)
        memory = world.timeline(turn.conversation_id)
        reconcile(world.inner.load(turn.id), memory, memory.get_messages(), whole=True)
        problem = test_crashes._divergence(turn, memory)
        figures["stuck"] += problem is not None
        assert problem is None, f"{where}: {problem}"
    print(f"\nMCP crash suite, {SEEDS} seeds: {figures}")
    assert figures["lost"] == figures["doubled"] == figures["stuck"] == 0
    assert figures["faults"] > SEEDS  # the faults did fire
