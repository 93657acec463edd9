"""MCP's Tasks extension against FastMCP's own implementation of it (the ``fastmcp-tasks`` package), through the
deployed handlers (run, submit, worker) on the emulator: no scripted wire anywhere, FastMCP creates the tasks,
runs them on its Docket engine, asks inside them, and answers ``tasks/get``, ``tasks/update`` and
``tasks/cancel`` itself (:mod:`tests.support.mcp_task_server`).

``-s`` prints what following a task costs, per poll and per task:

    bash scripts/test tests/functional/test_mcp_fastmcp_tasks.py -k polls -s
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

import pytest

from agentturn.mcp.listing import clear_cache
from agentturn.mcp.server import MCPServer
from agentturn.mcp.tasks import TASK_METHOD_CAPABILITIES
from agentturn.mcp.transport import send
from tests.functional.harness import Deployment, http_event
from tests.support import mcp_task_server
from tests.support.cycle_cost import READ_UNIT_PRICE, SQS_REQUEST_PRICE, WRITE_UNIT_PRICE, CapacityMeter, meter_lambdas
from tests.support.emulators import Emulator
from tests.support.mcp_server import RunningServer

pytestmark = pytest.mark.integration

THREE_DAYS = 3 * 24 * 3600.0
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: List prices (us-east-1), dollars per million requests: API Gateway HTTP API, Lambda (duration left out: it
#: depends on the memory size and the model's latency)
HTTP_API_REQUEST_PRICE: Final = 1.00
LAMBDA_REQUEST_PRICE: Final = 0.20
#: SQS requests of the Lambda event source mapping per message it delivers (its ReceiveMessage and its
#: DeleteMessage, one message a batch at this rate); the Lambdas' own clients do not send them, so the meter
#: does not see them
ESM_SQS_REQUESTS_PER_DELIVERY: Final = 2


@pytest.fixture(scope="module")
def ops() -> Iterator[RunningServer]:
    running = mcp_task_server.start()
    yield running
    running.stop()


@pytest.fixture
def ops_deployment(deployment: Deployment, ops: RunningServer, monkeypatch: pytest.MonkeyPatch) -> Deployment:
    monkeypatch.setenv("AGENTTURN_AGENTS", "tests.functional.agents:mcp_fastmcp_task_agents")
    monkeypatch.setenv("AGENTTURN_TEST_MCP_URL", ops.url)
    _new_processes(deployment)
    return deployment


def _new_processes(deployment: Deployment) -> None:
    """Every Lambda as a fresh process: no MCP listing cached, services built again on the next invocation."""
    clear_cache()
    deployment._import_handlers()


def _start(deployment: Deployment, conversation: str, text: str) -> dict[str, Any]:
    event = http_event(
        "http_start_turn.json",
        path=f"/conversations/{conversation}/turns",
        body={"input": text, "agentId": "ops-agent"},
    )
    response = deployment.run(event)
    assert response.status == 202, response.body
    started: dict[str, Any] = response.json
    return started


def _turn(deployment: Deployment, turn_id: str) -> dict[str, Any]:
    turn: dict[str, Any] = deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}")).json
    return turn


def _deliver_next(deployment: Deployment) -> None:
    """The next queue message (held back for the poll interval) to a worker: long-polled with a bound."""
    end = time.monotonic() + 30
    while time.monotonic() < end:
        messages = deployment.receive(wait=2)
        if messages:
            assert deployment.deliver(messages) == {"batchItemFailures": []}
            return
    raise AssertionError("no queue message within 30 s")


def _work_until(deployment: Deployment, turn_id: str, status: str, *, limit: int = 10) -> tuple[dict[str, Any], int]:
    """Deliver poll messages to workers until the turn is in ``status``; the turn and how many deliveries."""
    for delivered in range(1, limit + 1):
        _deliver_next(deployment)
        turn = _turn(deployment, turn_id)
        if turn["status"] == status:
            return turn, delivered
    raise AssertionError(f"turn {turn_id!r} not {status} after {limit} polls: {turn}")


def _later(deployment: Deployment, seconds: float) -> None:
    deployment.submit_app.api.services.clock = lambda: time.time() + seconds
    deployment.worker_app.services.get().clock = lambda: time.time() + seconds


def _services(deployment: Deployment) -> list[Any]:
    """The services the run, submit and worker Lambdas built (building them if needed)."""
    return [deployment.run_app.api.services, deployment.submit_app.api.services, deployment.worker_app.services.get()]


def _methods(ops: RunningServer, since: int) -> list[str]:
    return [r["method"] for r in mcp_task_server.task_requests(ops.recorder, since)]


def _task_status(ops: RunningServer, task_id: str) -> str:
    """What FastMCP itself says of the task now (asked as any client of the extension would)."""
    answer = send(
        MCPServer(ops.url, name="ops"),
        "tasks/get",
        {"taskId": task_id},
        capabilities=TASK_METHOD_CAPABILITIES,
        name=task_id,
    )
    return str(answer["status"])


def _task_id(ops: RunningServer, since: int) -> str:
    (created,) = [e for e in ops.recorder.exchanges[since:] if e.request.get("method") == "tools/call"]
    task_id = json.loads(created.response)["result"]["taskId"]
    assert isinstance(task_id, str)
    return task_id


def test_a_fastmcp_task_asks_inside_the_task_and_is_answered_three_days_later_by_a_new_worker(
    ops_deployment: Deployment, ops: RunningServer
) -> None:
    deployment = ops_deployment
    since = len(ops.recorder.exchanges)
    # GIVEN a FastMCP tool that always runs as a task (FastMCP's tasks extension) and asks inside it
    # WHEN the run Lambda starts the turn
    started = _start(deployment, "fastmcp-task-1", "deploy api")
    # THEN FastMCP answered with a task and the turn is handed to the queue at its pollIntervalMs (1 s)
    assert started["status"] == "RUNNING" and started["retry"]["reason"] == "tool_poll", started
    turn_id = started["turnId"]
    task_id = _task_id(ops, since)

    # WHEN delayed messages reach workers of new processes until FastMCP reports the task's question
    _new_processes(deployment)
    waiting, _ = _work_until(deployment, turn_id, "WAITING_FOR_USER")
    # THEN the turn waits on a card with FastMCP's question, and the task waits too (no worker holds either)
    action_id = waiting["suspension"]["actionId"]
    timeline = deployment.run(http_event("http_list_messages.json", path="/conversations/fastmcp-task-1/messages"))
    (card,) = [m for m in timeline.json["messages"] if m.get("type") == "agent_form"]
    assert card["schema"]["description"] == "Deploy to production?"
    assert _task_status(ops, task_id) == "input_required"

    # WHEN the worker process is gone, three days pass, and the person answers through the submit Lambda
    _new_processes(deployment)
    _later(deployment, THREE_DAYS)
    answer = deployment.submit(
        http_event(
            "http_submit_form.json",
            path=f"/turns/{turn_id}/actions/{action_id}/submit",
            body={"data": {"confirm": True}},
            headers={"idempotency-key": "answer-fastmcp-task-1"},
        )
    )
    assert answer.status == 202, answer.body
    done, _ = _work_until(deployment, turn_id, "COMPLETED")

    # THEN the answer went to FastMCP with tasks/update, under the key FastMCP surfaced, declaring the extension
    requests = mcp_task_server.task_requests(ops.recorder, since)
    (update,) = [r for r in requests if r["method"] == "tasks/update"]
    surfaced = [r for r in requests if r["method"] == "tasks/get"]
    assert update["params"]["taskId"] == task_id
    (key,) = update["params"]["inputResponses"]
    assert key.startswith(task_id)  # FastMCP's own key for the question (unique over the task's life)
    assert update["params"]["inputResponses"][key] == {"action": "accept", "content": {"confirm": True}}
    capabilities = update["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert TASKS_EXTENSION in capabilities["extensions"]
    # AND FastMCP ran the next leg of the task with the answer, whose result reached the model; one call only
    assert done["finalOutput"] == "api deployed", done
    assert _task_status(ops, task_id) == "completed"
    methods = _methods(ops, since)
    assert methods.count("tools/call") == 1 and len(surfaced) >= 2, methods


@pytest.mark.parametrize(
    ("tool", "told"),
    [
        ("migrate", "failed: the migration lock is held by another job"),
        ("crash", "failed: Error calling tool 'crash': disk full"),
    ],
    ids=["failed-task", "completed-with-isError"],
)
def test_a_fastmcp_task_that_fails_is_a_tool_error_the_model_reads(
    ops_deployment: Deployment, ops: RunningServer, tool: str, told: str
) -> None:
    deployment = ops_deployment
    since = len(ops.recorder.exchanges)
    # GIVEN a FastMCP task that ends in a JSON-RPC error (status failed) or a tool error (completed, isError)
    started = _start(deployment, f"fastmcp-fail-{tool}", tool)
    # WHEN its polls reach workers
    done, _ = _work_until(deployment, started["turnId"], "COMPLETED")
    # THEN the turn completes, and the model was told why the tool failed
    assert told in done["finalOutput"], done
    status = _task_status(ops, _task_id(ops, since))
    assert status == ("failed" if tool == "migrate" else "completed")


@pytest.mark.parametrize("asking", [False, True], ids=["working", "input_required"])
def test_the_turns_cancel_sends_tasks_cancel_and_fastmcp_reports_the_task_cancelled(
    ops_deployment: Deployment, ops: RunningServer, asking: bool
) -> None:
    deployment = ops_deployment
    since = len(ops.recorder.exchanges)
    # GIVEN a turn following a FastMCP task: one still working (a report that needs many polls), or one whose
    # question waits for a person
    started = _start(deployment, f"fastmcp-cancel-{asking}", "deploy web" if asking else "report 1000")
    turn_id = started["turnId"]
    task_id = _task_id(ops, since)
    if asking:
        _work_until(deployment, turn_id, "WAITING_FOR_USER")
    # WHEN a person cancels the turn through the submit Lambda (a new process)
    _new_processes(deployment)
    cancel = deployment.submit(http_event("http_cancel.json", path=f"/turns/{turn_id}/cancel"))
    assert cancel.status in (200, 202), cancel.body
    deployment.drain()
    # THEN the turn ends CANCELLED, FastMCP got tasks/cancel once, and FastMCP reports the task cancelled
    assert _turn(deployment, turn_id)["status"] == "CANCELLED"
    cancels = [r for r in mcp_task_server.task_requests(ops.recorder, since) if r["method"] == "tasks/cancel"]
    assert [c["params"]["taskId"] for c in cancels] == [task_id]
    assert _task_status(ops, task_id) == "cancelled"


@pytest.fixture
def measured_deployment(
    ops_deployment: Deployment, dynamodb_local: Emulator, monkeypatch: pytest.MonkeyPatch
) -> Deployment:
    """The deployment with its tables on DynamoDB Local (AWS's own implementation, whose consumed capacity is
    DynamoDB's; moto's is not), SQS still on moto."""
    ops_deployment.move_tables_to(dynamodb_local)
    _new_processes(ops_deployment)
    return ops_deployment


def test_what_the_polls_of_a_fastmcp_task_cost(
    measured_deployment: Deployment, ops: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    deployment = measured_deployment
    polls = 3
    since = len(ops.recorder.exchanges)
    meter = CapacityMeter()
    delays: list[int] = []

    def record_delay(params: dict[str, Any], **kwargs: Any) -> None:
        delays.append(int(params.get("DelaySeconds", 0)))

    def metered(action: Callable[[], Any]) -> tuple[list[str], Any]:
        """The AWS requests the Lambdas' clients send during ``action`` (each client hooked once), and the meter's
        tally of them."""
        sent: list[str] = []

        def record(**kwargs: Any) -> None:
            _, service, operation = kwargs["event_name"].split(".", 2)
            sent.append(f"{service}.{operation}")

        clients = {id(c): c for s in _services(deployment) for c in (s.store.client, s.queue.client)}
        for client in clients.values():
            client.meta.events.register("before-send", record)
            client.meta.events.register("before-parameter-build.sqs.SendMessage", record_delay)
        undo = meter_lambdas(deployment, meter)
        try:
            action()
        finally:
            undo()
            for client in clients.values():
                client.meta.events.unregister("before-send", record)
                client.meta.events.unregister("before-parameter-build.sqs.SendMessage", record_delay)
        return sent, meter.reset()

    # GIVEN a FastMCP task that completes once it has been polled 3 times
    started: list[dict[str, Any]] = []
    start_requests, start_tally = metered(
        lambda: started.append(_start(deployment, "fastmcp-polls", f"report {polls}"))
    )
    turn_id = started[0]["turnId"]
    # WHEN every poll is a delayed queue message delivered to a worker, until the turn completes
    per_poll: list[tuple[list[str], Any]] = []
    while _turn(deployment, turn_id)["status"] != "COMPLETED":
        assert len(per_poll) < polls + 3, "the task did not complete"
        per_poll.append(metered(lambda: _deliver_next(deployment)))
    # THEN it took exactly the polls FastMCP needed: 3 answered working, the 4th completed
    requests = mcp_task_server.task_requests(ops.recorder, since)
    assert [r["method"] for r in requests] == ["tools/call"] + ["tasks/get"] * (polls + 1)
    assert len(per_poll) == polls + 1
    assert _turn(deployment, turn_id)["finalOutput"] == mcp_task_server.REPORT_TEXT
    # AND a poll that finds the task working costs the same each time, and hands the turn on delayed by 1 s
    working = per_poll[:polls]
    assert len({tuple(sorted(r)) for r, _ in working}) == 1, [r for r, _ in working]
    assert delays and all(d == 1 for d in delays), delays
    poll_requests, poll_tally = working[0]
    last_requests, last_tally = per_poll[-1]

    def dollars(tally: Any, deliveries: int, lambdas: int, http: int) -> float:
        return float(
            tally.write_units * WRITE_UNIT_PRICE
            + tally.read_units * READ_UNIT_PRICE
            + (tally.sqs_requests + ESM_SQS_REQUESTS_PER_DELIVERY * deliveries) * SQS_REQUEST_PRICE
            + lambdas * LAMBDA_REQUEST_PRICE
            + http * HTTP_API_REQUEST_PRICE
        )

    per_poll_dollars = dollars(poll_tally, 1, 1, 0)
    task_dollars = (
        dollars(start_tally, 0, 1, 1) + polls * per_poll_dollars + dollars(last_tally, 1, 1, 0)
    )  # the start (API Gateway + run Lambda), the working polls, the poll that completes the turn
    assert per_poll_dollars > 0 and task_dollars > polls * per_poll_dollars
    with capsys.disabled():
        print(
            f"\nFastMCP task polled {polls} times working + 1 completing, pollIntervalMs 1000 "
            f"(prices per million: DynamoDB write unit ${WRITE_UNIT_PRICE}, read unit ${READ_UNIT_PRICE}, "
            f"SQS request ${SQS_REQUEST_PRICE}, Lambda request ${LAMBDA_REQUEST_PRICE}, "
            f"HTTP API request ${HTTP_API_REQUEST_PRICE}; Lambda duration not included; "
            f"+{ESM_SQS_REQUESTS_PER_DELIVERY} SQS requests per delivery for the event source mapping)\n"
            f"  start (run Lambda, tools/call -> task): {len(start_requests)} AWS requests {start_requests}; "
            f"{start_tally.write_units:g} WRU / {start_tally.read_units:g} RRU, "
            f"{start_tally.sqs_requests} SQS sends\n"
            f"  per working poll (1 worker invocation, 1 tasks/get): {len(poll_requests)} AWS requests "
            f"{poll_requests}; {poll_tally.write_units:g} WRU / {poll_tally.read_units:g} RRU, "
            f"{poll_tally.sqs_requests} SQS send (DelaySeconds {delays[0]}) + "
            f"{ESM_SQS_REQUESTS_PER_DELIVERY} ESM; ${per_poll_dollars:.2f} per million polls\n"
            f"  completing poll: {len(last_requests)} AWS requests {last_requests}; "
            f"{last_tally.write_units:g} WRU / {last_tally.read_units:g} RRU, {last_tally.sqs_requests} SQS sends\n"
            f"  per task of N working polls: ${task_dollars - polls * per_poll_dollars:.2f} "
            f"+ N x ${per_poll_dollars:.2f} per million tasks; N={polls}: ${task_dollars:.2f} per million tasks, "
            f"{2 + polls} Lambda invocations"
        )
