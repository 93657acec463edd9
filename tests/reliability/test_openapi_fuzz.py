"""Schemathesis against the API's own OpenAPI document (``GET /openapi.json``): every operation, cases generated
from the spec (valid and, with ``negative`` mode, invalid), through the HTTP entry point the Lambdas wrap.

The promise: never a 5xx; every refusal is ``application/problem+json``; a refused request changes nothing.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from agentturn.api.http import HttpApi
from agentturn.api.routes import ALL_GROUPS
from tests.functional.harness import http_event
from tests.reliability.figures import record
from tests.reliability.kit import Stack, memory_stack, quiet_logs, response

_STACK: Stack = memory_stack()
_API = HttpApi(ALL_GROUPS, services=_STACK.services)
_WAITING = _STACK.start_ticket("openapi-fuzz")
_DOCUMENT = json.loads(_STACK.run(http_event("http_openapi.json", sub=None)).body)

schema = schemathesis.openapi.from_dict(_DOCUMENT)
schema.config.generation.update(modes=list(schemathesis.GenerationMode), deterministic=True)


def _snapshot() -> str:
    return _STACK.stored(_WAITING["turnId"])


@schema.parametrize()
@settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_operation_fails_the_server(case: Any) -> None:
    # GIVEN a generated request for one operation (sometimes naming the caller's real waiting turn)
    path = case.formatted_path.replace("{turnId}", _WAITING["turnId"])
    headers = {str(k).lower(): str(v) for k, v in (case.headers or {}).items()}
    body = case.body
    overrides: dict[str, Any] = {"method": case.method.upper(), "path": path, "headers": headers}
    if case.query:
        overrides["query"] = {str(k): str(v) for k, v in case.query.items()}
    raw: bytes | None = None
    if isinstance(body, bytes):
        raw, overrides["raw_body"] = body, ""
    elif body is not None and not isinstance(body, schemathesis.core.NotSet):
        overrides["raw_body"] = body if isinstance(body, str) else json.dumps(body)
    event = http_event("http_get_turn.json", **overrides)
    if raw is not None:  # bytes travel base64-encoded, as API Gateway sends a binary body
        event.update(body=base64.b64encode(raw).decode(), isBase64Encoded=True)
        event["headers"]["content-length"] = str(len(raw))
    before = _snapshot()
    # WHEN it reaches the entry point
    answer = response(_API.handle(event, None))
    # THEN the server never fails, and a refusal is a problem document that changed nothing
    assert answer.status < 500, (case.method, path, answer.body)
    if answer.status >= 400:
        assert answer.headers["content-type"].startswith("application/problem+json"), answer.headers
        assert _snapshot() == before
    elif _snapshot() != before:
        # An accepted answer to the waiting form: start a new waiting turn for the next cases.
        globals()["_WAITING"] = _STACK.start_ticket(f"openapi-fuzz-{len(_STACK.queue.drain())}-{path[-6:]}")
    record("schemathesis", cases=1, refused_4xx=int(answer.status >= 400), server_errors=0)


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    # The level used to stay at CRITICAL after this module: the telemetry tests that read the handlers' log
    # lines then failed whenever they ran after it.
    with quiet_logs():
        yield
