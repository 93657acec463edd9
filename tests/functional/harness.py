"""What the functional tests use to play API Gateway, Lambda and the SQS event source mapping.

* :func:`http_event` turns a recorded HTTP API (payload 2.0) event from ``tests/events/`` into the event
  API Gateway would send for another path, body, caller or header set — every field that names them
  (``rawPath``, ``requestContext.http.path``, ``routeKey``, ``pathParameters``, ``content-length``) is kept
  consistent.
* :class:`FakeLambdaContext` has the attributes Powertools reads and a remaining-time clock.
* :class:`Deployment` is one isolated deployment on moto's server: fresh tables, queue (with its DLQ)
  and bucket, the environment the Lambdas read, and the four handlers wired to it.
"""

from __future__ import annotations

import base64
import copy
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import EndpointConnectionError

from agentturn.api.routes import ROUTES, RouteSpec
from agentturn.aws.tables import TableNames, create_tables
from agentturn.engine.clock import Clock
from tests.support.emulators import Emulator, boto3_session_kwargs

EVENTS = Path(__file__).resolve().parents[1] / "events"
DEFAULT_SUB = "8f5e1c2a-7d3b-4a6e-9c1f-2b7d4e6a8c10"  # the subject in the recorded events
_UNSET: Any = object()


def load_event(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return event


def _route_for(method: str, path: str) -> tuple[RouteSpec | None, dict[str, str]]:
    for route in ROUTES:
        matched = route.regex.match(path)
        if matched and route.method == method:
            return route, matched.groupdict()
    return None, {}


def sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """The Lambda SQS event for messages received from ``queue_arn``, shaped like ``tests/events/sqs_resume.json``."""
    template = load_event("sqs_resume.json")["Records"][0]
    records = []
    for message in messages:
        record = copy.deepcopy(template)
        record.update(
            messageId=message["MessageId"],
            receiptHandle=message["ReceiptHandle"],
            body=message["Body"],
            md5OfBody=message["MD5OfBody"],
            eventSourceARN=queue_arn,
        )
        record["attributes"] = {k: str(v) for k, v in message.get("Attributes", {}).items()}
        records.append(record)
    return {"Records": records}


def http_event(
    template: str,
    *,
    method: str | None = None,
    path: str | None = None,
    body: Any = _UNSET,
    raw_body: str | None = None,
    sub: str | None = DEFAULT_SUB,
    headers: dict[str, str | None] | None = None,
    query: dict[str, str] | None = None,
    base64_body: bool = False,
) -> dict[str, Any]:
    """A recorded event re-targeted. ``body`` is JSON-encoded; ``raw_body`` is sent as is; ``sub=None``
    removes the authorizer (as for a route without one); a header set to ``None`` is removed."""
    event = copy.deepcopy(load_event(template))
    http = event["requestContext"]["http"]
    method = method or http["method"]
    path = path or event["rawPath"]
    http["method"] = method
    http["path"] = path
    event["rawPath"] = path
    route, parameters = _route_for(method, path)
    route_key = route.route_key if route is not None else "$default"
    event["routeKey"] = event["requestContext"]["routeKey"] = route_key
    if parameters:
        event["pathParameters"] = parameters
    else:
        event.pop("pathParameters", None)
    if sub is None:
        event["requestContext"].pop("authorizer", None)
        event["headers"].pop("authorization", None)
    else:
        event["requestContext"].setdefault("authorizer", {"jwt": {"claims": {}, "scopes": None}})
        event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = sub
    text: str | None = _UNSET
    if raw_body is not None:
        text = raw_body
    elif body is not _UNSET:
        text = None if body is None else json.dumps(body, ensure_ascii=False)
    if text is not _UNSET:
        if text is None:
            event.pop("body", None)
            event["headers"].pop("content-length", None)
            event["isBase64Encoded"] = False
        else:
            event["headers"].setdefault("content-type", "application/json")
            event["headers"]["content-length"] = str(len(text.encode("utf-8", "surrogatepass")))
            event["body"] = base64.b64encode(text.encode()).decode() if base64_body else text
            event["isBase64Encoded"] = base64_body
    if query is not None:
        event["queryStringParameters"] = query
        event["rawQueryString"] = "&".join(f"{k}={v}" for k, v in query.items())
    for name, value in (headers or {}).items():
        if value is None:
            event["headers"].pop(name.lower(), None)
        else:
            event["headers"][name.lower()] = value
    return event


@dataclass
class FakeLambdaContext:
    """What Powertools and the handlers read from a Lambda context; time left counts down for real."""

    budget_ms: int = 30_000
    function_name: str = "agentturn-test"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/agentturn-test"
    log_stream_name: str = "2026/12/01/[$LATEST]0123456789abcdef"
    _started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self.budget_ms - int((time.monotonic() - self._started) * 1000))


@dataclass
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: str
    raw: dict[str, Any]

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class RequestLog:
    """Every AWS request the wired clients send, as ``"Service.Operation"`` (a botocore event hook)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.enabled = False

    def attach(self, client: Any) -> None:
        client.meta.events.register("before-send", self._record)

    def _record(self, request: Any, **kwargs: Any) -> None:
        if self.enabled:
            _, service, operation = kwargs["event_name"].split(".", 2)
            self.calls.append(f"{service}.{operation}")

    def during(self, action: Callable[[], Any]) -> list[str]:
        self.calls, self.enabled = [], True
        try:
            action()
        finally:
            self.enabled = False
        return list(self.calls)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


class Deployment:
    """Tables, queue (+DLQ), bucket on moto; the Lambdas' environment; the handlers wired to them."""

    def __init__(
        self,
        emulator: Emulator,
        monkeypatch: Any,
        *,
        max_receive_count: int = 3,
        fifo: bool = False,
        clock: Clock | None = None,
    ) -> None:
        self.emulator = emulator
        self.monkeypatch = monkeypatch
        #: The handlers' time (their store's and runners'): the system's, or one a test moves (``FakeClock``)
        self.clock = clock
        kwargs = boto3_session_kwargs()
        self.dynamodb = boto3.client("dynamodb", endpoint_url=emulator.endpoint_url, **kwargs)
        self.sqs = boto3.client("sqs", endpoint_url=emulator.endpoint_url, **kwargs)
        self.s3 = boto3.client("s3", endpoint_url=emulator.endpoint_url, **kwargs)
        stem = unique("at")
        self.names = TableNames(
            turns_table=f"{stem}-turns",
            conversations_table=f"{stem}-conversations",
            idempotency_table=f"{stem}-idempotency",
            snapshot_bucket=f"{stem}-snapshots",
        )
        create_tables(self.dynamodb, self.names)
        self.s3.create_bucket(Bucket=self.names.snapshot_bucket or "")
        suffix = ".fifo" if fifo else ""
        fifo_attributes: dict[Any, str] = {"FifoQueue": "true"} if fifo else {}
        self.dlq_url = self.sqs.create_queue(QueueName=f"{stem}-dlq{suffix}", Attributes=fifo_attributes)["QueueUrl"]
        dlq_arn = self.sqs.get_queue_attributes(QueueUrl=self.dlq_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        self.queue_url = self.sqs.create_queue(
            QueueName=f"{stem}-resume{suffix}",
            Attributes={
                **fifo_attributes,
                "VisibilityTimeout": "30",
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receive_count)}
                ),
            },
        )["QueueUrl"]
        self.queue_arn = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        names = self.names.model_copy(update={"resume_queue_url": self.queue_url})
        monkeypatch.setenv("AWS_ENDPOINT_URL", emulator.endpoint_url)
        for key, value in names.to_env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("AGENTTURN_SWEEP_IDLE_SECONDS", "0")
        # As deployed: the submit seals the snapshot its message carries (agentturn.engine.handoff).
        monkeypatch.setenv("AGENTTURN_HANDOFF_KEY", "test-handoff-key-" + "0" * 32)
        monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "agentturn-tests")
        self.requests = RequestLog()
        self._import_handlers()

    def move_tables_to(self, emulator: Emulator) -> None:
        """The tables on ``emulator`` from now on (DynamoDB Local: AWS's own implementation, whose consumed
        capacity is DynamoDB's, where moto's is not), the queue and bucket where they are; the handlers are imported
        again (a cold start) so that their clients see it."""
        self.dynamodb = boto3.client("dynamodb", endpoint_url=emulator.endpoint_url, **boto3_session_kwargs())
        create_tables(self.dynamodb, self.names)
        self.monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", emulator.endpoint_url)
        self._import_handlers()

    def _import_handlers(self) -> None:
        import functions.run.app as run_app
        import functions.submit.app as submit_app
        import functions.sweeper.app as sweeper_app
        import functions.worker.app as worker_app

        # Each test is a fresh deployment: the handlers build their services from this environment on
        # their first invocation, exactly as a cold Lambda does.
        run_app.api.use(None)
        submit_app.api.use(None)
        worker_app.services.use(None)
        sweeper_app.services.use(None)
        if self.clock is not None:
            # Still built from this environment on first use, only with the injected clock; the module-level
            # services are swapped back when the test ends (monkeypatch), so no later deployment inherits it.
            from agentturn.api.lambdas import LazyServices
            from agentturn.api.services import Services
            from agentturn.api.wiring import services_from_env

            clock = self.clock

            def factory() -> Services:
                return services_from_env(clock=clock)

            run_app.api.use(factory)
            submit_app.api.use(factory)
            self.monkeypatch.setattr(worker_app, "services", LazyServices(factory))
            self.monkeypatch.setattr(sweeper_app, "services", LazyServices(factory))
        self.run_app, self.submit_app, self.worker_app, self.sweeper_app = run_app, submit_app, worker_app, sweeper_app

    # ------------------------------------------------------------------ invoking the Lambdas

    def _http(self, module: Any, event: dict[str, Any], context: FakeLambdaContext | None) -> HttpResponse:
        raw = module.handler(event, context or FakeLambdaContext())
        assert isinstance(raw.get("body"), str), raw
        headers = {k.lower(): v for k, v in (raw.get("headers") or {}).items()}
        return HttpResponse(raw["statusCode"], headers, raw["body"], raw)

    def run(self, event: dict[str, Any], context: FakeLambdaContext | None = None) -> HttpResponse:
        return self._http(self.run_app, event, context)

    def submit(self, event: dict[str, Any], context: FakeLambdaContext | None = None) -> HttpResponse:
        return self._http(self.submit_app, event, context)

    def worker(self, event: dict[str, Any], context: FakeLambdaContext | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.worker_app.handler(event, context or FakeLambdaContext())
        return result

    def sweeper(self, context: FakeLambdaContext | None = None) -> dict[str, int]:
        result: dict[str, int] = self.sweeper_app.handler(
            load_event("eventbridge_schedule.json"), context or FakeLambdaContext()
        )
        return result

    def count_requests(self) -> RequestLog:
        """Hook the request log onto the clients the submit/run/worker Lambdas built (builds them if needed)."""
        for services in (self.submit_app.api.services, self.run_app.api.services, self.worker_app.services.get()):
            self.requests.attach(services.store.client)  # type: ignore[attr-defined]
            self.requests.attach(services.queue.client)  # type: ignore[attr-defined]
        return self.requests

    def break_queue_sends(self, services: Any) -> Callable[[], None]:
        """Make the given services' SQS sends fail as a lost connection would; returns the undo."""

        def refuse(**kwargs: Any) -> None:
            raise EndpointConnectionError(endpoint_url=self.emulator.endpoint_url)

        events = services.queue.client.meta.events
        events.register("before-call.sqs.SendMessage", refuse)
        return lambda: events.unregister("before-call.sqs.SendMessage", refuse)

    # ------------------------------------------------------------------ the event source mapping

    def receive(self, *, max_messages: int = 10, wait: float = 0.0) -> list[dict[str, Any]]:
        response = self.sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=max_messages,
            WaitTimeSeconds=int(wait),
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        return [dict(m) for m in response.get("Messages", [])]

    def sqs_event(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return sqs_event(messages, self.queue_arn)

    def deliver(self, messages: list[dict[str, Any]], context: FakeLambdaContext | None = None) -> dict[str, Any]:
        """What the event source mapping does: invoke the worker, delete what succeeded, leave failures."""
        result = self.worker(self.sqs_event(messages), context)
        failed = {f["itemIdentifier"] for f in result["batchItemFailures"]}
        for message in messages:
            if message["MessageId"] not in failed:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return result

    def expire_visibility(self, messages: list[dict[str, Any]]) -> None:
        """Let received messages be delivered again now (as when their visibility timeout lapses)."""
        for message in messages:
            self.sqs.change_message_visibility(
                QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )

    def drain(self, *, rounds: int = 10) -> int:
        """Deliver until the queue is empty (the worker may enqueue follow-ups); returns records delivered."""
        delivered = 0
        for _ in range(rounds):
            messages = self.receive()
            if not messages:
                return delivered
            delivered += len(messages)
            self.deliver(messages)
        raise AssertionError("the queue did not drain")

    def queue_depth(self, url: str | None = None) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=url or self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])

    # ------------------------------------------------------------------ what is stored

    def dump(self) -> dict[str, Any]:
        """Everything the deployment stores: both tables item by item, the S3 objects, the queue depth."""
        tables = {}
        for table in (self.names.turns_table, self.names.conversations_table):
            items: list[Any] = []
            for page in self.dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
                items.extend(page["Items"])
            tables[table] = sorted(json.dumps(i, sort_keys=True, default=str) for i in items)
        listed = self.s3.list_objects_v2(Bucket=self.names.snapshot_bucket or "")
        objects = sorted((o["Key"], o["ETag"]) for o in listed.get("Contents", []))
        return {"tables": tables, "objects": objects, "queued": self.queue_depth()}
