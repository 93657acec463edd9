"""The API's own description, and what the handlers tell an operator (metrics, correlated logs)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema
import pytest
from openapi_spec_validator import validate

from agentturn.api.routes import ROUTES
from tests.functional.harness import Deployment, FakeLambdaContext, http_event

pytestmark = pytest.mark.integration

TICKET = "create a high priority login incident ticket"


def test_openapi_json_is_a_valid_openapi_3_document_listing_every_route(deployment: Deployment) -> None:
    # WHEN the document is fetched (behind the JWT authorizer, like every route)
    response = deployment.run(http_event("http_openapi.json"))

    # THEN it is valid OpenAPI 3.1 with every route, its JWT scheme and the Idempotency-Key header
    assert response.status == 200
    assert response.headers["content-type"] == "application/json"
    document = response.json
    validate(document)
    assert document["openapi"].startswith("3.")
    listed = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    assert listed == {(r.method, r.template) for r in ROUTES}
    assert document["components"]["securitySchemes"]["jwt"]["scheme"] == "bearer"
    submit = document["paths"]["/turns/{turnId}/actions/{actionId}/submit"]["post"]
    assert any(p["name"] == "Idempotency-Key" and p["required"] for p in submit["parameters"])
    assert "application/problem+json" in submit["responses"]["422"]["content"]
    turn_view = document["components"]["schemas"]["TurnView"]["properties"]
    assert {"turnId", "status", "phase", "suspension", "pendingToolCalls", "finalOutput", "error", "version"} <= set(
        turn_view
    )
    assert not {"toolStates", "acceptedRequests", "projection"} & set(turn_view)


def test_openapi_says_api_gateways_own_401_and_429_are_not_problem_documents(deployment: Deployment) -> None:
    # WHEN the document is fetched
    document = deployment.run(http_event("http_openapi.json")).json
    gateway = document["components"]["schemas"]["GatewayMessage"]

    # THEN every route behind the JWT authorizer lists the authorizer's 401 with its real body, and every
    # route API Gateway's 429, as application/json with the {"message": ...} shape (examples valid against it)
    for route in ROUTES:
        responses = document["paths"][route.template][route.method.lower()]["responses"]
        throttled = responses["429"]["content"]
        assert set(throttled) == {"application/json"}
        assert throttled["application/json"]["example"] == {"message": "Too Many Requests"}
        jsonschema.validate(throttled["application/json"]["example"], gateway)
        if route.public:
            assert document["paths"][route.template][route.method.lower()]["security"] == []
            assert "401" not in responses
            continue
        refused = responses["401"]["content"]
        assert refused["application/json"]["example"] == {"message": "Unauthorized"}
        assert refused["application/json"]["schema"] == {"$ref": "#/components/schemas/GatewayMessage"}
        jsonschema.validate(refused["application/json"]["example"], gateway)
        # a handler reached without identity still answers a problem, and the document keeps saying so
        assert refused["application/problem+json"]["schema"] == {"$ref": "#/components/schemas/Problem"}
    # ... and a problem body would not pass for the gateway's shape
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"type": "about:blank", "title": "x", "status": 401}, gateway)
    validate(document)


def test_openapi_documents_what_the_routes_answer(deployment: Deployment) -> None:
    # WHEN the document is fetched, and fetched without a verified identity
    document = deployment.run(http_event("http_openapi.json")).json
    anonymous = deployment.run(http_event("http_openapi.json", sub=None))

    # THEN the document's own route is documented as it is deployed: behind the JWT authorizer (no `security: []`),
    # its body a JSON object, and without a token it is refused like every route
    own = document["paths"]["/openapi.json"]["get"]
    assert "security" not in own and document["security"] == [{"jwt": []}]
    assert own["responses"]["200"]["content"]["application/json"]["schema"] == {"type": "object"}
    assert anonymous.status == 401
    # AND a 422 for a query parameter, whose field problem says where the field is (`in`), is a documented problem
    refused = deployment.run(
        http_event("http_list_messages.json", method="GET", path="/conversations", query={"limit": "0"})
    )
    assert refused.status == 422
    assert refused.json["errors"] == [
        {"path": "/limit", "in": "query", "message": "Input should be greater than or equal to 1"}
    ]
    problem = {"$ref": "#/components/schemas/Problem", "components": document["components"]}
    jsonschema.Draft202012Validator(problem).validate(refused.json)
    # AND every operation documents its 400 (a path no route can mean) and answers 422 only as a problem
    for route in ROUTES:
        responses = document["paths"][route.template][route.method.lower()]["responses"]
        assert set(responses["400"]["content"]) == {"application/problem+json"}, route
        if "422" in responses:
            assert set(responses["422"]["content"]) == {"application/problem+json"}, route
    assert "HTTPValidationError" not in document["components"]["schemas"]


def _emf(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]


@pytest.fixture
def logs() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The structured log lines the handlers write (Powertools' handler holds the stdout of its import time,
    so its stream is swapped for a buffer here rather than captured)."""
    buffer = io.StringIO()
    handlers = [h for h in logging.getLogger("agentturn").handlers if isinstance(h, logging.StreamHandler)]
    assert handlers, "the Powertools logger has no stream handler"
    previous = [h.setStream(buffer) for h in handlers]
    yield lambda: [json.loads(line) for line in buffer.getvalue().splitlines() if line.startswith("{")]
    for handler, stream in zip(handlers, previous, strict=True):
        if stream is not None:
            handler.setStream(stream)


def test_handlers_publish_turn_metrics_and_correlated_logs(
    deployment: Deployment, capsys: pytest.CaptureFixture[str], logs: Callable[[], list[dict[str, Any]]]
) -> None:
    # GIVEN a full form cycle through the three Lambdas
    started = deployment.run(http_event("http_start_turn.json", body={"input": TICKET}))
    turn_id, action = started.json["turnId"], started.json["suspension"]["actionId"]
    deployment.submit(
        http_event(
            "http_submit_form.json",
            path=f"/turns/{turn_id}/actions/{action}/submit",
            body={"data": {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}},
        )
    )
    deployment.drain()
    output = capsys.readouterr().out  # EMF blobs are printed

    # THEN each invocation flushed EMF metrics: started, suspended, submitted, resumed (with latency), completed
    metrics: dict[str, list[float]] = {}
    for blob in _emf(output):
        assert blob["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "agentturn-tests"
        for definition in blob["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
            metrics.setdefault(definition["Name"], []).extend(blob[definition["Name"]])
    assert metrics["TurnsStarted"] == [1.0]
    assert metrics["TurnsSuspended"] == [1.0]
    assert metrics["TurnsSubmitted"] == [1.0]
    assert metrics["TurnsResumed"] == [1.0]
    assert metrics["TurnsCompleted"] == [1.0]
    assert len(metrics["ResumeLatency"]) == 1
    assert 0 <= metrics["ResumeLatency"][0] < 60_000

    # AND the worker's log lines carry the turn and conversation they are about
    worker_lines = [line for line in logs() if line["message"].startswith(f"turn {turn_id!r}")]
    assert worker_lines
    assert all(line["turnId"] == turn_id and line["conversationId"] == "support-1" for line in worker_lines)


def test_http_logs_carry_the_api_gateway_request_id(
    deployment: Deployment, logs: Callable[[], list[dict[str, Any]]]
) -> None:
    # GIVEN a turn handed to the worker (which logs a line in the run Lambda)
    deployment.run(http_event("http_start_turn.json", body={"input": TICKET}), FakeLambdaContext(budget_ms=10))
    lines = [line for line in logs() if "handed to the worker" in line["message"]]

    # THEN the line is correlated with the API Gateway request and names the turn and conversation
    assert len(lines) == 1
    assert lines[0]["correlation_id"] == "CFe6ZgJ3IAMEbZw="
    assert lines[0]["conversationId"] == "support-1"
    assert lines[0]["turnId"]
    assert lines[0]["userId"] == "8f5e1c2a-7d3b-4a6e-9c1f-2b7d4e6a8c10"
