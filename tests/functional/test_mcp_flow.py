"""An MCP server's question through the deployed handlers (run, submit, worker) on the emulator: asked by the
run Lambda, answered three days later through the submit Lambda, retried by a worker of a new process."""

from __future__ import annotations

import json
import time
from typing import Any, Final

import pytest

from agentturn.mcp.listing import clear_cache
from tests.functional.harness import Deployment, http_event
from tests.support.cycle_cost import CapacityMeter, Tally, meter_lambdas
from tests.support.emulators import Emulator
from tests.support.mcp_server import RunningServer

pytestmark = pytest.mark.integration

THREE_DAYS = 3 * 24 * 3600.0
#: List prices (us-east-1) of what an MCP elicitation cycle adds to DynamoDB and SQS (tests.support.cycle_cost):
#: dollars per million API Gateway HTTP API requests (the start and the answer) and Lambda requests (run,
#: submit, worker); Lambda duration is left out (it depends on the memory size and the model's latency).
HTTP_API_REQUEST_PRICE: Final = 1.00
LAMBDA_REQUEST_PRICE: Final = 0.20


def _dollars_per_million(start: Tally, answer: Tally) -> tuple[float, float]:
    """(DynamoDB and SQS, with API Gateway and Lambda requests) per million cycles, at list prices."""
    storage = start.dollars_per_million() + answer.dollars_per_million()
    return storage, storage + 2 * HTTP_API_REQUEST_PRICE + 3 * LAMBDA_REQUEST_PRICE


@pytest.fixture
def mcp_deployment(
    deployment: Deployment, desk: RunningServer, dynamodb_local: Emulator, monkeypatch: pytest.MonkeyPatch
) -> Deployment:
    monkeypatch.setenv("AGENTTURN_AGENTS", "tests.functional.agents:mcp_agents")
    monkeypatch.setenv("AGENTTURN_TEST_MCP_URL", desk.url)
    clear_cache()
    # The cycle's capacity units are measured: the tables are on DynamoDB Local (moto's consumed capacity is not
    # DynamoDB's). The handlers read the agents setting on their next (cold) invocation.
    deployment.move_tables_to(dynamodb_local)
    return deployment


def _turn(deployment: Deployment, turn_id: str) -> dict[str, Any]:
    turn: dict[str, Any] = deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}")).json
    return turn


def _later(deployment: Deployment, seconds: float) -> None:
    """Time passes for the submit and worker Lambdas (the run Lambda's clock stays)."""
    deployment.submit_app.api.services.clock = lambda: time.time() + seconds
    deployment.worker_app.services.get().clock = lambda: time.time() + seconds


def test_an_mcp_question_answered_three_days_later_is_retried_with_its_request_state(
    mcp_deployment: Deployment, desk: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    deployment = mcp_deployment
    before = len(desk.recorder.calls("create_ticket"))
    # GIVEN a turn whose MCP tool call was answered with a question (the run Lambda)
    start_event = http_event(
        "http_start_turn.json",
        path="/conversations/mcp-1/turns",
        body={"input": "open a login ticket", "agentId": "mcp-agent"},
    )
    responses = []
    meter = CapacityMeter()
    undo = meter_lambdas(deployment, meter)
    try:
        start_requests = deployment.count_requests().during(lambda: responses.append(deployment.run(start_event)))
    finally:
        undo()
    start_tally = meter.reset()
    (started,) = responses
    assert started.status == 200, started.body
    waiting = started.json
    assert waiting["status"] == "WAITING_FOR_USER"
    action_id = waiting["suspension"]["actionId"]
    sent_state = json.loads(desk.recorder.calls("create_ticket")[before].response)["result"]["requestState"]
    timeline = deployment.run(http_event("http_list_messages.json", path="/conversations/mcp-1/messages")).json
    (card,) = [m for m in timeline["messages"] if m.get("type") == "agent_form"]
    assert card["schema"]["title"] == "desk (MCP server)"
    assert card["schema"]["description"] == "Which system is affected?"
    assert sent_state not in json.dumps(timeline)  # the server's state never leaves the snapshot
    item = deployment.dynamodb.get_item(
        TableName=deployment.names.turns_table, Key={"turnId": {"S": waiting["turnId"]}}, ConsistentRead=True
    )["Item"]
    body = item["body"]
    stored_bytes = len(body["B"]) if "B" in body else len(body["S"].encode())
    snapshot = deployment.worker_app.services.get().store.load(waiting["turnId"])
    snapshot_bytes = len(snapshot.model_dump_json(by_alias=True).encode())
    round_bytes = len(json.dumps(snapshot.tool_states["call-1"].round_state, separators=(",", ":")).encode())

    # WHEN the worker processes die (new processes: no listing, no services), three days pass, and a person
    # answers through the submit Lambda; a worker delivers the queue's message
    clear_cache()
    deployment._import_handlers()
    _later(deployment, THREE_DAYS)
    log = deployment.count_requests()
    answered_at = time.monotonic()

    def answer_and_work() -> None:
        response = deployment.submit(
            http_event(
                "http_submit_form.json",
                path=f"/turns/{waiting['turnId']}/actions/{action_id}/submit",
                body={"data": {"system": "SSO"}},
                headers={"idempotency-key": "answer-1"},
            )
        )
        assert response.status == 202, response.body
        assert deployment.deliver(deployment.receive()) == {"batchItemFailures": []}

    undo = meter_lambdas(deployment, meter)
    try:
        requests = log.during(answer_and_work)
    finally:
        undo()
    answer_tally = meter.reset()
    storage_dollars, with_requests = _dollars_per_million(start_tally, answer_tally)
    assert start_tally.requests and answer_tally.requests and answer_tally.sqs_requests >= 1

    # THEN the server got the retry: a new id, the answer under its key, its requestState exactly as sent
    retry = desk.recorder.calls("create_ticket")[before + 1]
    assert retry.request["id"] != desk.recorder.calls("create_ticket")[before].request["id"]
    assert retry.request["params"]["requestState"] == sent_state
    assert json.dumps(sent_state).encode() in retry.raw_request
    assert retry.request["params"]["inputResponses"] == {
        "system_question": {"action": "accept", "content": {"system": "SSO"}}
    }
    done = _turn(deployment, waiting["turnId"])
    assert done["status"] == "COMPLETED", done
    assert done["finalOutput"].startswith("created 'login' for SSO")
    # AND a second question, answered with every function warm (the same processes, the listing cached)
    again = deployment.run(
        http_event(
            "http_start_turn.json",
            path="/conversations/mcp-2/turns",
            body={"input": "open another ticket", "agentId": "mcp-agent"},
        )
    ).json
    warm_at = time.monotonic()
    warm = deployment.submit(
        http_event(
            "http_submit_form.json",
            path=f"/turns/{again['turnId']}/actions/{again['suspension']['actionId']}/submit",
            body={"data": {"system": "VPN"}},
            headers={"idempotency-key": "answer-2"},
        )
    )
    assert warm.status == 202, warm.body
    assert deployment.deliver(deployment.receive()) == {"batchItemFailures": []}
    warm_retry = desk.recorder.calls("create_ticket")[-1]
    assert warm_retry.request["params"]["inputResponses"]["system_question"]["content"] == {"system": "VPN"}
    assert _turn(deployment, again["turnId"])["status"] == "COMPLETED"
    with capsys.disabled():
        print(
            f"\nMCP cycle: start (run Lambda, until the question) {len(start_requests)} AWS requests "
            f"{start_requests}; answer (submit + worker) {len(requests)} AWS requests {requests}; "
            f"waiting turn: snapshot {snapshot_bytes} B of JSON ({round_bytes} B of it the MCP round's state, "
            f"requestState {len(sent_state)} B), stored body {stored_bytes} B; "
            f"answer → server's retry {1000 * (retry.received_at - answered_at):.0f} ms cold (new worker process), "
            f"{1000 * (warm_retry.received_at - warm_at):.0f} ms warm; "
            f"cost at list prices: DynamoDB {start_tally.write_units + answer_tally.write_units:g} write / "
            f"{start_tally.read_units + answer_tally.read_units:g} read units and "
            f"{start_tally.sqs_requests + answer_tally.sqs_requests} SQS requests = ${storage_dollars:.2f} per million "
            f"MCP elicitation cycles (${storage_dollars / 1e6:.8f} a cycle), ${with_requests:.2f} per million with "
            "the 2 API Gateway and 3 Lambda requests (Lambda duration not included)"
        )
