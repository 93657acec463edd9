"""What one complete form cycle costs in DynamoDB, request by request, on the production path.

A cycle is what a person's support-ticket request costs end to end, through the same entry points the
Lambdas wrap: ``POST /conversations/{id}/turns`` (the run Lambda: the model asks for the form), ``POST
/turns/{id}/actions/{actionId}/submit`` (the submit Lambda: the answer is saved and the turn enqueued on
SQS), the worker Lambda's ``SqsWorker.handle`` on the message received from SQS (the resumed run to
completion), and the client's ``GET /turns/{id}`` that reads the final answer.

:class:`CapacityMeter` is a botocore event hook on the system's DynamoDB client: it counts every request
actually sent (retries included) and asks DynamoDB for ``ReturnConsumedCapacity=INDEXES`` on each, so the
units are DynamoDB Local's own figures (AWS's implementation), per table and per index — no estimate.

    AGENTTURN_CYCLE_COST_TABLE=1 bash scripts/test tests/integration/test_cycle_cost.py -s

prints the request-by-request table of a fresh cycle and of one after 100 earlier cycles.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from agentturn.api.http import HttpApi
from agentturn.api.routes import RUN_LAMBDA_GROUPS, SUBMIT_LAMBDA_GROUPS
from agentturn.api.services import Services
from agentturn.api.telemetry import NullTelemetry
from agentturn.api.wiring import AwsClients, services_from_env
from agentturn.api.worker import SqsWorker
from tests.functional.harness import DEFAULT_SUB, Deployment, FakeLambdaContext, HttpResponse, http_event, sqs_event

#: Operations that accept ``ReturnConsumedCapacity``.
_METERED: Final = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactGetItems",
        "TransactWriteItems",
    }
)
_WRITES: Final = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
#: On-demand list prices (us-east-1), dollars per million: write request units, read request units, SQS
#: requests (standard queue, per 64 KB chunk).
WRITE_UNIT_PRICE: Final = 0.625
READ_UNIT_PRICE: Final = 0.125
SQS_REQUEST_PRICE: Final = 0.40

TICKET_INPUT: Final = "create a high priority login incident ticket"
TICKET_DATA: Final = {"affectedSystem": "统一登录系统", "impactScope": "ALL_USERS"}


@dataclass(frozen=True)
class Script:
    """What the person asks, of which demo agent, and what they fill in when the form comes."""

    agent_id: str
    input: str
    data: dict[str, Any]


#: The benchmark's cycle: a business tool asks for the form (``FormRequired``), then runs with the answer.
SUPPORT_TICKET: Final = Script("support-agent", TICKET_INPUT, TICKET_DATA)
#: The model asks for the form itself (``request_user_input``), then calls a business tool with the answer.
MEETING_ROOM: Final = Script(
    "meeting-agent",
    "book a meeting room",
    {"topic": "Weekly sync", "date": "2026-12-03", "startTime": "10:00", "attendees": 6},
)


@dataclass(frozen=True)
class Charge:
    """Units one request consumed on one table or index (``index`` empty: the table itself)."""

    table: str
    index: str
    read_units: float
    write_units: float


@dataclass
class Request:
    operation: str
    table: str
    index: str
    charges: list[Charge] = field(default_factory=list)

    @property
    def write_units(self) -> float:
        return sum(c.write_units for c in self.charges)

    @property
    def read_units(self) -> float:
        return sum(c.read_units for c in self.charges)


@dataclass
class Tally:
    requests: list[Request] = field(default_factory=list)
    sqs_requests: int = 0

    @property
    def write_units(self) -> float:
        return sum(r.write_units for r in self.requests)

    @property
    def read_units(self) -> float:
        return sum(r.read_units for r in self.requests)

    def dollars_per_million(self) -> float:
        """AWS list price of a million such cycles: DynamoDB capacity and the SQS requests."""
        return (
            self.write_units * WRITE_UNIT_PRICE
            + self.read_units * READ_UNIT_PRICE
            + self.sqs_requests * SQS_REQUEST_PRICE
        )

    def table(self, short: dict[str, str]) -> str:
        """The request-by-request table (Markdown), tables named by ``short``."""
        lines = [
            "| # | operation | table | index | write units | read units | index units |",
            "|---|---|---|---|---:|---:|---|",
        ]
        for number, request in enumerate(self.requests, 1):
            per_index = ", ".join(f"{c.index}={c.write_units or c.read_units:g}" for c in request.charges if c.index)
            lines.append(
                f"| {number} | {request.operation} | {short.get(request.table, request.table)} | {request.index or ''} "
                f"| {request.write_units:g} | {request.read_units:g} | {per_index} |"
            )
        lines.append(
            f"| | **{len(self.requests)} requests** | | | **{self.write_units:g}** | **{self.read_units:g}** | "
            f"SQS requests {self.sqs_requests}, ${self.dollars_per_million():.2f} per million cycles |"
        )
        return "\n".join(lines)


class CapacityMeter:
    """Counts the DynamoDB requests a client sends and the capacity DynamoDB says each consumed."""

    def __init__(self) -> None:
        self.tally = Tally()
        self._pending: list[Request] = []

    def attach_dynamodb(self, client: Any) -> None:
        events = client.meta.events
        events.register("before-parameter-build.dynamodb", self._ask_for_capacity)
        events.register("before-send.dynamodb", self._sent)
        events.register("after-call.dynamodb", self._answered)

    def attach_sqs(self, client: Any) -> None:
        client.meta.events.register("before-send.sqs", self._sqs_sent)

    def reset(self) -> Tally:
        tally, self.tally = self.tally, Tally()
        return tally

    def _ask_for_capacity(self, params: dict[str, Any], model: Any, **kwargs: Any) -> None:
        if model.name in _METERED:
            params["ReturnConsumedCapacity"] = "INDEXES"

    def _sent(self, request: Any, **kwargs: Any) -> None:
        operation = kwargs["event_name"].rsplit(".", 1)[-1]
        params = json.loads(request.body or b"{}")
        self.tally.requests.append(Request(operation, params.get("TableName", ""), params.get("IndexName", "")))

    def _answered(self, http_response: Any, parsed: dict[str, Any], model: Any, **kwargs: Any) -> None:
        consumed = parsed.get("ConsumedCapacity")
        if not self.tally.requests or consumed is None:
            return
        request = self.tally.requests[-1]
        # On-demand tables answer ``CapacityUnits`` (read or write by the operation). DynamoDB bills a
        # transaction's items twice (prepare and commit); DynamoDB Local reports them once.
        writes = model.name in _WRITES
        factor = 2.0 if model.name.startswith("Transact") else 1.0
        for entry in consumed if isinstance(consumed, list) else [consumed]:
            table = str(entry.get("TableName", ""))
            request.table = request.table or table
            parts = [("", entry.get("Table") or {"CapacityUnits": entry.get("CapacityUnits", 0)})]
            for kind in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
                parts += list((entry.get(kind) or {}).items())
            for index, units in parts:
                amount = factor * float(units.get("CapacityUnits", 0))
                request.charges.append(Charge(table, index, 0.0 if writes else amount, amount if writes else 0.0))

    def _sqs_sent(self, request: Any, **kwargs: Any) -> None:
        self.tally.sqs_requests += 1


class ProductionCycle:
    """The production wiring (``services_from_env``) on given clients, and one complete cycle through it."""

    def __init__(
        self, *, dynamodb: Any, sqs: Any, s3: Any, turns_table: str, conversations_table: str, bucket: str
    ) -> None:
        self.sqs = sqs
        self.queue_url = sqs.create_queue(QueueName=f"cycle-{uuid.uuid4().hex[:10]}")["QueueUrl"]
        self.queue_arn = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        env = {
            "TURNS_TABLE": turns_table,
            "CONVERSATIONS_TABLE": conversations_table,
            "RESUME_QUEUE_URL": self.queue_url,
            "SNAPSHOT_BUCKET": bucket,
            # As deployed: the submit seals the snapshot its message carries (agentturn.engine.handoff).
            "AGENTTURN_HANDOFF_KEY": "cycle-cost-handoff-key-" + "0" * 32,
        }
        self.services: Services = services_from_env(env, clients=AwsClients(dynamodb=dynamodb, sqs=sqs, s3=s3))
        self.run_api = HttpApi(RUN_LAMBDA_GROUPS, services=self.services)
        self.submit_api = HttpApi(SUBMIT_LAMBDA_GROUPS, services=self.services)
        self.worker = SqsWorker(self.services, NullTelemetry())
        self.meter = CapacityMeter()
        self.meter.attach_dynamodb(dynamodb)
        self.meter.attach_sqs(sqs)

    @staticmethod
    def _answer(raw: dict[str, Any]) -> HttpResponse:
        headers = {k.lower(): v for k, v in (raw.get("headers") or {}).items()}
        return HttpResponse(raw["statusCode"], headers, raw["body"], raw)

    def __call__(self, conversation_id: str, script: Script = SUPPORT_TICKET) -> dict[str, Any]:
        """One cycle; returns the final turn view the client read."""
        started = self._answer(
            self.run_api.handle(
                http_event(
                    "http_start_turn.json",
                    path=f"/conversations/{conversation_id}/turns",
                    body={"input": script.input, "agentId": script.agent_id},
                    sub=DEFAULT_SUB,
                ),
                None,
            )
        )
        assert started.status == 200, started.body
        turn_id, action_id = started.json["turnId"], started.json["suspension"]["actionId"]
        submitted = self._answer(
            self.submit_api.handle(
                http_event(
                    "http_submit_form.json",
                    path=f"/turns/{turn_id}/actions/{action_id}/submit",
                    body={"data": script.data},
                    sub=DEFAULT_SUB,
                    headers={"idempotency-key": uuid.uuid4().hex},
                ),
                None,
            )
        )
        assert submitted.status == 202, submitted.body
        # The worker Lambda's event source mapping: receive, invoke, delete what succeeded.
        messages = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10)["Messages"]
        result = self.worker.handle(sqs_event(messages, self.queue_arn), FakeLambdaContext())
        assert result["batchItemFailures"] == [], result
        for message in messages:
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        final = self._answer(
            self.run_api.handle(
                http_event("http_start_turn.json", method="GET", path=f"/turns/{turn_id}", body=None), None
            )
        )
        assert final.status == 200, final.body
        view: dict[str, Any] = final.json
        return view


def meter_lambdas(deployment: Deployment, meter: CapacityMeter) -> Callable[[], None]:
    """The meter on the clients the Lambdas use now (each client once); returns the undo."""
    clients: dict[int, tuple[Any, str]] = {}
    for services in (
        deployment.submit_app.api.services,
        deployment.run_app.api.services,
        deployment.worker_app.services.get(),
    ):
        clients[id(services.store.client)] = (services.store.client, "dynamodb")  # type: ignore[attr-defined]
        clients[id(services.queue.client)] = (services.queue.client, "sqs")  # type: ignore[attr-defined]
    hooks = []
    for client, service in clients.values():
        if service == "dynamodb":
            meter.attach_dynamodb(client)
            hooks += [
                (client, "before-parameter-build.dynamodb", meter._ask_for_capacity),
                (client, "before-send.dynamodb", meter._sent),
                (client, "after-call.dynamodb", meter._answered),
            ]
        else:
            meter.attach_sqs(client)
            hooks.append((client, "before-send.sqs", meter._sqs_sent))

    def undo() -> None:
        for client, event, handler in hooks:
            client.meta.events.unregister(event, handler)

    return undo
