"""The local gateway on a real loopback socket: a burst of connections is queued and answered, every odd
path is a 4xx problem before any file lookup or route, and HEAD mirrors GET without a body."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentturn.local.gateway import LISTEN_BACKLOG, MAX_PATH_BYTES, GatewayConfig, LocalGateway

BURST = 60
#: Bound on every socket wait: a queued connection completes at once; one the kernel dropped would not.
TIMEOUT = 5.0


class Recorder:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        self.events.append(event)
        body = json.dumps({"method": event["requestContext"]["http"]["method"], "path": event["rawPath"]})
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": body}


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[LocalGateway, Recorder, Path]]:
    (tmp_path / "index.html").write_text("<title>console</title>")
    run, submit = Recorder(), Recorder()
    config = GatewayConfig(port=0, default_user="dev-user", log_requests=False, web_dir=tmp_path)
    server = LocalGateway(config, run=run, submit=submit)
    yield server, run, tmp_path
    assert server.stop(TIMEOUT)


def raw_request(port: int, target: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """One request exactly as written (no client-side normalisation of the path)."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        head = f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        sock.sendall(head.encode("latin-1"))
        return parse(read_all(sock))


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def parse(data: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


def test_a_burst_of_connections_waits_in_the_backlog_and_every_one_is_answered(gateway: Any) -> None:
    # GIVEN a gateway whose socket listens but which is not accepting yet (as when it is busy)
    server, _, _ = gateway
    assert LISTEN_BACKLOG >= 128

    # WHEN 60 clients connect at once
    sockets = [socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) for _ in range(BURST)]
    try:
        # THEN every connection was queued by the kernel (with a backlog of 5, the 7th would not complete)
        for sock in sockets:
            sock.sendall(
                f"GET /_dev/info HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nConnection: close\r\n\r\n".encode()
            )
        # AND once the gateway accepts, each gets a full HTTP answer
        server.start()
        statuses = [parse(read_all(sock))[0] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
    assert statuses == [200] * BURST


ODD_TARGETS = [
    "/%00",
    "/index.html%00.js",
    "/turns/t-1%00",
    "/..",
    "/../etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/vendor/./forms.js",
    "/turns/%2E",
    "/%zz",
    "/turns/t-1%4",
    "/%",
    "/%ff%fe",
    "/a%5c..%5cb",
    "/a%01b",
    "*",
    "/" + "a" * (MAX_PATH_BYTES + 1),
    "/\xe9",
]


def test_every_odd_path_is_a_4xx_problem_before_any_file_or_route(gateway: Any) -> None:
    # GIVEN a running gateway
    server, run, _ = gateway
    server.start()
    for method in ("GET", "HEAD", "POST"):
        for target in ODD_TARGETS:
            # WHEN a request names an odd path
            status, headers, body = raw_request(server.port, target, method)

            # THEN it is answered (not dropped) with a 4xx problem
            assert 400 <= status < 500, (method, target, status, body)
            assert headers["content-type"] == "application/problem+json", (method, target)
            if method != "HEAD":
                problem = json.loads(body)
                assert problem["status"] == status
                assert problem["type"].startswith("https://agentturn.dev/problems/")
    # AND no handler ever saw one
    assert run.events == []


def test_a_request_line_http_server_refuses_itself_is_a_problem_too(gateway: Any) -> None:
    # GIVEN a running gateway WHEN the request line is longer than http.server reads
    server, _, _ = gateway
    server.start()
    status, headers, body = raw_request(server.port, "/" + "b" * 70_000)

    # THEN the answer is a problem, not http.server's HTML page
    assert status == 414
    assert headers["content-type"] == "application/problem+json"
    assert json.loads(body)["status"] == 414


def test_head_is_answered_like_get_without_a_body(gateway: Any) -> None:
    # GIVEN a running gateway
    server, run, _ = gateway
    server.start()
    for target in ("/", "/_dev/info", "/turns/t-1", "/conversations/c-1/messages?limit=5"):
        # WHEN the same target is asked with GET and with HEAD
        get_status, get_headers, get_body = raw_request(server.port, target, "GET")
        head_status, head_headers, head_body = raw_request(server.port, target, "HEAD")

        # THEN HEAD has GET's status, type and length, and no body
        assert head_status == get_status == 200, target
        assert head_headers["content-type"] == get_headers["content-type"]
        assert head_headers["content-length"] == str(len(get_body))
        assert head_body == b""
    # AND the API routes saw a GET each time (HEAD is not a route of its own: never a 405)
    assert len(run.events) == 4
    assert all(event["requestContext"]["http"]["method"] == "GET" for event in run.events)


def responses(data: bytes) -> list[int]:
    """The statuses of the HTTP responses in ``data``, one after another (each framed by its Content-Length)."""
    statuses: list[int] = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        status, headers, _ = parse(head + b"\r\n\r\n")
        statuses.append(status)
        data = rest[int(headers.get("content-length", "0")) :]
    return statuses


def smuggle(port: int, head: str, body: bytes) -> list[int]:
    """On one kept-alive connection: a request ``head`` + ``body``, then (if the connection is still open) a
    follow-up ``GET /_dev/info`` that closes it. The statuses answered on the connection, in order."""
    follow_up = f"GET /_dev/info HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(head.encode("latin-1") + body)
        first = b""
        while b"\r\n\r\n" not in first:  # the first answer's head (its body follows within the same bound)
            chunk = sock.recv(65536)
            if not chunk:
                break
            first += chunk
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # closed after the first answer
            sock.sendall(follow_up)
        try:
            rest = read_all(sock)
        except ConnectionResetError:
            rest = b""
    return responses(first + rest)


def hidden_request(port: int) -> bytes:
    """A whole request, with the right Host, as the body of another one."""
    return (
        f"POST /conversations/hidden/turns HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 2\r\n\r\n{{}}".encode()
    )


@pytest.mark.parametrize(
    ("case", "answers"),
    [
        # The body is read and dropped: the connection stays usable, and its next request is the follow-up.
        ("bad-path", [400, 200]),
        ("static-file", [200, 200]),
        # The connection closes after the answer: a peer with a foreign Host, a body of unknowable length.
        ("wrong-host", [421]),
        ("two-lengths", [400]),
        ("transfer-encoding", [411]),
    ],
)
def test_a_body_is_never_read_as_the_next_request(gateway: Any, case: str, answers: list[int]) -> None:
    # GIVEN a running gateway, and a request whose body is a whole request of its own, on a kept-alive connection:
    # refused for its path or its Host, served from a file without reading a body, or with a length that cannot
    # be known exactly
    server, run, _ = gateway
    server.start()
    port = server.port
    body = hidden_request(port)
    length = f"Content-Length: {len(body)}\r\n"
    heads = {
        "bad-path": f"POST /turns/t1/actions/%5C/reject HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{length}\r\n",
        "wrong-host": f"POST /conversations/c1/turns HTTP/1.1\r\nHost: evil.example:{port}\r\n{length}\r\n",
        "static-file": f"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{length}\r\n",
        "two-lengths": f"POST /conversations/c1/turns HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Length: 0\r\n{length}\r\n",
        "transfer-encoding": f"POST /conversations/c1/turns HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Transfer-Encoding: chunked\r\n\r\n{len(body):x}\r\n",
    }

    # WHEN it is sent, and then a follow-up request if the connection is still open
    statuses = smuggle(port, heads[case], body)

    # THEN the request is answered, and the hidden one never runs: the next answer, if any, is the follow-up's
    assert statuses == answers
    assert [event["rawPath"] for event in run.events] == []


def test_a_body_too_large_for_the_gateway_names_the_limit_a_caller_actually_meets(
    gateway: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the gateway started, and the handlers' body limit (AGENTTURN_MAX_BODY_BYTES) at 300 KB
    server, run, _ = gateway
    server.start()
    monkeypatch.setenv("AGENTTURN_MAX_BODY_BYTES", str(300 * 1024))
    size = 12 * 1024 * 1024
    # WHEN a 12 MB body is announced (only its head is sent: it is refused before being read)
    with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as sock:
        head = (
            f"POST /conversations/c1/turns HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
        )
        sock.sendall(head.encode())
        status, headers, body = parse(read_all(sock))
    # THEN the 413 is the API's problem, naming that limit and the body's size, and no handler ran
    assert status == 413
    assert headers["content-type"] == "application/problem+json"
    problem = json.loads(body)
    assert problem["type"] == "https://agentturn.dev/problems/payload-too-large"
    assert problem["detail"] == f"the body is {size} bytes; at most {300 * 1024} are accepted"
    assert run.events == []


def request_as(port: int, target: str, user: str) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        head = (
            f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Agentturn-Dev-User: {user}\r\n"
            "Connection: close\r\n\r\n"
        )
        sock.sendall(head.encode("latin-1"))
        return parse(read_all(sock))


def test_a_dev_user_with_groups_reaches_the_handlers_as_the_token_s_group_claim(tmp_path: Path) -> None:
    from agentturn.api.identity import jwt_groups
    from agentturn.local.server import DEV_GROUPS

    # GIVEN a gateway whose dev users have the dev server's groups (two in finance, one on call)
    run, submit = Recorder(), Recorder()
    config = GatewayConfig(
        port=0,
        default_user="dev-user",
        users=("alice", *DEV_GROUPS),
        groups=DEV_GROUPS,
        log_requests=False,
        web_dir=tmp_path,
    )
    server = LocalGateway(config, run=run, submit=submit)
    server.start()
    try:
        # WHEN a finance user and a user in no group each call the API
        assert request_as(server.port, "/inbox", "fin-ana")[0] == 200
        assert request_as(server.port, "/inbox", "alice")[0] == 200
        status, _, body = raw_request(server.port, "/_dev/info")
    finally:
        assert server.stop(TIMEOUT)

    # THEN the finance user's verified claims carry the group in the one string API Gateway makes of an array,
    # and the entry points read it as the group
    finance, nobody = run.events
    claims = finance["requestContext"]["authorizer"]["jwt"]["claims"]
    assert claims["sub"] == "fin-ana"
    assert claims["cognito:groups"] == "[finance]"
    assert jwt_groups(finance, "cognito:groups") == frozenset({"finance"})
    # AND a user in no group has no group claim at all (as Cognito leaves it out)
    assert "cognito:groups" not in nobody["requestContext"]["authorizer"]["jwt"]["claims"]
    assert jwt_groups(nobody, "cognito:groups") == frozenset()
    # AND the console's user switch learns each user's groups
    assert status == 200
    info = json.loads(body)
    assert info["groups"]["fin-ben"] == ["finance"]
    assert info["groups"]["ops-olu"] == ["oncall"]
    assert info["groups"]["alice"] == []
