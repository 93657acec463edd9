"""The Lambda handlers as a benchmark drives them: a fresh import of ``functions/<name>/app.py`` per container,
and the events API Gateway, SQS and EventBridge would send them (the recorded ``tests/events`` payloads,
re-targeted)."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EVENTS = REPO / "tests" / "events"
#: the JWT subject of every benchmark request (the owner of its turns)
SUB = "bench-user-0001"
DATA = {"affectedSystem": "统一登录系统", "impactScope": "ALL_USERS"}
TEXT = "create a high priority login incident ticket"


def load_app(name: str, number: int) -> ModuleType:
    """A fresh import of ``functions/<name>/app.py``: one Lambda container."""
    module_name = f"_bench_{name}_container_{number}"
    spec = importlib.util.spec_from_file_location(module_name, REPO / "functions" / name / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@functools.cache
def _template(name: str) -> str:
    return (EVENTS / name).read_text()


def _recorded(name: str) -> dict[str, Any]:
    """A fresh copy of a recorded event, parsed from its JSON as the Lambda runtime parses each event (read
    from disk once: the file read is the benchmark's, not the handler's)."""
    event: dict[str, Any] = json.loads(_template(name))
    return event


def _event(
    template: str, path: str, parameters: dict[str, str], body: dict[str, Any], key: str | None
) -> dict[str, Any]:
    event = _recorded(template)
    text = json.dumps(body, ensure_ascii=False)
    event["rawPath"] = path
    event["requestContext"]["http"]["path"] = path
    event["requestContext"]["requestId"] = uuid.uuid4().hex[:16]
    event["requestContext"]["timeEpoch"] = int(time.time() * 1000)
    event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = SUB
    event["pathParameters"] = parameters
    event["body"] = text
    event["isBase64Encoded"] = False
    event["headers"]["content-length"] = str(len(text.encode()))
    event["headers"]["x-amzn-trace-id"] = f"Root=1-{uuid.uuid4().hex[:8]}-{uuid.uuid4().hex[:24]}"
    if key is not None:
        event["headers"]["idempotency-key"] = key
    return event


def start_turn_event(conversation: str) -> dict[str, Any]:
    return _event(
        "http_start_turn.json",
        f"/conversations/{conversation}/turns",
        {"conversationId": conversation},
        {"input": TEXT, "agentId": "support-agent"},
        None,
    )


def submit_event(turn_id: str, action_id: str) -> dict[str, Any]:
    return _event(
        "http_submit_form.json",
        f"/turns/{turn_id}/actions/{action_id}/submit",
        {"turnId": turn_id, "actionId": action_id},
        {"data": DATA},
        str(uuid.uuid4()),
    )


def lambda_context(name: str, timeout_ms: int) -> Any:
    from agentturn.local.lambda_context import LocalLambdaContext

    return LocalLambdaContext(function_name=f"agentturn-{name}", timeout_ms=timeout_ms)


@contextmanager
def quiet_stdout() -> Iterator[None]:
    """Powertools' Logger and Metrics print a JSON line per invocation (CloudWatch in Lambda): the work is
    done and measured, the lines go to /dev/null instead of the terminal."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def get_turn_event(turn_id: str) -> dict[str, Any]:
    """``GET /turns/{turnId}``: what a client reads the final answer with."""
    event = _recorded("http_get_turn.json")
    path = f"/turns/{turn_id}"
    event["rawPath"] = path
    event["requestContext"]["http"]["path"] = path
    event["requestContext"]["requestId"] = uuid.uuid4().hex[:16]
    event["requestContext"]["timeEpoch"] = int(time.time() * 1000)
    event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = SUB
    event["pathParameters"] = {"turnId": turn_id}
    return event


def sqs_event(messages: list[dict[str, Any]], queue_url: str) -> dict[str, Any]:
    """The event the worker's SQS event source mapping builds from received messages."""
    records = []
    for message in messages:
        record = _recorded("sqs_resume.json")["Records"][0]
        record["messageId"] = message["MessageId"]
        record["receiptHandle"] = message["ReceiptHandle"]
        record["body"] = message["Body"]
        record["md5OfBody"] = message["MD5OfBody"]
        record["eventSourceARN"] = f"arn:aws:sqs:us-east-1:123456789012:{queue_url.rsplit('/', 1)[-1]}"
        records.append(record)
    return {"Records": records}


def schedule_event() -> dict[str, Any]:
    """The sweeper's EventBridge schedule event."""
    return json.loads((EVENTS / "eventbridge_schedule.json").read_text())
