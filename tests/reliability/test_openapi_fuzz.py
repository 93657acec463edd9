"""Schemathesis against the API's own OpenAPI document (``GET /openapi.json``): every operation, cases generated
from the spec (valid and, with ``negative`` mode, invalid).

Twice: in process, through the HTTP entry point the Lambdas wrap (the promise: never a 5xx; every refusal is
``application/problem+json``; a refused request changes nothing); and over HTTP against ``agentturn dev`` with
Schemathesis' own runner and its contract checks (the API keeps its own document: statuses, content types and
bodies as documented, the local gateway included).
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from agentturn.api.http import HttpApi
from agentturn.api.routes import ALL_GROUPS, ROUTES
from tests.e2e.conftest import DevProcess, free_port
from tests.functional.harness import http_event
from tests.reliability.figures import record
from tests.reliability.kit import Stack, memory_stack, quiet_logs, response

_STACK: Stack = memory_stack()
_API = HttpApi(ALL_GROUPS, services=_STACK.services)
_WAITING = _STACK.start_ticket("openapi-fuzz")
_DOCUMENT = json.loads(_STACK.run(http_event("http_openapi.json")).body)

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


#: The checks of the API's contract with its own document (Schemathesis' names).
CONTRACT_CHECKS: Final = (
    "not_a_server_error",
    "status_code_conformance",
    "response_schema_conformance",
    "content_type_conformance",
)
#: Examples per operation in the fuzzing and stateful phases (the coverage phase's cases are fixed by the document):
#: about 400 cases, ~30 s on an idle two-core machine, ~55 s with four other test runs on it.
CONTRACT_EXAMPLES: Final = 4
#: The target is a minute; the bound asserted leaves room for a machine shared with other runs.
CONTRACT_TARGET_S: Final = 60.0


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    server = DevProcess(free_port(), tmp_path_factory.mktemp("openapi") / "dev-server.log", args=["--quiet"]).start()
    yield server
    assert server.stop() == 0, server.log()


def test_agentturn_dev_keeps_its_own_openapi_contract_over_http(dev_server: DevProcess, tmp_path: Path) -> None:
    # GIVEN agentturn dev serving its OpenAPI document over HTTP
    # WHEN Schemathesis tests every operation from it (its coverage, fuzzing and stateful phases, valid and invalid
    # data, deterministic) with the contract checks, as a person would run it
    # (Read from a file with --url: Schemathesis leaves out the operation that serves the schema it loads by URL.)
    started = time.monotonic()
    status, document = dev_server.request("GET", "/openapi.json")
    assert status == 200
    schema = tmp_path / "openapi.json"
    schema.write_text(json.dumps(document))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "schemathesis.cli",
            "run",
            str(schema),
            "--url",
            dev_server.url,
            "--checks",
            ",".join(CONTRACT_CHECKS),
            "--max-examples",
            str(CONTRACT_EXAMPLES),
            "--generation-deterministic",
            "--mode",
            "all",
            "--no-color",
            "--report-ndjson-path",
            str(tmp_path / "events.ndjson"),
        ],
        cwd=tmp_path,  # its cache folder (.schemathesis) lands there, not in the checkout
        capture_output=True,
        text=True,
        timeout=CONTRACT_TARGET_S * 4,
        check=False,
    )
    elapsed = time.monotonic() - started

    # THEN no check fails on any operation (every route tested), in about a minute at most
    assert run.returncode == 0, run.stdout[-20_000:] + run.stderr[-5_000:]
    summary = run.stdout[run.stdout.rfind("SUMMARY") :]
    operations = len(ROUTES)
    assert f"Selected: {operations}/{operations}" in summary and f"Tested: {operations}" in summary, summary
    assert elapsed < 2 * CONTRACT_TARGET_S, f"{elapsed:.1f} s"
    counted = re.search(r"(\d+) generated, (\d+) passed", summary)
    assert counted is not None and counted[1] == counted[2], summary
    record("schemathesis_http", cases=int(counted[1]), failures=0, seconds=f"{elapsed:.1f}")
