"""Many form cycles at once through the production path: the run and submit routes (``HttpApi`` on the recorded
API Gateway events, as the run and submit Lambdas call it) and the worker (``SqsWorker`` on SQS events received
from the queue, as its event source mapping delivers them), on DynamoDB Local with SQS on moto.

:func:`run_load` starts ``conversations`` turns, submits every form, then drains the queue with ``threads``
worker threads (each its own Lambda container: its own services, as Lambda gives each concurrent invocation its
own), delivering every ``redeliver_every``-th message twice (SQS delivers at least once). It checks the
invariants the suite asserts: no error answer, no turn run twice (the demo's ledger: one ticket per turn, and
one final answer per conversation), none lost (every turn COMPLETED). :func:`sweep_requests` counts the
DynamoDB requests of one sweep.
"""

from __future__ import annotations

import functools
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final

from agentturn.api.http import HttpApi
from agentturn.api.routes import RUN_LAMBDA_GROUPS, SUBMIT_LAMBDA_GROUPS
from agentturn.api.services import Services
from agentturn.api.telemetry import NullTelemetry
from agentturn.api.wiring import AwsClients, services_from_env
from agentturn.api.worker import SqsWorker
from agentturn.demo import demo_agents
from agentturn.demo.agents import TicketLedger
from tests.functional.harness import DEFAULT_SUB, FakeLambdaContext, http_event, sqs_event
from tests.support.cycle_cost import TICKET_DATA, TICKET_INPUT

#: The demo agents' side effects, shared by every container of a load run (``AGENTTURN_AGENTS`` names it).
LEDGER: Final = TicketLedger()
#: How long the workers may take to drain the queue before the run counts what is left as lost.
DRAIN_SECONDS: Final = 600.0


def agents() -> list[Any]:
    """``AGENTTURN_AGENTS=tests.support.load:agents``: the demo agents on the load run's ledger."""
    return demo_agents(LEDGER)


@dataclass
class Route:
    """Latencies of one route (seconds) and its error answers."""

    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, seconds: float, error: str | None = None) -> None:
        with self.lock:
            self.seconds.append(seconds)
            if error is not None:
                self.errors.append(error)

    def summary(self, wall: float) -> dict[str, float]:
        ordered = sorted(self.seconds)
        if not ordered:
            return {"count": 0}
        return {
            "count": len(ordered),
            "per_second": len(ordered) / wall if wall else 0.0,
            "p50_ms": statistics.median(ordered) * 1000,
            "p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000,
            "errors": len(self.errors),
        }


@dataclass
class LoadReport:
    conversations: int
    threads: int
    routes: dict[str, dict[str, float]]
    errors: list[str]
    double_runs: list[str]
    tool_replays: int
    lost: list[str]
    redelivered: int
    wall_seconds: dict[str, float]


class _Container:
    """One Lambda container of each function: its own services on the shared clients."""

    def __init__(self, env: dict[str, str], clients: AwsClients) -> None:
        self.services: Services = services_from_env(env, clients=clients)
        self.run_api = HttpApi(RUN_LAMBDA_GROUPS, services=self.services)
        self.submit_api = HttpApi(SUBMIT_LAMBDA_GROUPS, services=self.services)
        self.worker = SqsWorker(self.services, NullTelemetry())


def _deliver(container: _Container, event: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = container.worker.handle(event, FakeLambdaContext())
    return answer


def _queue_is_empty(sqs: Any, queue_url: str) -> bool:
    """No message in the queue, visible, in flight or delayed (SQS's approximate counts)."""
    counts = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    )["Attributes"]
    return all(int(value) == 0 for value in counts.values())


def _timed(route: Route, call: Callable[[], dict[str, Any]], ok: Iterable[int | None]) -> dict[str, Any] | None:
    started = time.perf_counter()
    try:
        answer = call()
    except Exception as exc:  # an exception out of a handler is an error answer (Lambda: a 502)
        route.add(time.perf_counter() - started, f"{type(exc).__name__}: {exc}")
        return None
    status = answer.get("statusCode")
    error = None if status in ok else f"{status}: {str(answer.get('body'))[:300]}"
    route.add(time.perf_counter() - started, error)
    return answer if error is None else None


def run_load(
    *,
    dynamodb: Any,
    sqs: Any,
    s3: Any,
    turns_table: str,
    conversations_table: str,
    bucket: str,
    conversations: int,
    threads: int,
    redeliver_every: int = 7,
) -> LoadReport:
    import json

    queue_url = sqs.create_queue(QueueName=f"load-{uuid.uuid4().hex[:10]}", Attributes={"VisibilityTimeout": "120"})[
        "QueueUrl"
    ]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    env = {
        "TURNS_TABLE": turns_table,
        "CONVERSATIONS_TABLE": conversations_table,
        "RESUME_QUEUE_URL": queue_url,
        "SNAPSHOT_BUCKET": bucket,
        "AGENTTURN_HANDOFF_KEY": "load-handoff-key-" + "0" * 32,
        "AGENTTURN_AGENTS": "tests.support.load:agents",
    }
    clients = AwsClients(dynamodb=dynamodb, sqs=sqs, s3=s3)
    local = threading.local()

    def container() -> _Container:
        if not hasattr(local, "container"):
            local.container = _Container(env, clients)
        made: _Container = local.container
        return made

    routes = {name: Route() for name in ("start", "submit", "worker", "get")}
    ids = [f"load-{uuid.uuid4().hex[:12]}" for _ in range(conversations)]
    waiting: dict[str, tuple[str, str]] = {}
    waiting_lock = threading.Lock()
    walls: dict[str, float] = {}

    def start(conversation: str) -> None:
        event = http_event(
            "http_start_turn.json",
            path=f"/conversations/{conversation}/turns",
            body={"input": TICKET_INPUT, "agentId": "support-agent"},
            sub=DEFAULT_SUB,
        )
        answer = _timed(routes["start"], lambda: container().run_api.handle(event, None), (200,))
        if answer is not None:
            body = json.loads(answer["body"])
            with waiting_lock:
                waiting[conversation] = (body["turnId"], body["suspension"]["actionId"])

    def submit(conversation: str) -> None:
        turn_id, action_id = waiting[conversation]
        event = http_event(
            "http_submit_form.json",
            path=f"/turns/{turn_id}/actions/{action_id}/submit",
            body={"data": TICKET_DATA},
            sub=DEFAULT_SUB,
            headers={"idempotency-key": uuid.uuid4().hex},
        )
        _timed(routes["submit"], lambda: container().submit_api.handle(event, None), (202,))

    for name, work, items in (("start", start, ids), ("submit", submit, None)):
        began = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(work, items if items is not None else sorted(waiting)))
        walls[name] = time.perf_counter() - began

    redelivered = 0
    counter_lock = threading.Lock()
    handled = [0]

    def drain() -> None:
        nonlocal redelivered
        deadline = time.monotonic() + DRAIN_SECONDS
        idle = 0
        while time.monotonic() < deadline and idle < 3:
            # All attributes, as the event source mapping passes them (ApproximateReceiveCount among them).
            received = sqs.receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1, AttributeNames=["All"]
            )
            messages = received.get("Messages", [])
            if not messages:
                # Done only when nothing is left at all: a message handed back (a turn another worker held)
                # or sent with a delay (a retry's backoff) is not visible yet, but it is not finished either.
                idle = idle + 1 if _queue_is_empty(sqs, queue_url) else 0
                continue
            idle = 0
            event = sqs_event(messages, queue_arn)
            answer = _timed(routes["worker"], functools.partial(_deliver, container(), event), (None,))
            failed = {f["itemIdentifier"] for f in (answer or {}).get("batchItemFailures", [])}
            if failed:
                routes["worker"].add(0.0, f"batch item failures {sorted(failed)}")
            for message in messages:
                with counter_lock:
                    handled[0] += 1
                    again = handled[0] % redeliver_every == 0
                    redelivered += again
                if again:  # SQS hands the same message out again: the worker must not run the turn twice
                    attributes = dict(message.get("Attributes", {}))
                    attributes["ApproximateReceiveCount"] = str(int(attributes.get("ApproximateReceiveCount", 1)) + 1)
                    repeat = sqs_event([{**message, "Attributes": attributes}], queue_arn)
                    _timed(routes["worker"], functools.partial(_deliver, container(), repeat), (None,))
                if message["MessageId"] not in failed:
                    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])

    began = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(drain) for _ in range(threads)]:
            future.result()
    walls["worker"] = time.perf_counter() - began

    lost: list[str] = []
    double_runs: list[str] = []
    answers: dict[str, dict[str, Any]] = {}

    def read(conversation: str) -> None:
        turn_id, _ = waiting[conversation]
        event = http_event("http_start_turn.json", method="GET", path=f"/turns/{turn_id}", body=None)
        answer = _timed(routes["get"], lambda: container().run_api.handle(event, None), (200,))
        if answer is not None:
            answers[conversation] = json.loads(answer["body"])

    began = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(read, sorted(waiting)))
    walls["get"] = time.perf_counter() - began
    for conversation in ids:
        view = answers.get(conversation)
        if view is None or view.get("status") != "COMPLETED":
            lost.append(f"{conversation}: {None if view is None else view.get('status')}")
    # The ledger, keyed by the call's idempotency key "{turnId}:{callId}": each turn made exactly one ticket.
    # A tool call may be attempted again with the same key (a delivery SQS hands out twice while the first
    # still runs, a lost lease): the at-least-once the ticket tool is declared idempotent for, counted apart.
    tool_replays = 0
    for conversation, (turn_id, _) in sorted(waiting.items()):
        tickets = [key for key in LEDGER.entries if key.startswith(f"{turn_id}:")]
        attempts = [count for key, count in LEDGER.attempts.items() if key.startswith(f"{turn_id}:")]
        tool_replays += sum(attempts) - len(attempts)
        if len(tickets) != 1:
            double_runs.append(f"{conversation}: tickets {tickets}")
    errors = [f"{name}: {e}" for name, route in routes.items() for e in route.errors]
    return LoadReport(
        conversations=conversations,
        threads=threads,
        routes={name: route.summary(walls.get(name, 0.0)) for name, route in routes.items()},
        errors=errors,
        double_runs=double_runs,
        tool_replays=tool_replays,
        lost=lost,
        redelivered=redelivered,
        wall_seconds=walls,
    )


def table(report: LoadReport) -> str:
    lines = [
        f"{report.conversations} conversations, {report.threads} threads; errors {len(report.errors)}, "
        f"double runs {len(report.double_runs)}, tool replays {report.tool_replays}, lost {len(report.lost)}, "
        f"messages delivered twice "
        f"{report.redelivered}",
        "",
        "| route | requests | per second | p50 ms | p99 ms | errors |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in report.routes.items():
        if not row.get("count"):
            continue
        lines.append(
            f"| {name} | {row['count']:.0f} | {row['per_second']:.1f} | {row['p50_ms']:.1f} | {row['p99_ms']:.1f} "
            f"| {row['errors']:.0f} |"
        )
    return "\n".join(lines)


def clone_waiting(dynamodb: Any, table: str, turn_id: str, count: int) -> None:
    """``count`` more turns waiting as ``turn_id`` waits: its stored item under new turn ids (BatchWriteItem,
    25 at a time). Only the sweeper reads them: what it must not read is a turn that is not due."""
    item = dynamodb.get_item(TableName=table, Key={"turnId": {"S": turn_id}}, ConsistentRead=True)["Item"]
    for first in range(0, count, 25):
        batch = [
            {"PutRequest": {"Item": {**item, "turnId": {"S": f"waiting-{uuid.uuid4().hex}"}}}}
            for _ in range(min(25, count - first))
        ]
        pending: dict[str, Any] = {table: batch}
        while pending:
            pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


def sweep_requests(services: Services, dynamodb: Any) -> tuple[int, dict[str, int]]:
    """DynamoDB requests one sweep sends, and its result."""
    from agentturn.api.sweeper import sweep

    sent: list[str] = []

    def count(**kwargs: Any) -> None:
        sent.append(kwargs["event_name"].rsplit(".", 1)[-1])

    dynamodb.meta.events.register("before-send.dynamodb", count)
    try:
        result = sweep(services, NullTelemetry()).to_dict()
    finally:
        dynamodb.meta.events.unregister("before-send.dynamodb", count)
    return len(sent), result


def services_for(
    *, dynamodb: Any, sqs: Any, s3: Any, turns_table: str, conversations_table: str, bucket: str
) -> tuple[Services, HttpApi]:
    """The production services and the run route's API on the given clients (a queue of their own)."""
    queue_url = sqs.create_queue(QueueName=f"sweep-{uuid.uuid4().hex[:10]}")["QueueUrl"]
    env = {
        "TURNS_TABLE": turns_table,
        "CONVERSATIONS_TABLE": conversations_table,
        "RESUME_QUEUE_URL": queue_url,
        "SNAPSHOT_BUCKET": bucket,
        "AGENTTURN_AGENTS": "tests.support.load:agents",
    }
    made = _Container(env, AwsClients(dynamodb=dynamodb, sqs=sqs, s3=s3))
    return made.services, made.run_api
