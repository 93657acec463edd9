"""An MCP server's task through the deployed handlers (run, submit, worker) on the emulator: the run Lambda lets
go of the turn with a delayed queue message at the task's ``pollIntervalMs``, a worker of a new process polls it,
a question inside the task is answered three days later through the submit Lambda, and the answer goes back
with ``tasks/update``."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from agentturn.mcp.listing import clear_cache
from tests.functional.harness import Deployment, http_event
from tests.support.mcp_server import DEPLOY_QUESTION, RunningServer

pytestmark = pytest.mark.integration

THREE_DAYS = 3 * 24 * 3600.0


@pytest.fixture
def task_deployment(deployment: Deployment, desk: RunningServer, monkeypatch: pytest.MonkeyPatch) -> Deployment:
    monkeypatch.setenv("AGENTTURN_AGENTS", "tests.functional.agents:mcp_task_agents")
    monkeypatch.setenv("AGENTTURN_TEST_MCP_URL", desk.scripted_url)
    clear_cache()
    deployment._import_handlers()
    return deployment


def _task(status: str, **fields: Any) -> dict[str, Any]:
    # The shortest poll this client keeps (1 s): the queue's own delay is what the test waits for.
    return {"taskId": "task-9", "status": status, "ttlMs": 3_600_000_000, "pollIntervalMs": 1_000, **fields}


def _receive_delayed(deployment: Deployment) -> list[dict[str, Any]]:
    """The message the queue holds back for the poll interval, long-polled with a bound (no sleep)."""
    end = time.monotonic() + 20
    while time.monotonic() < end:
        messages = deployment.receive(wait=2)
        if messages:
            return messages
    raise AssertionError("no delayed message within 20 s")


def test_a_task_is_polled_by_delayed_messages_and_its_question_answered_days_later(
    task_deployment: Deployment, desk: RunningServer
) -> None:
    deployment = task_deployment
    since = len(desk.recorder.exchanges)
    # GIVEN a server that answers the call with a task, polled every second
    desk.answer_next({"resultType": "task", **_task("working")})
    start = http_event(
        "http_start_turn.json",
        path="/conversations/task-1/turns",
        body={"input": "deploy", "agentId": "mcp-task-agent"},
    )
    # WHEN the run Lambda starts the turn
    started = deployment.run(start)
    # THEN it answers with the turn still running, handed to the queue with the poll's delay (no worker holds it)
    assert started.status == 202, started.body
    turn_id = started.json["turnId"]
    assert started.json["status"] == "RUNNING"
    assert started.json["retry"]["reason"] == "tool_poll"
    assert started.json["retry"]["notBefore"] > started.json["updatedAt"]  # the queue holds the message back

    # WHEN the delayed message reaches a worker of a new process, and the task asks a question
    clear_cache()
    deployment._import_handlers()
    desk.answer_next(_task("input_required", inputRequests={"confirm_deploy": DEPLOY_QUESTION}))
    assert deployment.deliver(_receive_delayed(deployment)) == {"batchItemFailures": []}
    waiting = deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}")).json
    # THEN the turn waits on the question's card
    assert waiting["status"] == "WAITING_FOR_USER", waiting
    action_id = waiting["suspension"]["actionId"]

    # WHEN a person answers three days later through the submit Lambda, and the task completes
    clear_cache()
    deployment._import_handlers()
    deployment.submit_app.api.services.clock = lambda: time.time() + THREE_DAYS
    deployment.worker_app.services.get().clock = lambda: time.time() + THREE_DAYS
    desk.answer_next({"resultType": "complete"})
    desk.answer_next(_task("completed", result={"content": [{"type": "text", "text": "deployed"}]}))
    response = deployment.submit(
        http_event(
            "http_submit_form.json",
            path=f"/turns/{turn_id}/actions/{action_id}/submit",
            body={"data": {"confirm": True}},
            headers={"idempotency-key": "answer-task-1"},
        )
    )
    assert response.status == 202, response.body
    assert deployment.deliver(deployment.receive()) == {"batchItemFailures": []}
    # THEN the answer went back with tasks/update, the task's result reached the model, and the call was made once
    methods = [json.loads(e.raw_request)["method"] for e in desk.recorder.exchanges[since:]]
    assert [m for m in methods if m != "tools/list"] == ["tools/call", "tasks/get", "tasks/update", "tasks/get"]
    update = [json.loads(e.raw_request) for e in desk.recorder.exchanges[since:]][methods.index("tasks/update")]
    assert update["params"] == {
        "taskId": "task-9",
        "inputResponses": {"confirm_deploy": {"action": "accept", "content": {"confirm": True}}},
        "_meta": update["params"]["_meta"],
    }
    done = deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}")).json
    assert done["status"] == "COMPLETED", done
    assert done["finalOutput"] == "deployed"
