"""The AppSync Events publisher against a local HTTP server that records each request and re-checks its
SigV4 signature with botocore (the signing AppSync verifies)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from agentturn import Agent, InMemoryChatMemory, InMemoryTurnStore, Runner
from agentturn.api.live_channels import channel_of
from agentturn.aws.live_publisher import AppSyncEventsPublisher, LivePublishError
from agentturn.listeners.live import LiveFeed, StatusChanged, TextStreamed
from agentturn.ports.chat_model import ScriptedChatModel
from agentturn.state.messages import AiMessage
from agentturn.state.turn import TurnStatus
from tests.support.clock import FakeClock

CREDENTIALS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token-1")
REGION = "eu-west-1"


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class AppSyncDouble:
    """Answers like AppSync's publish endpoint: 200 with successful/failed, or the status it is told."""

    url: str = ""
    received: list[Recorded] = field(default_factory=list)
    status: int = 200
    fail_events: bool = False


@pytest.fixture
def appsync(monkeypatch: pytest.MonkeyPatch) -> Iterator[AppSyncDouble]:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    double = AppSyncDouble()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            double.received.append(Recorded(self.path, dict(self.headers.items()), body))
            events = json.loads(body)["events"]
            if double.status != 200:
                answer = {"errors": [{"errorType": "UnauthorizedException", "message": "You are not authorized."}]}
            elif double.fail_events:
                answer = {"successful": [], "failed": [{"identifier": "x", "index": 0, "code": 400, "message": "no"}]}
            else:
                successful = [{"identifier": f"id-{i}", "index": i} for i in range(len(events))]
                answer = {"successful": successful, "failed": []}
            data = json.dumps(answer).encode()
            self.send_response(double.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    double.url = f"http://127.0.0.1:{server.server_address[1]}/event"
    yield double
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _signature_is_valid(recorded: Recorded, url: str) -> bool:
    """Sign the received request again with the same time and credentials, over the headers it says it
    signed (as AppSync verifies it): the signatures must agree."""
    signed = recorded.headers["Authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    headers = {k: v for k, v in recorded.headers.items() if k.lower() in signed}
    request = AWSRequest(method="POST", url=url, data=recorded.body, headers=headers)
    request.context["timestamp"] = recorded.headers["X-Amz-Date"]
    signer = SigV4Auth(CREDENTIALS.get_frozen_credentials(), "appsync", REGION)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    return recorded.headers["Authorization"].endswith(f"Signature={expected}")


def test_a_publish_is_one_signed_request_with_the_messages_as_json_strings(appsync: AppSyncDouble) -> None:
    # GIVEN a publisher with the function's credentials
    publisher = AppSyncEventsPublisher(appsync.url, region=REGION, credentials=CREDENTIALS)
    status = StatusChanged(turn_id="t-1", conversation_id="chat-1", phase="thinking")
    delta = TextStreamed(turn_id="t-1", conversation_id="chat-1", call=1, offset=0, text="你好")

    # WHEN it publishes two messages on a channel
    publisher.publish("/agentturn/alice/0123abcd", [status, delta])

    # THEN one POST to /event carried the channel and each message as a JSON string, camelCase
    [sent] = appsync.received
    assert sent.path == "/event"
    body = json.loads(sent.body)
    assert body["channel"] == "/agentturn/alice/0123abcd"
    assert [json.loads(e) for e in body["events"]] == [
        {"type": "status", "turnId": "t-1", "conversationId": "chat-1", "phase": "thinking"},
        {"type": "delta", "turnId": "t-1", "conversationId": "chat-1", "call": 1, "offset": 0, "text": "你好"},
    ]
    # AND it was signed with SigV4 for appsync in the region, with the session token, and the signature holds
    authorization = sent.headers["Authorization"]
    assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/{sent.headers['X-Amz-Date'][:8]}/")
    assert f"/{REGION}/appsync/aws4_request" in authorization
    assert sent.headers["X-Amz-Security-Token"] == "session-token-1"
    assert _signature_is_valid(sent, appsync.url)


def test_more_than_five_messages_go_in_batches_of_five(appsync: AppSyncDouble) -> None:
    # GIVEN / WHEN seven messages are published at once
    publisher = AppSyncEventsPublisher(appsync.url, region=REGION, credentials=CREDENTIALS)
    messages = [StatusChanged(turn_id=f"t-{i}", conversation_id="c", phase="queued") for i in range(7)]
    publisher.publish("/agentturn/alice/c", messages)

    # THEN two requests went, of five and two events (AppSync's limit per publish)
    assert [len(json.loads(r.body)["events"]) for r in appsync.received] == [5, 2]
    assert publisher.sent == 2


def test_a_refused_or_failed_publish_is_an_error(appsync: AppSyncDouble) -> None:
    publisher = AppSyncEventsPublisher(appsync.url, region=REGION, credentials=CREDENTIALS)
    message = StatusChanged(turn_id="t-1", conversation_id="c", phase="queued")
    # GIVEN AppSync refusing the caller, WHEN it publishes, THEN the error names the status
    appsync.status = 401
    with pytest.raises(LivePublishError) as refused:
        publisher.publish("/agentturn/alice/c", [message])
    assert refused.value.status == 401
    # AND an answer that lists a failed event is an error too
    appsync.status, appsync.fail_events = 200, True
    with pytest.raises(LivePublishError, match="1 event"):
        publisher.publish("/agentturn/alice/c", [message])


def test_a_turn_completes_while_every_publish_is_refused(appsync: AppSyncDouble) -> None:
    # GIVEN a feed whose publishes are all refused (a missing permission, say)
    appsync.status = 403
    failures: list[str] = []
    clock = FakeClock()
    publisher = AppSyncEventsPublisher(appsync.url, region=REGION, credentials=CREDENTIALS)
    feed = LiveFeed(publisher, channel_of, clock=clock, on_failure=lambda message, exc: failures.append(message.type))
    model = ScriptedChatModel([AiMessage(content="all done here")], chunk_chars=3)
    agent = Agent(id="writer", instructions="", chat_model=model)
    runner = Runner(InMemoryTurnStore(clock=clock), InMemoryChatMemory(), [agent], [feed], clock=clock)

    # WHEN a turn runs
    turn = runner.run(agent, "alice/chat-1", "write")

    # THEN it completed, and each failed publish was counted
    assert turn.status is TurnStatus.COMPLETED
    assert len(failures) == len(appsync.received) > 0
    assert "timeline" in failures
