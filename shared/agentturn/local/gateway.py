"""The local API Gateway: an HTTP server on 127.0.0.1 that serves the console and turns every API request
into an HTTP API (payload 2.0) event for the same run/submit handlers Lambda runs.

It plays API Gateway's JWT authorizer too: the caller is the dev user, chosen per request by the
``X-Agentturn-Dev-User`` header (the console's user switch) or ``--user``, and handed to the handlers
only as verified claims (``requestContext.authorizer.jwt.claims.sub``, and ``cognito:groups`` for a dev user
with groups, in the one-string form API Gateway gives an array claim). The header itself is removed
from the event: the deployed handlers never see it, and nothing deployed would honour it.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

from agentturn.api.body import declared_length
from agentturn.api.http import StreamedAnswer
from agentturn.api.problems import ProblemError, payload_too_large
from agentturn.api.routes import ALL_GROUPS, SUBMIT_LAMBDA_GROUPS, RouteSpec, match_route
from agentturn.api.settings import Settings
from agentturn.listeners.trace import TracePoint, mark
from agentturn.local.emulator import LOOPBACK
from agentturn.local.events import HttpRequest, HttpResponse, dev_claims, http_api_event, http_response
from agentturn.local.log import LOGGER_NAME

if TYPE_CHECKING:
    from agentturn.local.live import LiveHub

_log = logging.getLogger(LOGGER_NAME)

DEV_USER_HEADER: Final = "x-agentturn-dev-user"
DEV_USER_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
#: API Gateway's own payload limit.
MAX_BODY_BYTES: Final = 10 * 1024 * 1024
WEB_DIR: Final = Path(__file__).resolve().parent.parent / "web"
_STATIC_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
# Defence in depth for the console: no inline script or handler attribute ever runs, so even a rendering
# bug could not execute schema text. No 'unsafe-eval' either: the console validates forms with a validator that
# interprets schemas (web/src/validator.mjs), nothing compiles a schema to code.
CONSOLE_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
_HOP_BY_HOP: Final = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "upgrade"})
#: Connections the kernel queues while every request thread is busy being started: the console polls, a
#: test fires dozens at once, and a full queue answers nothing at all (connection reset or a stalled SYN).
LISTEN_BACKLOG: Final = 128
#: Longest request path answered (API Gateway's own limit on a request line is near 8 KB; http.server's is
#: 64 KB, answered with an HTML page).
MAX_PATH_BYTES: Final = 8192
_BAD_ESCAPE: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")

Invoke = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class GatewayConfig:
    port: int
    default_user: str
    users: Sequence[str] = ()
    #: Each dev user's groups, handed over as the verified token's ``cognito:groups`` claim (none when unnamed).
    groups: Mapping[str, Sequence[str]] = field(default_factory=dict)
    #: The agent ids the console's picker offers.
    agent_ids: Callable[[], list[str]] = field(default=lambda: [])
    #: ``AGENTTURN_MODEL`` as the handlers read it, else "demo" (the demo agents: the console shows the demo model's
    #: badge and its prompts) or "own" (a team's agents, which pick their model themselves).
    model: str = "demo"
    web_dir: Path = WEB_DIR
    log_requests: bool = True
    #: The live timeline (AppSync Events' protocol): publishes arrive at ``POST /event``.
    live: LiveHub | None = None


def static_file(web_dir: Path, raw_path: str) -> Path | None:
    """The console file for ``raw_path``, or ``None``: only known types, never outside ``web_dir``, never
    the build sources under ``src/``."""
    relative = unquote(raw_path).lstrip("/") or "index.html"
    parts = relative.split("/")
    if any(part in ("", ".", "..") or part.startswith(".") for part in parts) or parts[0] == "src":
        return None
    candidate = (web_dir / relative).resolve()
    if not candidate.is_relative_to(web_dir.resolve()) or candidate.suffix not in _STATIC_TYPES:
        return None
    return candidate if candidate.is_file() else None


def odd_path(target: str, path: str) -> HttpResponse | None:
    """A 4xx problem for a request target no route or file could mean, or ``None``: checked before any
    file lookup or routing, so that neither ever sees a NUL byte, a dot segment or a broken escape."""
    if len(target) > MAX_PATH_BYTES:
        return _problem(414, "uri-too-long", "Request path too long", f"at most {MAX_PATH_BYTES} bytes")
    # (http.server decodes the request line as Latin-1: any byte above 0x7e shows up as such a character.)
    if not target.startswith("/") or target.startswith("//") or any(not "\x21" <= c <= "\x7e" for c in target):
        return _problem(400, "bad-path", "Bad request path", "the path must be printable ASCII starting with '/'")
    if _BAD_ESCAPE.search(target):
        return _problem(400, "bad-path", "Bad request path", "'%' must start an escape of two hex digits")
    try:
        decoded = unquote(path, errors="strict")
    except UnicodeDecodeError:
        return _problem(400, "bad-path", "Bad request path", "escapes must decode to UTF-8")
    if any(c < " " or c in "\x7f\\" for c in decoded):
        return _problem(400, "bad-path", "Bad request path", "control characters and '\\' are not allowed")
    if any(segment in (".", "..") for segment in decoded.split("/")):
        return _problem(400, "bad-path", "Bad request path", "'.' and '..' segments are not allowed")
    return None


class _Server(ThreadingHTTPServer):
    request_queue_size = LISTEN_BACKLOG
    # Request threads must not keep the process alive past a bounded shutdown.
    daemon_threads = True
    block_on_close = False


class LocalGateway:
    def __init__(self, config: GatewayConfig, *, run: Invoke, submit: Invoke, run_stream: Invoke | None = None) -> None:
        self.config = config
        self.run = run
        self.submit = submit
        #: The run function's streaming entry (``stream_handler``): AG-UI runs are sent as they happen, as a
        #: function URL in RESPONSE_STREAM mode sends them. Without it they arrive whole, as through the HTTP API.
        self.run_stream = run_stream
        self.server = _Server((LOOPBACK, config.port), _handler_class(self))
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/"

    def allowed_hosts(self) -> frozenset[str]:
        # A DNS-rebinding page could otherwise talk to this server as any dev user.
        return frozenset({f"{LOOPBACK}:{self.port}", f"localhost:{self.port}"})

    def start(self) -> None:
        self._thread = threading.Thread(target=self.server.serve_forever, name="gateway", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> bool:
        if self._thread is None:
            return True
        stopper = threading.Thread(target=self.server.shutdown, name="gateway-stop", daemon=True)
        stopper.start()
        stopper.join(timeout)
        self._thread.join(max(0.0, timeout))
        self.server.server_close()
        return not self._thread.is_alive()

    # ------------------------------------------------------------------------------------ requests

    def dev_info(self) -> dict[str, Any]:
        users = [self.config.default_user, *[u for u in self.config.users if u != self.config.default_user]]
        info: dict[str, Any] = {
            "defaultUser": self.config.default_user,
            "users": users,
            "groups": {user: list(self.config.groups.get(user, ())) for user in users},
            "agents": self.config.agent_ids(),
            "model": self.config.model,
        }
        live = self.config.live
        if live is not None:
            info["live"] = {"realtimeUrl": live.url, "host": f"{LOOPBACK}:{self.port}"}
            if live.amplify_endpoint is not None:
                # For a page on AWS Amplify's Events client: its API.Events.endpoint (Amplify connects to
                # wss://<that host:port>/event/realtime).
                info["live"]["amplifyEndpoint"] = live.amplify_endpoint
                info["live"]["certificate"] = str(live.certificate) if live.certificate else None
        return info

    def console_headers(self) -> dict[str, str]:
        """The console's headers; its CSP lets it open the live timeline's WebSocket and nothing else."""
        live = self.config.live
        if live is None:
            return CONSOLE_HEADERS
        sockets = f"ws://{LOOPBACK}:{live.port} ws://localhost:{live.port}"
        policy = CONSOLE_HEADERS["Content-Security-Policy"].replace(
            "connect-src 'self'", f"connect-src 'self' {sockets}"
        )
        return {**CONSOLE_HEADERS, "Content-Security-Policy": policy}

    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.allowed_hosts())

    def publish(self, headers: Any, body: bytes) -> HttpResponse:
        """AppSync Events' HTTP publish, for the handlers' publisher: SigV4-signed, as deployed."""
        live = self.config.live
        if live is None:
            return _problem(404, "not-found", "Not found", "the live timeline is off")
        if not str(headers.get("Authorization", "")).startswith("AWS4-HMAC-SHA256 "):
            # Only the signing is checked (there is no secret to verify it with): what is not signed as the
            # deployed publisher signs would be refused by AppSync too.
            return HttpResponse(
                401, [("Content-Type", "application/json")], b'{"errors":[{"errorType":"UnauthorizedException"}]}'
            )
        status, answer = live.publish_http(body)
        return HttpResponse(status, [("Content-Type", "application/json")], json.dumps(answer).encode())

    def event_for(self, request: HttpRequest, user: str) -> dict[str, Any]:
        """The event the handlers get for ``request`` made by ``user`` (as :meth:`call_api` builds it)."""
        return self._event(request, user)[1]

    def _event(self, request: HttpRequest, user: str) -> tuple[RouteSpec | None, dict[str, Any]]:
        matched = match_route(request.method, request.raw_path, ALL_GROUPS)
        route = matched.route
        parameters: dict[str, str] = {}
        if route is not None:
            found = route.regex.match(request.raw_path)
            parameters = found.groupdict() if found else {}
        event = http_api_event(
            request,
            route_key=route.route_key if route is not None else "$default",
            path_parameters=parameters,
            claims=dev_claims(user, f"{self.url}_dev", time.time(), groups=self.config.groups.get(user, ())),
            host=f"{LOOPBACK}:{self.port}",
        )
        return route, event

    def streams(self, request: HttpRequest) -> bool:
        """Whether the request is for a streamed route (and this gateway can stream it)."""
        if self.run_stream is None:
            return False
        route = match_route(request.method, request.raw_path, ALL_GROUPS).route
        return route is not None and route.streamed

    def stream_api(self, request: HttpRequest, user: str) -> StreamedAnswer:
        assert self.run_stream is not None
        _, event = self._event(request, user)
        try:
            answer: StreamedAnswer = self.run_stream(event)
            return answer
        except Exception:
            _log.exception("the streaming handler for %s %s raised", request.method, request.raw_path)
            body = json.dumps({"message": "Internal Server Error"}).encode()
            return StreamedAnswer(500, {"Content-Type": "application/json"}, [body])

    def call_api(self, request: HttpRequest, user: str) -> HttpResponse:
        if request.method == "HEAD":
            # Answered as the GET it mirrors (the handler side strips the body): never a 405.
            request = replace(request, method="GET")
        route, event = self._event(request, user)
        # API Gateway routes each route to its integration: the answers go to the submit Lambda, the
        # rest (and anything unknown, which the run Lambda answers with a 404 problem) to run.
        invoke = self.submit if route is not None and route.group in SUBMIT_LAMBDA_GROUPS else self.run
        try:
            return http_response(invoke(event))
        except Exception:
            # What API Gateway answers when the integration fails.
            _log.exception("the handler for %s %s raised", request.method, request.raw_path)
            body = json.dumps({"message": "Internal Server Error"}).encode()
            return HttpResponse(500, [("Content-Type", "application/json")], body)


def _problem(status: int, slug: str, title: str, detail: str) -> HttpResponse:
    body = {"type": f"https://agentturn.dev/problems/{slug}", "title": title, "status": status, "detail": detail}
    return HttpResponse(status, [("Content-Type", "application/problem+json")], json.dumps(body).encode())


def _problem_from(problem: ProblemError) -> HttpResponse:
    """The API's own problem document, for a refusal the gateway makes in the handlers' place."""
    return HttpResponse(problem.status, list(problem.response_headers().items()), problem.to_json().encode())


def _problem_slug(response: HttpResponse) -> str:
    """ " turn-not-found" for a problem answer (what a developer wants to see in the log), else ""."""
    if response.status < 400:
        return ""
    try:
        kind = json.loads(response.body).get("type", "")
    except (ValueError, AttributeError):
        return ""
    return f" {str(kind).rsplit('/', 1)[-1]}" if kind else ""


def _handler_class(gateway: LocalGateway) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "agentturn-dev"
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # the base class's name
            _log.debug("%s - %s", self.address_string(), format % args)

        def do_GET(self) -> None:
            self._dispatch()

        def do_HEAD(self) -> None:
            self._dispatch()

        def do_POST(self) -> None:
            self._dispatch()

        def do_PUT(self) -> None:
            self._dispatch()

        def do_PATCH(self) -> None:
            self._dispatch()

        def do_DELETE(self) -> None:
            self._dispatch()

        def do_OPTIONS(self) -> None:
            self._dispatch()

        def __getattr__(self, name: str) -> Callable[[], None]:
            # Any other method (TRACE, CONNECT, QUERY, a made-up token) is routed too: the answer is the handlers'
            # 405 (or 404) problem, as deployed, not http.server's 501 for a method it has no do_ method for.
            if name.startswith("do_"):
                return self._dispatch
            raise AttributeError(name)

        def _dispatch(self) -> None:
            started = time.monotonic()
            mark(TracePoint.GATEWAY_REQUEST, method=self.command, path=self.path)
            try:
                self._answer(started)
            finally:
                mark(TracePoint.GATEWAY_ANSWERED, method=self.command, path=self.path)

        def _answer(self, started: float) -> None:
            # Every answer settles this request's body first (_send): read, discarded, or the connection closed.
            self._body_settled = False
            if self.headers.get("Host", "") not in gateway.allowed_hosts():
                # A peer that does not know where it is: no further request of it is read on this connection.
                self.close_connection = True
                self._send(_problem(421, "misdirected", "Misdirected request", "use the URL agentturn dev printed"))
                return
            split = urlsplit(self.path)
            raw_path = split.path
            refused = odd_path(self.path, raw_path)
            if refused is not None:
                self._send(refused)
                return
            if self.command in ("GET", "HEAD"):
                if raw_path == "/_dev/info":
                    self._send(
                        HttpResponse(
                            200, [("Content-Type", "application/json")], json.dumps(gateway.dev_info()).encode()
                        )
                    )
                    return
                file = static_file(gateway.config.web_dir, raw_path)
                if file is not None:
                    headers = [("Content-Type", _STATIC_TYPES[file.suffix]), *gateway.console_headers().items()]
                    self._send(HttpResponse(200, headers, file.read_bytes()))
                    return
            body = self._read_body()
            if isinstance(body, HttpResponse):
                self._send(body)
                return
            if self.command == "POST" and raw_path == "/event":
                self._send(gateway.publish(self.headers, body))
                return
            user = self.headers.get(DEV_USER_HEADER) or gateway.config.default_user
            if not DEV_USER_PATTERN.match(user):
                self._send(
                    _problem(
                        400,
                        "invalid-dev-user",
                        "Invalid dev user",
                        "a dev user is 1-64 letters, digits, '.', '_', '@' or '-'",
                    )
                )
                return
            headers = [(k, v) for k, v in self.headers.items() if k.lower() != DEV_USER_HEADER]
            request = HttpRequest(self.command, raw_path, split.query, headers, body, self.client_address[0])
            if gateway.streams(request):
                status = self._send_stream(gateway.stream_api(request, user))
                if gateway.config.log_requests:
                    _log.info(
                        "%s %s -> %d streamed (%.0f ms, %s)",
                        self.command,
                        raw_path,
                        status,
                        (time.monotonic() - started) * 1000,
                        user,
                    )
                return
            response = gateway.call_api(request, user)
            self._send(response)
            if gateway.config.log_requests:
                _log.info(
                    "%s %s -> %d%s (%.0f ms, %s)",
                    self.command,
                    raw_path,
                    response.status,
                    _problem_slug(response),
                    (time.monotonic() - started) * 1000,
                    user,
                )

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            # What http.server refuses itself (a malformed or overlong request line) is answered as a problem
            # too, not as its HTML page.
            self.close_connection = True
            title = message or self.responses.get(code, ("Error", ""))[0]
            slug = {414: "uri-too-long", 501: "not-implemented"}.get(code, "bad-request")
            self._send(_problem(code, slug, title, explain or title))

        def _read_body(self) -> bytes | HttpResponse:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                self.close_connection = True
                return _problem(411, "length-required", "Length required", "send a Content-Length, not a chunked body")
            length = declared_length(self.headers)
            if length is None:
                self.close_connection = True
                return _problem(400, "bad-content-length", "Bad Content-Length", "Content-Length is not a number")
            if length > MAX_BODY_BYTES:
                self.close_connection = True
                # The limit a caller meets is the handlers' (AGENTTURN_MAX_BODY_BYTES), far below this one, which
                # only spares the server reading a body that can never be accepted: name that one.
                return _problem_from(payload_too_large(length, Settings.from_env().max_body_bytes))
            self._body_settled = True
            return self.rfile.read(length) if length > 0 else b""

        def _send_stream(self, answer: StreamedAnswer) -> int:
            """Chunked transfer: each piece goes out (and is flushed) as the handler yields it. A reader that
            goes away stops the sending, never the run behind it."""
            self._settle_body()
            chunks = iter(answer.chunks)
            try:
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    if name.lower() not in _HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                for chunk in chunks:
                    if chunk:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            finally:
                close = getattr(chunks, "close", None)
                if callable(close):
                    close()
            return answer.status

        def _settle_body(self) -> None:
            """Before any answer: the body nobody read is read and dropped, or the connection closes after the
            answer. Left unread, its bytes would be parsed as the next request on a kept-alive connection: a
            request hidden in the body of a refused one (a bad path, a wrong Host) would run, past the checks."""
            if getattr(self, "_body_settled", True) or self.close_connection:
                return
            self._body_settled = True
            length = declared_length(self.headers)
            if length is None or length > MAX_BODY_BYTES:
                self.close_connection = True
            elif length > 0:
                self.rfile.read(length)

        def _send(self, response: HttpResponse) -> None:
            self._settle_body()
            try:
                self.send_response(response.status)
                for name, value in response.headers:
                    if name.lower() not in _HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(response.body)))
                if self.close_connection:
                    self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(response.body)
            except (BrokenPipeError, ConnectionResetError):
                # The browser went away (a page reload mid-poll): nothing to answer.
                self.close_connection = True

    return Handler
