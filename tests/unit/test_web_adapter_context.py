"""What the streamed AG-UI entry reads from the Lambda Web Adapter's ``x-amzn-lambda-context`` header: the
invocation's deadline, which tells a run when to hand its turn to the worker queue."""

from __future__ import annotations

import json

import pytest

from agentturn.api.web_adapter import InvocationContext, http_api_event, invocation_context, verifier_from_env


def test_the_deadline_gives_the_remaining_time() -> None:
    # GIVEN LWA's header with the invocation's deadline (epoch milliseconds)
    context = invocation_context({"x-amzn-lambda-context": json.dumps({"request_id": "r1", "deadline": 1_000_000})})
    assert context is not None
    # WHEN the clock is 4.5 s before it THEN 4500 ms remain; after it, none
    assert context.aws_request_id == "r1"
    assert InvocationContext(context.deadline_ms, "r1", clock=lambda: 995.5).get_remaining_time_in_millis() == 4500
    assert InvocationContext(context.deadline_ms, "r1", clock=lambda: 2000.0).get_remaining_time_in_millis() == 0


@pytest.mark.parametrize("header", [None, "", "not json", "[]", '{"deadline": "soon"}', '{"deadline": true}'])
def test_without_a_usable_deadline_there_is_no_context(header: str | None) -> None:
    headers = {} if header is None else {"x-amzn-lambda-context": header}
    assert invocation_context(headers) is None


def test_the_event_carries_the_verified_claims_and_not_lwas_headers() -> None:
    event = http_api_event(
        "POST",
        "/ag-ui/support-agent?x=1",
        [("Content-Type", "application/json"), ("x-amzn-lambda-context", "{}"), ("X-Amzn-Request-Context", "{}")],
        b'{"threadId": "t"}',
        {"sub": "alice"},
        "192.0.2.1",
    )
    assert event["routeKey"] == "POST /ag-ui/{agentId}"
    assert event["pathParameters"] == {"agentId": "support-agent"}
    assert event["requestContext"]["authorizer"]["jwt"]["claims"] == {"sub": "alice"}
    assert event["body"] == '{"threadId": "t"}'
    assert event["isBase64Encoded"] is False
    assert set(event["headers"]) == {"content-type"}
    assert event["queryStringParameters"] == {"x": "1"}


def test_the_verifier_takes_the_constructs_issuer_and_audience() -> None:
    verifier = verifier_from_env(
        {"AGENTTURN_JWT_ISSUER": "cognito-idp.eu-west-1.amazonaws.com/pool", "AGENTTURN_JWT_AUDIENCE": "a, b"}
    )
    assert verifier.issuer == "https://cognito-idp.eu-west-1.amazonaws.com/pool"
    assert tuple(verifier.audience) == ("a", "b")
    with pytest.raises(RuntimeError, match="AGENTTURN_JWT_ISSUER"):
        verifier_from_env({"AGENTTURN_JWT_ISSUER": "https://issuer.example.com"})
