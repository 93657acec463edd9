"""The events AWS would hand the Lambdas, built from local happenings: an HTTP request (API Gateway HTTP
API, payload format 2.0, after its JWT authorizer), a batch of SQS messages (the event source mapping)
and a schedule tick (EventBridge). Pure functions, so their shape is tested on its own.

Shapes follow AWS's documentation and the recorded events in ``tests/events/``.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qsl

REGION: Final = "us-east-1"
#: moto's default account: ARNs the emulator makes and ARNs in the events agree.
ACCOUNT_ID: Final = "123456789012"
API_ID: Final = "local"

#: Content types API Gateway passes as text; anything else arrives base64-encoded.
_TEXT_TYPES: Final = ("text/", "application/json", "application/xml", "application/javascript")
_TEXT_SUFFIXES: Final = ("+json", "+xml")
#: The system attributes the SQS event source mapping puts on a record.
_RECORD_ATTRIBUTES: Final = (
    "ApproximateReceiveCount",
    "SentTimestamp",
    "SenderId",
    "ApproximateFirstReceiveTimestamp",
    "AWSTraceHeader",
    "MessageGroupId",
    "MessageDeduplicationId",
    "SequenceNumber",
)


def _is_text(content_type: str | None) -> bool:
    if not content_type:
        return True  # API Gateway treats a body without a type as text
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind.startswith(_TEXT_TYPES) or kind.endswith(_TEXT_SUFFIXES) or kind == "application/x-www-form-urlencoded"


def _request_time(epoch: float) -> str:
    return time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(epoch))


@dataclass(frozen=True)
class HttpRequest:
    """An HTTP request as the gateway received it (path and query still percent-encoded)."""

    method: str
    raw_path: str
    raw_query: str
    headers: Sequence[tuple[str, str]]
    body: bytes
    source_ip: str = "127.0.0.1"


def dev_claims(subject: str, issuer: str, now: float, *, groups: Sequence[str] = ()) -> dict[str, str]:
    """The claims API Gateway's JWT authorizer would pass on for a verified token of ``subject``.

    API Gateway hands claims over as strings, numbers included, and an array claim such as Cognito's
    ``cognito:groups`` as one string ``"[finance oncall]"`` (present only when the user has groups, as Cognito
    leaves the claim out for a user in none).
    """
    issued = int(now)
    claims = {
        "sub": subject,
        "iss": issuer,
        "username": subject,
        "token_use": "access",
        "scope": "agentturn/dev",
        "iat": str(issued),
        "auth_time": str(issued),
        "exp": str(issued + 3600),
        "jti": str(uuid.uuid4()),
    }
    if groups:
        claims["cognito:groups"] = "[" + " ".join(groups) + "]"
    return claims


def http_api_event(
    request: HttpRequest,
    *,
    route_key: str,
    path_parameters: Mapping[str, str],
    claims: Mapping[str, str] | None,
    host: str,
    now: float | None = None,
) -> dict[str, Any]:
    """The payload-2.0 event API Gateway sends for ``request`` on the route ``route_key``."""
    now = time.time() if now is None else now
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in request.headers:
        key = name.lower()
        if key == "cookie":
            cookies.extend(part.strip() for part in value.split(";") if part.strip())
            continue
        # Repeated headers arrive joined by commas, as API Gateway does.
        headers[key] = f"{headers[key]},{value}" if key in headers else value
    headers.setdefault("host", host)
    headers["x-forwarded-for"] = request.source_ip
    headers["x-forwarded-proto"] = "http"
    headers["x-forwarded-port"] = host.rsplit(":", 1)[-1] if ":" in host else "80"
    headers["x-amzn-trace-id"] = f"Root=1-{int(now):08x}-{uuid.uuid4().hex[:24]}"

    http = {
        "method": request.method,
        "path": request.raw_path,
        "protocol": "HTTP/1.1",
        "sourceIp": request.source_ip,
        "userAgent": headers.get("user-agent", ""),
    }
    context: dict[str, Any] = {
        "accountId": ACCOUNT_ID,
        "apiId": API_ID,
        "domainName": host.split(":", 1)[0],
        "domainPrefix": host.split(".", 1)[0].split(":", 1)[0],
        "http": http,
        "requestId": base64.b64encode(uuid.uuid4().bytes[:10]).decode(),
        "routeKey": route_key,
        "stage": "$default",
        "time": _request_time(now),
        "timeEpoch": int(now * 1000),
    }
    if claims is not None:
        context["authorizer"] = {"jwt": {"claims": dict(claims), "scopes": None}}
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": request.raw_path,
        "rawQueryString": request.raw_query,
        "headers": headers,
        "requestContext": context,
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    query = _query_parameters(request.raw_query)
    if query:
        event["queryStringParameters"] = query
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    if request.body:
        text = _decode_text(request.body) if _is_text(headers.get("content-type")) else None
        if text is None:
            event["body"] = base64.b64encode(request.body).decode("ascii")
            event["isBase64Encoded"] = True
        else:
            event["body"] = text
    return event


def _decode_text(body: bytes) -> str | None:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _query_parameters(raw_query: str) -> dict[str, str]:
    parameters: dict[str, str] = {}
    for key, value in parse_qsl(raw_query, keep_blank_values=True):
        parameters[key] = f"{parameters[key]},{value}" if key in parameters else value
    return parameters


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def http_response(result: Any) -> HttpResponse:
    """What API Gateway makes of a Lambda's answer (payload 2.0, including the "inferred" format)."""
    if not isinstance(result, Mapping) or "statusCode" not in result:
        # A handler returning plain JSON: API Gateway answers 200 application/json with it.
        return HttpResponse(200, [("Content-Type", "application/json")], json.dumps(result).encode())
    headers = [(str(k), str(v)) for k, v in (result.get("headers") or {}).items()]
    headers += [("Set-Cookie", str(cookie)) for cookie in result.get("cookies") or ()]
    raw = result.get("body")
    if raw is None:
        body = b""
    elif result.get("isBase64Encoded"):
        body = base64.b64decode(str(raw))
    else:
        body = str(raw).encode("utf-8")
    return HttpResponse(int(result["statusCode"]), headers, body)


def _message_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    # The SQS API spells them StringValue/DataType; the Lambda event spells them stringValue/dataType.
    converted: dict[str, Any] = {}
    for name, value in attributes.items():
        binary = value.get("BinaryValue")
        converted[name] = {
            "stringValue": value.get("StringValue"),
            "binaryValue": base64.b64encode(binary).decode() if isinstance(binary, bytes) else binary,
            "stringListValues": list(value.get("StringListValues", [])),
            "binaryListValues": list(value.get("BinaryListValues", [])),
            "dataType": value.get("DataType", "String"),
        }
    return converted


def sqs_event(messages: Iterable[Mapping[str, Any]], queue_arn: str) -> dict[str, Any]:
    """The event the SQS event source mapping hands the worker for messages from ``ReceiveMessage``."""
    region = queue_arn.split(":")[3] if queue_arn.count(":") >= 5 else REGION
    records = [
        {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": {k: v for k, v in (message.get("Attributes") or {}).items() if k in _RECORD_ATTRIBUTES},
            "messageAttributes": _message_attributes(message.get("MessageAttributes") or {}),
            "md5OfBody": message.get("MD5OfBody", ""),
            "eventSource": "aws:sqs",
            "eventSourceARN": queue_arn,
            "awsRegion": region,
        }
        for message in messages
    ]
    return {"Records": records}


def scheduled_event(rule_name: str, now: float | None = None) -> dict[str, Any]:
    """An EventBridge schedule tick, as the sweeper's rule sends it."""
    now = time.time() if now is None else now
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT_ID}:rule/{rule_name}"],
        "detail": {},
    }
