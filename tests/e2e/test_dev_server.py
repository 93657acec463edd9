"""``agentturn dev`` without a browser: the gateway's translation, the worker loop's acknowledgements, and
state kept across a restart with ``--persist``."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentturn.local.emulator import Clients, MotoEmulator
from agentturn.local.gateway import GatewayConfig, LocalGateway
from agentturn.local.loops import WorkerLoop
from tests.e2e.conftest import ARTIFACTS, DevProcess, free_port

TICKET = "create a high priority login incident ticket"


class Recorder:
    def __init__(self, answer: dict[str, Any] | Exception) -> None:
        self.answer = answer
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> Any:
        self.events.append(event)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
def gateway() -> Iterator[tuple[LocalGateway, Recorder, Recorder]]:
    run = Recorder({"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": "{}"})
    submit = Recorder({"statusCode": 202, "headers": {"Content-Type": "application/json"}, "body": '{"ok":1}'})
    server = LocalGateway(GatewayConfig(port=0, default_user="dev-user", log_requests=False), run=run, submit=submit)
    server.start()
    yield server, run, submit
    assert server.stop(5)


def _call(
    url: str, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_gateway_sends_api_routes_to_their_lambda_with_the_dev_user_as_jwt_claims(gateway: Any) -> None:
    server, run, submit = gateway
    status, _, _ = _call(server.url + "conversations/c-1/messages?limit=5", headers={"X-Agentturn-Dev-User": "alice"})
    assert status == 200
    event = run.events[-1]
    assert event["routeKey"] == "GET /conversations/{conversationId}/messages"
    assert event["pathParameters"] == {"conversationId": "c-1"}
    assert event["queryStringParameters"] == {"limit": "5"}
    assert event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] == "alice"
    # The switch is the gateway's alone: the handler never sees the header.
    assert "x-agentturn-dev-user" not in event["headers"]

    status, _, body = _call(
        server.url + "turns/t-1/actions/call-1/submit",
        "POST",
        b'{"data":{}}',
        {"Content-Type": "application/json", "Idempotency-Key": "k-1"},
    )
    assert (status, body) == (202, b'{"ok":1}')
    event = submit.events[-1]
    assert event["routeKey"] == "POST /turns/{turnId}/actions/{actionId}/submit"
    assert event["headers"]["idempotency-key"] == "k-1"
    assert event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] == "dev-user"  # the default user
    assert json.loads(event["body"]) == {"data": {}}


def test_gateway_refuses_what_api_gateway_or_a_careful_local_server_would(gateway: Any) -> None:
    server, run, _ = gateway
    status, _, _ = _call(server.url + "turns/t-1", headers={"Host": "attacker.example:80"})
    assert status == 421  # DNS rebinding: only the printed host names are served
    status, _, body = _call(server.url + "turns/t-1", headers={"X-Agentturn-Dev-User": "bad user!"})
    assert status == 400
    assert json.loads(body)["type"].endswith("/invalid-dev-user")
    assert run.events == []
    run.answer = RuntimeError("boom")
    status, _, body = _call(server.url + "turns/t-1")
    assert (status, json.loads(body)) == (500, {"message": "Internal Server Error"})


def test_gateway_serves_the_console_with_a_strict_content_security_policy(gateway: Any) -> None:
    server, run, _ = gateway
    status, headers, body = _call(server.url)
    assert status == 200
    assert b"agentturn console" in body
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert "'unsafe-inline'" not in headers["Content-Security-Policy"]
    status, headers, body = _call(server.url + "vendor/forms.js")
    assert status == 200
    assert headers["Content-Type"].startswith("text/javascript")
    # Build sources are not served: the request goes on to the API (here a fake answering "{}").
    assert _call(server.url + "src/forms.jsx")[2] == b"{}"
    assert run.events[-1]["rawPath"] == "/src/forms.jsx"


@pytest.fixture
def sqs_queue() -> Iterator[tuple[Any, str, str]]:
    emulator = MotoEmulator()
    clients = Clients.for_endpoint(emulator.start())
    url = clients.sqs.create_queue(QueueName=f"q-{uuid.uuid4().hex[:8]}", Attributes={"VisibilityTimeout": "0"})[
        "QueueUrl"
    ]
    arn = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    yield clients.sqs, url, arn
    assert emulator.stop()


def _drain(loop: WorkerLoop, expected: int, seen: list[dict[str, Any]]) -> None:
    deadline = time.monotonic() + 20
    while sum(len(e["Records"]) for e in seen) < expected:
        assert time.monotonic() < deadline, "the worker loop did not receive every message in time"
        loop.poll_once()  # long-polls (bounded by its wait time): no sleep needed between rounds


def test_worker_loop_deletes_only_the_records_the_worker_did_not_report_failed(sqs_queue: Any) -> None:
    sqs, url, arn = sqs_queue
    for body in ("ok-1", "fail", "ok-2"):
        sqs.send_message(QueueUrl=url, MessageBody=body)
    events: list[dict[str, Any]] = []

    def worker(event: dict[str, Any]) -> dict[str, Any]:
        events.append(event)
        failed = [r["messageId"] for r in event["Records"] if r["body"] == "fail"]
        return {"batchItemFailures": [{"itemIdentifier": m} for m in failed]}

    loop = WorkerLoop(sqs, url, arn, worker)
    _drain(loop, 3, events)
    record = events[0]["Records"][0]
    assert record["eventSource"] == "aws:sqs"
    assert record["eventSourceARN"] == arn
    assert record["receiptHandle"]
    assert record["attributes"]["ApproximateReceiveCount"] == "1"
    assert loop.deleted == 2
    assert loop.failed == 1
    # The failed one comes back (visibility timeout 0 here), on its second receive.
    again = sqs.receive_message(QueueUrl=url, AttributeNames=["All"], WaitTimeSeconds=1)["Messages"]
    assert [(m["Body"], m["Attributes"]["ApproximateReceiveCount"]) for m in again] == [("fail", "2")]


def test_worker_loop_deletes_nothing_when_the_handler_raises(sqs_queue: Any) -> None:
    sqs, url, arn = sqs_queue
    sqs.send_message(QueueUrl=url, MessageBody="x")
    calls: list[dict[str, Any]] = []

    def worker(event: dict[str, Any]) -> dict[str, Any]:
        calls.append(event)
        raise RuntimeError("crashed")

    loop = WorkerLoop(sqs, url, arn, worker)
    _drain(loop, 1, calls)
    assert loop.deleted == 0
    again = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    assert [m["Body"] for m in again] == ["x"]


def _wait_for(server: DevProcess, check: Any, what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{server.log()}"
        assert server.process is not None
        try:
            server.process.wait(timeout=0.2)  # the pause between polls, and a crash check
        except subprocess.TimeoutExpired:
            continue
        pytest.fail(f"agentturn dev exited while waiting for {what}:\n{server.log()}")


def test_persist_keeps_a_waiting_turn_across_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = DevProcess(free_port(), ARTIFACTS / "dev-persist-1.log", args=["--persist", str(state)]).start()
    try:
        status, turn = first.request("POST", "/conversations/kept/turns", {"input": TICKET, "agentId": "support-agent"})
        assert (status, turn["status"]) == (200, "WAITING_FOR_USER")
    finally:
        assert first.stop() == 0, first.log()
    assert (state / "state.json").is_file()

    second = DevProcess(free_port(), ARTIFACTS / "dev-persist-2.log", args=["--persist", str(state)]).start()
    try:
        assert "restored" in second.log()
        status, view = second.request("GET", "/conversations/kept/messages")
        assert status == 200
        assert [m["status"] for m in view["messages"] if m["type"] == "agent_form"] == ["PENDING"]
        data = {"data": {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}}
        status, _ = second.request(
            "POST",
            f"/turns/{turn['turnId']}/actions/{turn['suspension']['actionId']}/submit",
            data,
            {"Idempotency-Key": "k"},
        )
        assert status == 202

        def completed() -> Any:
            answer = second.request("GET", f"/turns/{turn['turnId']}")[1]
            return answer if answer["status"] == "COMPLETED" else None

        done = _wait_for(second, completed, "the restored turn to complete through the worker")
        assert done["finalOutput"].startswith("[demo model] Ticket TICKET-")
    finally:
        assert second.stop() == 0, second.log()


def test_the_dev_emulator_makes_conditional_writes_atomic_under_concurrency() -> None:
    """8 concurrent compare-and-set writes of one item: exactly one may win, every round.

    Bare moto lets two win now and then (1 round in 40 in a probe here, with this very write: the
    runtime's versioned snapshot write, a large body); the dev emulator serialises DynamoDB requests.
    """
    import threading

    from botocore.exceptions import ClientError

    emulator = MotoEmulator()
    clients = Clients.for_endpoint(emulator.start())
    body = "x" * 20_000
    try:
        table = "atomic-probe"
        clients.dynamodb.create_table(
            TableName=table,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        )
        for round_number in range(40):
            key = {"pk": {"S": f"turn-{round_number}"}}
            clients.dynamodb.put_item(TableName=table, Item={**key, "version": {"N": "0"}, "body": {"S": body}})
            barrier = threading.Barrier(8)
            granted: list[int] = []
            refused: list[str] = []

            def write(
                worker: int,
                key: dict[str, Any] = key,
                barrier: threading.Barrier = barrier,
                granted: list[int] = granted,
                refused: list[str] = refused,
            ) -> None:
                barrier.wait(timeout=10)
                try:
                    clients.dynamodb.update_item(
                        TableName=table,
                        Key=key,
                        UpdateExpression="SET version = version + :one, body = :body",
                        ConditionExpression="version = :expected",
                        ExpressionAttributeValues={
                            ":one": {"N": "1"},
                            ":expected": {"N": "0"},
                            ":body": {"S": f"{body}{worker}"},
                        },
                    )
                    granted.append(worker)
                except ClientError as exc:
                    refused.append(exc.response["Error"]["Code"])

            threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=30)
            assert len(granted) == 1, f"round {round_number}: {len(granted)} writers won"
            assert refused == ["ConditionalCheckFailedException"] * 7
    finally:
        assert emulator.stop()


def test_every_container_is_readied_before_it_serves_and_readying_changes_nothing(tmp_path: Path) -> None:
    # GIVEN agentturn dev with its timing trace on
    trace = tmp_path / "trace.jsonl"
    server = DevProcess(free_port(), ARTIFACTS / "dev-ready.log", env={"AGENTTURN_TRACE": str(trace)}).start()
    no_turn = "/turns/" + "0" * 32

    def readied() -> set[str]:
        lines = [json.loads(line) for line in trace.read_text().splitlines()] if trace.exists() else []
        functions = {str(line["function"]) for line in lines if line["point"] == "handler.readied"}
        return functions if {"run", "submit", "worker"} <= functions else set()

    try:
        # WHEN it has started (nobody asked anything yet), THEN the run, submit and worker containers are readied
        _wait_for(server, readied, "the run, submit and worker containers to be readied")

        # AND it changed nothing: no conversation, no turn, nothing queued for the worker
        assert server.request("GET", "/conversations")[1]["conversations"] == []
        assert server.request("GET", no_turn)[0] == 404
        assert not any(json.loads(line)["point"] == "queue.received" for line in trace.read_text().splitlines())

        # AND a first Send is served as ever
        status, turn = server.request("POST", "/conversations/first/turns", {"input": "hello", "agentId": "assistant"})
        assert status == 200 and turn["status"] == "COMPLETED"
    finally:
        assert server.stop() == 0, server.log()
