"""The events ``agentturn dev`` hands the Lambdas have AWS's shapes."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from agentturn.local.events import HttpRequest, http_api_event, http_response, scheduled_event, sqs_event
from agentturn.local.gateway import static_file

EVENTS = Path(__file__).resolve().parents[1] / "events"


def _event(**overrides: object) -> dict[str, object]:
    request = HttpRequest(
        method="POST",
        raw_path="/turns/t-1/actions/call%2F1/submit",
        raw_query="a=1&a=2&b=x%20y",
        headers=[
            ("Content-Type", "application/json"),
            ("X-Thing", "one"),
            ("x-thing", "two"),
            ("Cookie", "s=1; t=2"),
            ("Idempotency-Key", "k-1"),
        ],
        body='{"data": {"a": "统一"}}'.encode(),
    )
    return http_api_event(
        request,
        route_key="POST /turns/{turnId}/actions/{actionId}/submit",
        path_parameters={"turnId": "t-1", "actionId": "call%2F1"},
        claims={"sub": "alice"},
        host="127.0.0.1:8787",
        now=1_796_113_800.0,
        **overrides,  # type: ignore[arg-type]
    )


def test_http_event_has_the_payload_2_0_shape_of_a_recorded_one() -> None:
    recorded = json.loads((EVENTS / "http_submit_form.json").read_text())
    event = _event()
    assert set(recorded) - {"cookies", "queryStringParameters"} <= set(event)
    assert set(recorded["requestContext"]) <= set(event["requestContext"])  # type: ignore[arg-type]
    assert event["version"] == "2.0"
    assert event["routeKey"] == event["requestContext"]["routeKey"]  # type: ignore[index]
    assert event["requestContext"]["http"]["method"] == "POST"  # type: ignore[index]
    assert event["requestContext"]["authorizer"] == {"jwt": {"claims": {"sub": "alice"}, "scopes": None}}  # type: ignore[index]


def test_http_event_headers_query_cookies_and_path_like_api_gateway() -> None:
    event = _event()
    headers = event["headers"]
    assert isinstance(headers, dict)
    assert all(name == name.lower() for name in headers)
    assert headers["x-thing"] == "one,two"
    assert "cookie" not in headers
    assert event["cookies"] == ["s=1", "t=2"]
    assert event["rawPath"] == "/turns/t-1/actions/call%2F1/submit"  # still encoded, as API Gateway sends it
    assert event["rawQueryString"] == "a=1&a=2&b=x%20y"
    assert event["queryStringParameters"] == {"a": "1,2", "b": "x y"}
    assert event["pathParameters"] == {"turnId": "t-1", "actionId": "call%2F1"}
    assert event["body"] == '{"data": {"a": "统一"}}'
    assert event["isBase64Encoded"] is False


def test_binary_bodies_arrive_base64_encoded() -> None:
    request = HttpRequest("POST", "/x", "", [("Content-Type", "application/octet-stream")], b"\xff\x00")
    event = http_api_event(request, route_key="$default", path_parameters={}, claims=None, host="127.0.0.1:1")
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(str(event["body"])) == b"\xff\x00"
    assert "authorizer" not in event["requestContext"]  # type: ignore[operator]
    assert "pathParameters" not in event


def test_http_response_decodes_lambda_answers() -> None:
    answer = http_response(
        {"statusCode": 202, "headers": {"Content-Type": "application/json"}, "body": "{}", "cookies": ["a=b"]}
    )
    assert (answer.status, answer.body) == (202, b"{}")
    assert ("Set-Cookie", "a=b") in answer.headers
    binary = http_response({"statusCode": 200, "body": base64.b64encode(b"\x01").decode(), "isBase64Encoded": True})
    assert binary.body == b"\x01"
    inferred = http_response({"hello": "world"})  # the "inferred" format: a bare JSON value
    assert (inferred.status, json.loads(inferred.body)) == (200, {"hello": "world"})


def test_sqs_event_has_the_event_source_mapping_shape() -> None:
    recorded = json.loads((EVENTS / "sqs_resume.json").read_text())["Records"][0]
    message = {
        "MessageId": "m-1",
        "ReceiptHandle": "r-1",
        "Body": '{"turnId":"t","version":1}',
        "MD5OfBody": "abc",
        "Attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1", "SenderId": "x", "Policy": "ignored"},
        "MessageAttributes": {"kind": {"StringValue": "resume", "DataType": "String"}},
    }
    record = sqs_event([message], "arn:aws:sqs:eu-west-1:123456789012:q")["Records"][0]
    assert set(recorded) == set(record)
    assert record["eventSource"] == "aws:sqs"
    assert record["awsRegion"] == "eu-west-1"
    assert record["attributes"] == {"ApproximateReceiveCount": "1", "SentTimestamp": "1", "SenderId": "x"}
    assert record["messageAttributes"]["kind"]["stringValue"] == "resume"
    assert record["messageAttributes"]["kind"]["dataType"] == "String"


def test_schedule_event_has_eventbridge_shape() -> None:
    recorded = json.loads((EVENTS / "eventbridge_schedule.json").read_text())
    event = scheduled_event("agentturn-dev-sweeper")
    assert set(event) == set(recorded)
    assert event["detail-type"] == "Scheduled Event"


def test_static_files_stay_inside_the_console_folder(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<!doctype html>")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "forms.jsx").write_text("")
    (tmp_path / "app.js").write_text("")
    (tmp_path / "secret.py").write_text("")
    assert static_file(tmp_path, "/") == (tmp_path / "index.html").resolve()
    assert static_file(tmp_path, "/app.js") == (tmp_path / "app.js").resolve()
    for refused in ("/../etc/passwd", "/%2e%2e/x.js", "/src/forms.jsx", "/secret.py", "/.hidden.js", "/missing.js"):
        assert static_file(tmp_path, refused) is None, refused


def test_persisted_items_keep_binary_attributes() -> None:
    from agentturn.local.persist import _decode, _encode

    item = {
        "pk": {"S": "t-1"},
        "body": {"B": b"\x1f\x8b\x00"},
        "set": {"BS": [b"a", b"\xff"]},
        "m": {"M": {"x": {"B": b"1"}}},
    }
    encoded = json.loads(json.dumps(_encode(item)))
    assert _decode(encoded) == item
