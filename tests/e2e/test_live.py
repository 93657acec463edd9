"""The live timeline of ``agentturn dev`` with a WebSocket client: the handlers' publishes (AppSync Events'
HTTP publish, SigV4-signed, as deployed) reach a subscriber of the conversation's channel, and nobody else's."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from websockets.sync.client import ClientConnection, connect

from agentturn.api.live_channels import channel_for
from agentturn.local.live import SUBPROTOCOL, header_subprotocol
from tests.e2e.agents import SLOW_SUPPORT_ID, SLOW_WRITER_ID
from tests.e2e.conftest import DevProcess

TICKET = "create a high priority login incident ticket"


@contextmanager
def subscriber(dev_server: DevProcess, user: str, channel: str) -> Iterator[tuple[ClientConnection, dict[str, Any]]]:
    status, info = dev_server.request("GET", "/_dev/info")
    assert status == 200
    live = info["live"]
    auth = header_subprotocol({"host": live["host"], "x-agentturn-dev-user": user})
    origin = dev_server.url.rstrip("/")
    with connect(live["realtimeUrl"], subprotocols=[SUBPROTOCOL, auth], origin=origin, open_timeout=10) as socket:  # type: ignore[list-item]
        socket.send(json.dumps({"type": "connection_init"}))
        assert json.loads(socket.recv(timeout=10))["type"] == "connection_ack"
        socket.send(json.dumps({"type": "subscribe", "id": "s-1", "channel": channel}))
        yield socket, json.loads(socket.recv(timeout=10))


def received_until(socket: ClientConnection, done: Any, timeout: float = 30.0) -> list[dict[str, Any]]:
    """The published events, until ``done(events)`` holds (bounded in time)."""
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while not done(events):
        left = deadline - time.monotonic()
        assert left > 0, f"not done in {timeout} s; got {events}"
        message = json.loads(socket.recv(timeout=left))
        if message["type"] == "data":
            events.append(json.loads(message["event"]))
    return events


def _settled(events: list[dict[str, Any]]) -> bool:
    """A save whose status is neither READY nor RUNNING: the turn waits for a person, or it ended."""
    return any(e["type"] == "timeline" and e["status"] not in ("READY", "RUNNING") for e in events)


def test_a_subscriber_sees_statuses_streamed_text_and_timeline_notices(dev_server: DevProcess) -> None:
    # GIVEN dev-user subscribed to the channel of a new conversation
    conversation = f"c-live-{uuid.uuid4().hex[:8]}"
    with subscriber(dev_server, "dev-user", channel_for("dev-user", conversation) or "") as (socket, answer):
        assert answer == {"type": "subscribe_success", "id": "s-1"}

        # WHEN a turn starts there whose model thinks 0.5 s, then streams its answer for ~3.5 s
        status, turn = dev_server.request(
            "POST", f"/conversations/{conversation}/turns", {"input": "hello", "agentId": SLOW_WRITER_ID}
        )
        assert status in (200, 201, 202), turn
        events = received_until(socket, _settled)

    # THEN it saw the turn thinking, then the text as it streamed, then the save that ended it; not the start
    # (the request that started it answered that)
    assert (events[0]["type"], events[0].get("phase")) == ("status", "thinking")
    assert [e["phase"] for e in events if e["type"] == "status"] == ["thinking"]
    assert events[-1]["type"] == "timeline"
    assert events[-1]["status"] == "COMPLETED"
    deltas = [e for e in events if e["type"] == "delta"]
    assert len(deltas) > 1, events
    assert [d["offset"] for d in deltas] == [sum(len(d["text"]) for d in deltas[:i]) for i in range(len(deltas))]
    text = "".join(d["text"] for d in deltas)
    # AND the streamed text is the start of the answer the timeline then shows (its last piece may come with
    # the save that holds it)
    status, timeline = dev_server.request("GET", f"/conversations/{conversation}/messages")
    assert status == 200
    answers = [m["content"] for m in timeline["messages"] if "toolCalls" in m]
    assert answers[-1].startswith(text) and len(text) > len(answers[-1]) // 2
    # AND the one save told was told by version (ids and versions only: no content in a notice)
    notices = [e for e in events if e["type"] == "timeline"]
    assert len(notices) == 1
    assert {e["turnId"] for e in events} == {turn["turnId"]}
    assert all(set(n) == {"type", "turnId", "conversationId", "version", "status"} for n in notices)
    assert {e["conversationId"] for e in events} == {conversation}


def test_a_subscriber_sees_a_form_turn_suspend(dev_server: DevProcess) -> None:
    # GIVEN alice subscribed to her conversation
    conversation = f"c-live-{uuid.uuid4().hex[:8]}"
    alice = {"X-Agentturn-Dev-User": "alice"}
    with subscriber(dev_server, "alice", channel_for("alice", conversation) or "") as (socket, answer):
        assert answer["type"] == "subscribe_success"
        # WHEN her turn asks for a form, its model and its tool each taking longer than the status window
        status, _ = dev_server.request(
            "POST", f"/conversations/{conversation}/turns", {"input": TICKET, "agentId": SLOW_SUPPORT_ID}, alice
        )
        assert status in (200, 201, 202)
        events = received_until(socket, _settled)

    # THEN she saw it think, run the tool, and then the save that makes it wait for her
    phases = [(e["phase"], e.get("toolName")) for e in events if e["type"] == "status"]
    assert phases == [("thinking", None), ("running", "create_support_ticket")]
    assert (events[-1]["type"], events[-1]["status"]) == ("timeline", "WAITING_FOR_USER")


def test_a_quick_form_turn_is_one_message(dev_server: DevProcess) -> None:
    # GIVEN alice subscribed to her conversation
    conversation = f"c-live-{uuid.uuid4().hex[:8]}"
    alice = {"X-Agentturn-Dev-User": "alice"}
    with subscriber(dev_server, "alice", channel_for("alice", conversation) or "") as (socket, answer):
        assert answer["type"] == "subscribe_success"
        # WHEN her turn asks for a form at once (the demo model, an instant tool)
        status, _ = dev_server.request(
            "POST", f"/conversations/{conversation}/turns", {"input": TICKET, "agentId": "support-agent"}, alice
        )
        assert status in (200, 201, 202)
        events = received_until(socket, _settled)

    # THEN one message told her all of it: the save that makes it wait (phases over within the window are not
    # pushed; what the save added is in the timeline when it comes)
    assert [(e["type"], e.get("status")) for e in events] == [("timeline", "WAITING_FOR_USER")]
    status, timeline = dev_server.request("GET", f"/conversations/{conversation}/messages", headers=alice)
    assert status == 200
    assert any(m.get("type") == "agent_form" for m in timeline["messages"]), timeline


def test_another_users_channel_is_refused(dev_server: DevProcess) -> None:
    # GIVEN bob, WHEN he subscribes to alice's conversation channel
    with subscriber(dev_server, "bob", channel_for("alice", "c-private") or "") as (_, answer):
        # THEN the subscription is refused as unauthorized
        assert answer["type"] == "subscribe_error"
        assert answer["errors"][0]["errorType"] == "UnauthorizedException"


def test_an_unsigned_publish_is_refused(dev_server: DevProcess) -> None:
    # GIVEN / WHEN a page (or anyone) posts to the publish endpoint without a SigV4 signature
    status, body = dev_server.request(
        "POST", "/event", {"channel": channel_for("alice", "c-1"), "events": ['{"type":"timeline"}']}
    )
    # THEN it is refused, as AppSync refuses what is not signed with publish rights
    assert status == 401
    assert body["errors"][0]["errorType"] == "UnauthorizedException"
