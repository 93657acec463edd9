"""MCP's Tasks extension (``io.modelcontextprotocol/tasks``): a call the server answers with a task is followed
with no worker waiting, polled at the server's ``pollIntervalMs`` by a new process each time (the clock injected,
no sleeps), asks a person through the same cards as an input round, and ends as the task ends, or at its ttlMs.
The server is the hand-written ``/scripted`` endpoint of :mod:`tests.support.mcp_server`, each request getting
the next scripted answer, for the cases a real server does not produce on demand; FastMCP's own tasks extension is
tested end to end in :mod:`tests.functional.test_mcp_fastmcp_tasks`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentturn import Agent, FormMessage, MCPServer, ResumeCommand, ScriptedChatModel, ToolMessage, TurnStatus, Worker
from agentturn.engine.worker import WorkOutcome
from agentturn.mcp.calls import TASKS_EXTENSION
from agentturn.mcp.listing import clear_cache
from tests.scenarios.conftest import Backend, _memory_backend
from tests.scenarios.scripts import ai_calls, final_from_last_tool, reply_after_tools
from tests.support.mcp_server import DEPLOY_QUESTION, RunningServer

THREE_DAYS = 3 * 24 * 3600.0


@pytest.fixture(autouse=True)
def _fresh_listing(desk: RunningServer) -> Iterator[None]:
    clear_cache()
    desk.recorder.scripted.clear()
    yield
    clear_cache()


@pytest.fixture
def memory() -> Iterator[Backend]:
    yield from _memory_backend()


def _agent(desk: RunningServer) -> Agent:
    return Agent(
        id="mcp-task-agent",
        instructions="Use the odd server.",
        chat_model=ScriptedChatModel(reply_after_tools(ai_calls(("call-1", "odd__odd", {})), final_from_last_tool)),
        mcp_servers=[MCPServer(desk.scripted_url, name="odd", approve="none")],
    )


def _task(status: str, **fields: Any) -> dict[str, Any]:
    return {"taskId": "task-7", "status": status, "ttlMs": 3_600_000, "pollIntervalMs": 30_000, **fields}


def _requests(desk: RunningServer, since: int) -> list[dict[str, Any]]:
    with desk.recorder.lock:
        return [e.request for e in desk.recorder.exchanges[since:] if e.request.get("method") != "tools/list"]


def _poll(backend: Backend, agent: Agent, turn_id: str) -> Any:
    """One delivery by a worker of a new process (a new Runner): the one before it is gone."""
    return Worker(backend.runner([agent])).process(turn_id)


def tool_result(turn: Any) -> Any:
    (result,) = [m for m in turn.messages if isinstance(m, ToolMessage)]
    return result.content


def test_a_task_is_polled_without_a_worker_asks_a_person_and_completes(backend: Backend, desk: RunningServer) -> None:
    agent = _agent(desk)
    since = len(desk.recorder.exchanges)
    # GIVEN a server that answers the call with a task (poll every 30 s)
    desk.answer_next({"resultType": "task", **_task("working")})
    # WHEN the turn runs
    started = backend.runner([agent]).run(agent, "conv-task", "deploy")
    # THEN the call declared the extension, the task's id is kept with the call, and the turn waits, runnable but
    # not due for 30 s: no worker holds it, and neither a delivery nor the sweeper runs it early
    (call,) = _requests(desk, since)
    assert TASKS_EXTENSION in call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
    assert started.status is TurnStatus.RUNNING
    stored = backend.store.load(started.id)
    assert stored.tool_states["call-1"].round_state is not None
    assert stored.tool_states["call-1"].round_state["mcp"]["taskId"] == "task-7"
    assert stored.retry is not None and stored.retry.not_before == pytest.approx(backend.clock() + 30, abs=0.5)
    assert _poll(backend, agent, started.id).outcome is not WorkOutcome.ADVANCED
    assert started.id not in [r.turn_id for r in backend.store.find_runnable(idle_seconds=0)]
    assert len(_requests(desk, since)) == 1

    # WHEN 30 s pass: the sweeper finds it due, and a new worker polls: still working, next poll in 60 s
    backend.clock.advance(30)
    assert started.id in [r.turn_id for r in backend.store.find_runnable(idle_seconds=0)]
    desk.answer_next(_task("working", pollIntervalMs=60_000))
    _poll(backend, agent, started.id)
    polled = backend.store.load(started.id)
    assert polled.status is TurnStatus.RUNNING and polled.retry is not None
    assert polled.retry.not_before == pytest.approx(backend.clock() + 60, abs=0.5)
    assert _requests(desk, since)[-1] == {**_requests(desk, since)[-1], "method": "tasks/get"}
    assert _requests(desk, since)[-1]["params"]["taskId"] == "task-7"

    # WHEN the next poll finds the task needs input
    backend.clock.advance(60)
    desk.answer_next(_task("input_required", inputRequests={"confirm_deploy": DEPLOY_QUESTION}))
    _poll(backend, agent, started.id)
    waiting = backend.store.load(started.id)
    # THEN the question is a card like any round's, labelled with the server
    assert waiting.status is TurnStatus.WAITING_FOR_USER
    (card,) = waiting.pending_cards()
    assert isinstance(card, FormMessage) and card.schema["title"] == "odd (MCP server)"

    # WHEN a person answers three days later, and a new worker continues
    backend.clock.advance(THREE_DAYS)
    backend.runner([agent]).submit_resume(waiting.id, ResumeCommand.submit_form(card.action_id, {"confirm": True}))
    desk.answer_next({"resultType": "complete"})  # the tasks/update acknowledgement
    desk.answer_next(_task("working"))
    _poll(backend, agent, started.id)
    # THEN the answer went back with tasks/update under the server's key, then the task was polled again
    update, get = _requests(desk, since)[-2:]
    assert update["method"] == "tasks/update" and get["method"] == "tasks/get"
    assert update["params"]["taskId"] == "task-7"
    assert update["params"]["inputResponses"] == {"confirm_deploy": {"action": "accept", "content": {"confirm": True}}}
    assert backend.store.load(started.id).status is TurnStatus.RUNNING

    # WHEN the task completes
    backend.clock.advance(30)
    desk.answer_next(_task("completed", result={"content": [{"type": "text", "text": "deployed"}]}))
    _poll(backend, agent, started.id)
    done = backend.store.load(started.id)
    # THEN the model read the task's result, and the task's state left the snapshot with the call
    assert done.status is TurnStatus.COMPLETED
    assert tool_result(done) == {"text": "deployed"}
    assert done.tool_states["call-1"].round_state is None
    assert done.retry is None
    assert [r["method"] for r in _requests(desk, since)].count("tools/call") == 1


def test_a_task_past_its_ttl_is_a_tool_error_the_model_reads(memory: Backend, desk: RunningServer) -> None:
    agent = _agent(desk)
    # GIVEN a task that lives 60 s and is polled every 50 s, still working at the first poll
    desk.answer_next({"resultType": "task", **_task("working", ttlMs=60_000, pollIntervalMs=50_000)})
    started = memory.runner([agent]).run(agent, "conv-ttl", "deploy")
    memory.clock.advance(50)
    desk.answer_next(_task("working", ttlMs=60_000, pollIntervalMs=50_000))
    _poll(memory, agent, started.id)
    since = len(desk.recorder.exchanges)
    # WHEN the next poll is due past its ttl
    memory.clock.advance(50)
    _poll(memory, agent, started.id)
    done = memory.store.load(started.id)
    # THEN the turn goes on with a tool error naming the ttl, and the server is not asked again
    assert done.status is TurnStatus.COMPLETED
    assert "ttlMs" in tool_result(done)["message"]
    assert _requests(desk, since) == []


def test_a_task_whose_server_extends_its_ttl_is_polled_past_the_first_one(memory: Backend, desk: RunningServer) -> None:
    agent = _agent(desk)
    # GIVEN a task that first lives 60 s, polled every 50 s; at the first poll the server says it lives 10 min
    desk.answer_next({"resultType": "task", **_task("working", ttlMs=60_000, pollIntervalMs=50_000)})
    started = memory.runner([agent]).run(agent, "conv-ttl-longer", "deploy")
    memory.clock.advance(50)
    desk.answer_next(_task("working", ttlMs=600_000, pollIntervalMs=50_000))
    _poll(memory, agent, started.id)
    # WHEN the next poll is due past the first ttl, within the new one, and the task has completed
    memory.clock.advance(50)
    desk.answer_next(_task("completed", result={"content": [{"type": "text", "text": "deployed"}]}))
    _poll(memory, agent, started.id)
    # THEN the server was asked, and the model read the task's result (the latest ttlMs counts)
    done = memory.store.load(started.id)
    assert done.status is TurnStatus.COMPLETED
    assert tool_result(done) == {"text": "deployed"}


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        (_task("failed", error={"code": -32603, "message": "disk full"}), "failed: disk full"),
        (_task("cancelled"), "was cancelled"),
        (_task("finished"), "unknown status 'finished'"),
        (_task("completed"), "without a result object"),
    ],
)
def test_a_task_that_ends_without_a_result_is_a_tool_error(
    memory: Backend, desk: RunningServer, task: dict[str, Any], expected: str
) -> None:
    agent = _agent(desk)
    desk.answer_next({"resultType": "task", **_task("working")})
    started = memory.runner([agent]).run(agent, "conv-task-end", "deploy")
    memory.clock.advance(30)
    desk.answer_next(task)
    _poll(memory, agent, started.id)
    done = memory.store.load(started.id)
    assert done.status is TurnStatus.COMPLETED
    assert expected in tool_result(done)["message"]


def test_a_task_answer_without_a_task_id_is_a_tool_error(memory: Backend, desk: RunningServer) -> None:
    agent = _agent(desk)
    desk.answer_next({"resultType": "task", "status": "working"})
    done = memory.runner([agent]).run(agent, "conv-task-noid", "deploy")
    assert done.status is TurnStatus.COMPLETED
    assert "without a taskId" in tool_result(done)["message"]


@pytest.mark.parametrize("asking", [False, True], ids=["working", "input_required"])
def test_the_turns_cancel_sends_tasks_cancel(backend: Backend, desk: RunningServer, asking: bool) -> None:
    agent = _agent(desk)
    # GIVEN a turn following a task, either between polls or waiting on the task's question
    desk.answer_next({"resultType": "task", **_task("working")})
    started = backend.runner([agent]).run(agent, "conv-task-cancel", "deploy")
    if asking:
        backend.clock.advance(30)
        desk.answer_next(_task("input_required", inputRequests={"confirm_deploy": DEPLOY_QUESTION}))
        _poll(backend, agent, started.id)
        assert backend.store.load(started.id).status is TurnStatus.WAITING_FOR_USER
    since = len(desk.recorder.exchanges)
    # WHEN the turn is cancelled (by a runner of another process)
    desk.answer_next({"resultType": "complete"})
    cancelled = backend.runner([agent]).cancel(started.id)
    # THEN it ends CANCELLED and the server is asked to cancel the task, once
    assert cancelled.status is TurnStatus.CANCELLED
    (request,) = _requests(desk, since)
    assert request["method"] == "tasks/cancel" and request["params"]["taskId"] == "task-7"


def test_a_server_that_cannot_be_reached_to_cancel_does_not_stop_the_cancel(
    memory: Backend, desk: RunningServer
) -> None:
    agent = _agent(desk)
    desk.answer_next({"resultType": "task", **_task("working")})
    started = memory.runner([agent]).run(agent, "conv-task-cancel-err", "deploy")
    # GIVEN the server answers the cancel with a JSON-RPC error
    desk.recorder.scripted.append(({"jsonrpc": "2.0", "error": {"code": -32602, "message": "unknown task"}}, False))
    # WHEN the turn is cancelled THEN it ends CANCELLED all the same
    assert memory.runner([agent]).cancel(started.id).status is TurnStatus.CANCELLED
