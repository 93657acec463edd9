"""The streamed AG-UI function's HTTP entry (agentturn.api.web_adapter), run the way the Lambda Web Adapter runs it:
an HTTP server on a local port that gets each invocation as a request, with the caller's bearer token.

The model here writes only when the test lets it (its pauses wait on a semaphore), so "the events arrive while the
model writes" is shown by order, not by timing: the client reads RUN_STARTED and the first piece of text while the
model is still held, before the run could have ended.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from agentturn import Agent, AiMessage, ScriptedChatModel
from agentturn.api.agents import AgentCatalog
from agentturn.api.http import HttpApi
from agentturn.api.services import Services
from agentturn.api.tokens import IssuerKeys, JwtVerifier
from agentturn.api.web_adapter import GROUPS, WebAdapterApp, WebAdapterServer, serve
from agentturn.ports.memory import InMemoryChatMemory
from agentturn.ports.queue import InMemoryResumeQueue
from agentturn.ports.store import InMemoryTurnStore
from tests.support.tokens import CLIENT, ISSUER, Issuer, claims, token

ROOT: Final = Path(__file__).resolve().parents[2]
ANSWER: Final = "Streamed through the web adapter, piece by piece."
AGENT: Final = "held"
#: Bounds every wait of the test: a broken stream fails the test instead of hanging it.
WAIT_SECONDS: Final = 30.0


class HeldModel:
    """Pauses of the scripted model (before the first piece, between pieces) wait for the test's permits."""

    def __init__(self) -> None:
        self.permits = threading.Semaphore(0)

    def pause(self, _seconds: float) -> None:
        assert self.permits.acquire(timeout=WAIT_SECONDS), "the test never let the model go on"

    def release_all(self) -> None:
        for _ in range(len(ANSWER)):
            self.permits.release()


@dataclass
class Entry:
    server: WebAdapterServer
    services: Services
    model: HeldModel
    finished: threading.Event

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])


@pytest.fixture
def entry() -> Iterator[Entry]:
    model = HeldModel()
    chat_model = ScriptedChatModel(
        lambda _request: AiMessage(content=ANSWER), chunk_chars=8, first_delay=1.0, delta_delay=1.0, sleep=model.pause
    )
    services = Services(
        store=InMemoryTurnStore(),
        chat_memory=InMemoryChatMemory(),
        queue=InMemoryResumeQueue(),
        agents=AgentCatalog(lambda: [Agent(id=AGENT, instructions="Answer.", chat_model=chat_model)]),
    )
    verifier = JwtVerifier(ISSUER, (CLIENT,), IssuerKeys(ISSUER, Issuer().fetch))
    finished = threading.Event()
    server = serve(WebAdapterApp(HttpApi(GROUPS, services=services), verifier), 0, finished=finished.set)
    thread = threading.Thread(target=server.serve_forever, name="web-adapter-test", daemon=True)
    thread.start()
    try:
        yield Entry(server, services, model, finished)
    finally:
        model.release_all()
        server.shutdown()
        server.server_close()
        thread.join(WAIT_SECONDS)


def _post_run(port: int, thread: str, *, bearer: str | None) -> http.client.HTTPResponse:
    body = {
        "threadId": thread,
        "runId": f"run-{thread}",
        "messages": [{"id": "m1", "role": "user", "content": "hello"}],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_SECONDS)
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if bearer is not None:
        headers["Authorization"] = f"Bearer {bearer}"
    # What LWA adds: the invocation's deadline (epoch ms), far enough away that the run never yields.
    headers["x-amzn-lambda-context"] = json.dumps({"request_id": "r1", "deadline": int((time.time() + 600) * 1000)})
    connection.request("POST", f"/ag-ui/{AGENT}", body=json.dumps(body), headers=headers)
    return connection.getresponse()


def _events(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    """The SSE stream's events, one by one as they arrive (``data:`` lines)."""
    while line := response.readline():
        if line.startswith(b"data:"):
            yield json.loads(line[5:])


def _next_of(events: Iterator[dict[str, Any]], kind: str, seen: list[str]) -> dict[str, Any]:
    for event in events:
        seen.append(event["type"])
        if event["type"] == kind:
            return event
    raise AssertionError(f"the stream ended before {kind}: {seen}")


def _now_token() -> str:
    return token(claims(int(time.time())))


def test_events_arrive_while_the_model_writes(entry: Entry) -> None:
    # GIVEN the entry and a model held before its first piece of text
    # WHEN a verified caller posts a run
    response = _post_run(entry.port, "t1", bearer=_now_token())
    assert response.status == 200
    assert response.getheader("Content-Type", "").startswith("text/event-stream")
    events, seen = _events(response), []
    # THEN RUN_STARTED arrives while the model has not written a word
    _next_of(events, "RUN_STARTED", seen)
    # WHEN the model may write its first piece THEN that piece arrives while the model is held before the next
    entry.model.permits.release()
    first = _next_of(events, "TEXT_MESSAGE_CONTENT", seen)
    assert first["delta"] == ANSWER[:8]
    assert "RUN_FINISHED" not in seen
    # WHEN the model may finish THEN the rest arrives, and the run ends with the whole answer
    entry.model.release_all()
    pieces = [first["delta"]]
    for event in events:
        seen.append(event["type"])
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            pieces.append(event["delta"])
    assert "".join(pieces) == ANSWER
    assert seen[-1] == "RUN_FINISHED"
    # and the identity was the token's sub: the thread is alice-sub's conversation
    assert entry.services.chat_memory("alice-sub/t1").get_messages(10)


def test_a_client_that_leaves_does_not_stop_the_run(entry: Entry) -> None:
    # GIVEN a run whose client reads RUN_STARTED and goes away while the model is held
    response = _post_run(entry.port, "t2", bearer=_now_token())
    _next_of(_events(response), "RUN_STARTED", [])
    response.close()
    # WHEN the model may write its answer
    entry.model.release_all()
    # THEN the request is finished only once the run is: the turn completed, its answer in the timeline
    assert entry.finished.wait(WAIT_SECONDS)
    turn_id = entry.services.chat_memory("alice-sub/t2").get_messages(10)[0].turn_id
    assert turn_id is not None
    turn = entry.services.store.load(turn_id)
    assert turn.status.value == "COMPLETED"
    assert turn.final_output == ANSWER


def test_a_run_without_a_valid_token_is_a_401_problem_and_starts_nothing(entry: Entry) -> None:
    for bearer in (None, token(claims(int(time.time()), client_id="another-client"))):
        response = _post_run(entry.port, "t3", bearer=bearer)
        assert response.status == 401
        assert response.getheader("Content-Type") == "application/problem+json"
        assert json.loads(response.read())["status"] == 401
    assert entry.services.chat_memory("alice-sub/t3").get_messages(10) == []


def test_a_body_of_two_declared_lengths_is_a_400_problem_and_starts_nothing(entry: Entry) -> None:
    # GIVEN a request that declares its body's length twice, differently (a proxy and this server could each
    # pick another length: request smuggling)
    body = json.dumps({"threadId": "t4", "runId": "run-t4", "messages": [], "state": {}, "tools": [], "context": []})
    connection = http.client.HTTPConnection("127.0.0.1", entry.port, timeout=WAIT_SECONDS)
    connection.putrequest("POST", f"/ag-ui/{AGENT}")
    connection.putheader("Authorization", f"Bearer {token(claims(int(time.time())))}")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(len(body)))
    connection.putheader("Content-Length", "2")
    connection.endheaders(body.encode())
    # WHEN it is answered
    response = connection.getresponse()
    # THEN it is refused as malformed, and nothing started
    assert response.status == 400
    assert response.getheader("Content-Type") == "application/problem+json"
    assert "Content-Length" in json.loads(response.read())["detail"]
    assert entry.services.chat_memory("alice-sub/t4").get_messages(10) == []


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_run_sh_starts_the_entry_as_the_web_adapter_expects(tmp_path: Path) -> None:
    # GIVEN the function folder's run.sh started as LWA's /opt/bootstrap starts a handler: LAMBDA_TASK_ROOT, the
    # port, and the issuer and audience the construct sets
    port = _free_port()
    env = {
        **os.environ,
        "LAMBDA_TASK_ROOT": str(ROOT / "functions" / "agui"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "AWS_LWA_PORT": str(port),
        "AGENTTURN_JWT_ISSUER": ISSUER,
        "AGENTTURN_JWT_AUDIENCE": CLIENT,
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "agentturn-test",
    }
    process = subprocess.Popen(
        ["sh", str(ROOT / "functions" / "agui" / "run.sh")],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # WHEN LWA's TCP readiness check polls the port (bounded)
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            assert process.poll() is None, process.stderr.read().decode()[-2000:] if process.stderr else ""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the entry never listened"
                time.sleep(0.05)
        # THEN the entry answers: an AG-UI run without a token is 401, an unknown route 404 (no services needed)
        assert _post_run(port, "t4", bearer=None).status == 401
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_SECONDS)
        connection.request("GET", "/turns/x")
        assert connection.getresponse().status == 404
    finally:
        process.terminate()
        process.wait(WAIT_SECONDS)
