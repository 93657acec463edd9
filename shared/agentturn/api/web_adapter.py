"""The streamed AG-UI function's HTTP server: what the AWS Lambda Web Adapter (LWA) runs behind a function URL in
``RESPONSE_STREAM`` mode, so a run's server-sent events reach the client while the model writes.

A Python Lambda cannot stream through the managed runtime's handler interface; LWA (a layer, started through
``AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap``) turns each invocation into an HTTP request to a server in the same
sandbox and streams that server's answer back. This is that server: standard library only (``http.server``), one
request at a time as Lambda sends them, the same :class:`~agentturn.api.http.HttpApi` the run function serves,
restricted to the AG-UI routes.

A function URL has no authorizer (``AuthType NONE``: a browser cannot sign IAM requests), so the bearer token is
verified here exactly as the HTTP API's JWT authorizer verifies it (:mod:`agentturn.api.tokens`: same issuer, same
audience, RSA signature against the issuer's JWKS), and the verified claims reach the handlers where API Gateway
puts them (``requestContext.authorizer.jwt.claims``): ``sub`` is the identity, as on every route. The order of
the HTTP API is kept: an unknown route is 404 before any token is looked at, a refused token is 401 before the
body is read.

A client that goes away stops the sending, not the run: the rest of the run's events are read and dropped, so
the invocation lasts until the turn stops (or hands itself to the worker queue when the Lambda runs out of time,
which the ``x-amzn-lambda-context`` header's deadline tells).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import parse_qsl, urlsplit

from agentturn.api import problems
from agentturn.api.body import declared_length
from agentturn.api.http import HttpApi, StreamedAnswer
from agentturn.api.problems import ProblemError
from agentturn.api.routes import RouteGroup, match_route
from agentturn.api.tokens import JwtVerifier, TokenRefused

_log = logging.getLogger("agentturn.api.web_adapter")

#: The route groups this function serves.
GROUPS: Final = frozenset({RouteGroup.AGUI})
#: Where LWA sends requests (its default, set explicitly by the construct).
ENV_PORT: Final = "AWS_LWA_PORT"
DEFAULT_PORT: Final = 8080
#: The issuer and audience the HTTP API's JWT authorizer has (the construct sets both from the same values).
ENV_ISSUER: Final = "AGENTTURN_JWT_ISSUER"
ENV_AUDIENCE: Final = "AGENTTURN_JWT_AUDIENCE"
#: A function URL accepts at most 6 MB of request payload; anything longer is refused unread.
MAX_REQUEST_BYTES: Final = 6 * 1024 * 1024
LOOPBACK: Final = "127.0.0.1"
_HOP_BY_HOP: Final = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "upgrade"})
_INTERNAL_ERROR: Final = b'{"message":"Internal Server Error"}'
_PASSED_OVER: Final = frozenset({"x-amzn-lambda-context", "x-amzn-request-context"})


@dataclass(frozen=True)
class InvocationContext:
    """The part of a Lambda context the handlers use, from the deadline LWA passes in ``x-amzn-lambda-context``."""

    deadline_ms: int
    aws_request_id: str
    clock: Callable[[], float] = time.time

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self.deadline_ms - int(self.clock() * 1000))


def invocation_context(headers: Mapping[str, str]) -> InvocationContext | None:
    """The invocation's context from LWA's header (``deadline`` in epoch milliseconds), or ``None`` without one."""
    try:
        document = json.loads(headers.get("x-amzn-lambda-context") or "null")
    except ValueError:
        return None
    deadline = document.get("deadline") if isinstance(document, dict) else None
    if not isinstance(deadline, int) or isinstance(deadline, bool):
        return None
    return InvocationContext(deadline, str(document.get("request_id") or ""))


def http_api_event(
    method: str,
    target: str,
    headers: Iterable[tuple[str, str]],
    body: bytes,
    claims: Mapping[str, str] | None,
    source_ip: str,
) -> dict[str, Any]:
    """The payload-2.0 event API Gateway would send for this request, with the claims its authorizer verified."""
    split = urlsplit(target)
    joined: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        if key in _PASSED_OVER:
            continue
        joined[key] = f"{joined[key]},{value}" if key in joined else value
    matched = match_route(method, split.path, GROUPS).route
    route_key = matched.route_key if matched is not None else "$default"
    found = matched.regex.match(split.path) if matched is not None else None
    now = time.time()
    context: dict[str, Any] = {
        "http": {
            "method": method,
            "path": split.path,
            "protocol": "HTTP/1.1",
            "sourceIp": source_ip,
            "userAgent": joined.get("user-agent", ""),
        },
        "requestId": str(uuid.uuid4()),
        "routeKey": route_key,
        "stage": "$default",
        "timeEpoch": int(now * 1000),
    }
    if claims is not None:
        context["authorizer"] = {"jwt": {"claims": dict(claims), "scopes": None}}
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": split.path,
        "rawQueryString": split.query,
        "headers": joined,
        "requestContext": context,
        "isBase64Encoded": False,
    }
    if body:
        # As API Gateway passes it: text as text, anything else base64-encoded.
        try:
            event["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode("ascii"), True
    if found is not None and found.groupdict():
        event["pathParameters"] = found.groupdict()
    query = dict(parse_qsl(split.query, keep_blank_values=True))
    if query:
        event["queryStringParameters"] = query
    return event


class WebAdapterApp:
    """Requests in, streamed answers out: route, token, then the API (:meth:`HttpApi.stream`)."""

    def __init__(self, api: HttpApi, verifier: JwtVerifier) -> None:
        self.api = api
        self.verifier = verifier

    def answer(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes, source_ip: str
    ) -> StreamedAnswer:
        path = urlsplit(target).path
        claims: dict[str, str] | None = None
        if match_route(method, path, GROUPS).route is not None:
            authorization = next((v for k, v in headers if k.lower() == "authorization"), None)
            try:
                claims = self.verifier.verify(authorization)
            except TokenRefused as refused:
                return _problem_answer(problems.token_refused(refused.reason.value))
        event = http_api_event(method, target, headers, body, claims, source_ip)
        context = invocation_context({k.lower(): v for k, v in headers})
        return self.api.stream(event, context)


def _problem_answer(problem: ProblemError) -> StreamedAnswer:
    return StreamedAnswer.whole(problem.to_api_gateway())


def handler_class(app: WebAdapterApp, finished: Callable[[], None] = lambda: None) -> type[BaseHTTPRequestHandler]:
    """The request handler; ``finished`` runs after each answer is wholly sent (the function flushes its metrics)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "agentturn-ag-ui"

        def log_message(self, format: str, *args: Any) -> None:  # the base class's name
            _log.debug("%s - %s", self.address_string(), format % args)

        def do_GET(self) -> None:
            self._dispatch()

        def do_POST(self) -> None:
            self._dispatch()

        def __getattr__(self, name: str) -> Callable[[], None]:
            # Any other method is the API's 405 or 404 problem, as on the HTTP API.
            if name.startswith("do_"):
                return self._dispatch
            raise AttributeError(name)

        def _dispatch(self) -> None:
            try:
                self._answer()
            finally:
                finished()

        def _answer(self) -> None:
            body = self._read_body()
            if isinstance(body, StreamedAnswer):
                self.close_connection = True
                self._send(body)
                return
            try:
                answer = app.answer(self.command, self.path, list(self.headers.items()), body, self.client_address[0])
            except Exception:
                # What a function URL answers when the function fails; the traceback goes to the log.
                _log.exception("the AG-UI entry failed for %s %s", self.command, urlsplit(self.path).path)
                answer = StreamedAnswer(
                    500, {"Content-Type": "application/json"}, [b'{"message":"Internal Server Error"}']
                )
            self._send(answer)

        def _read_body(self) -> bytes | StreamedAnswer:
            if self.headers.get("Transfer-Encoding") is not None:
                return _problem_answer(problems.malformed_body("send the body with a Content-Length, not chunked"))
            length = declared_length(self.headers)
            if length is None:
                return _problem_answer(problems.malformed_body("Content-Length is not one decimal number"))
            if length > MAX_REQUEST_BYTES:
                return _problem_answer(problems.payload_too_large(length, MAX_REQUEST_BYTES))
            return self.rfile.read(length) if length else b""

        def _send(self, answer: StreamedAnswer) -> None:
            """Chunked transfer, each piece flushed as the API yields it; a reader that went away makes the rest be
            read and dropped, so the run (and the invocation) goes on to its end."""
            chunks = iter(answer.chunks)
            connected = True
            try:
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    if name.lower() not in _HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                for chunk in chunks:
                    if connected and chunk:
                        try:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                            self.wfile.flush()
                        except (BrokenPipeError, ConnectionResetError):
                            connected = False
                            self.close_connection = True
                if connected:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
                for _ in chunks:  # the run goes on: its remaining events are dropped
                    pass

    return Handler


class WebAdapterServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False


def serve(
    app: WebAdapterApp, port: int, *, host: str = LOOPBACK, finished: Callable[[], None] = lambda: None
) -> WebAdapterServer:
    """A bound server (listening once this returns: LWA's TCP readiness check then passes); call ``serve_forever``."""
    return WebAdapterServer((host, port), handler_class(app, finished))


def port_from_env(environ: Mapping[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    raw = env.get(ENV_PORT) or env.get("PORT") or str(DEFAULT_PORT)
    return int(raw)


def verifier_from_env(environ: Mapping[str, str] | None = None) -> JwtVerifier:
    """The verifier of the issuer and audience the construct set (the HTTP API authorizer's own)."""
    env = os.environ if environ is None else environ
    issuer = env.get(ENV_ISSUER, "").strip()
    audience = [a.strip() for a in env.get(ENV_AUDIENCE, "").split(",") if a.strip()]
    if not issuer or not audience:
        raise RuntimeError(f"{ENV_ISSUER} and {ENV_AUDIENCE} must both be set for the streamed AG-UI function")
    if "://" not in issuer:
        # A user pool's ProviderURL may come without its scheme; its tokens' iss has it (https://cognito-idp...).
        issuer = f"https://{issuer}"
    return JwtVerifier.for_issuer(issuer, audience)
