"""The dev server's live timeline hub: the AppSync Events WebSocket subset, with a real WebSocket client."""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from agentturn.local.live import SUBPROTOCOL, LiveHub, header_subprotocol, self_signed_context

ORIGIN = "http://127.0.0.1:8787"


def _subject(headers: dict[str, Any]) -> str | None:
    user = headers.get("x-agentturn-dev-user", "dev-user")
    return user if isinstance(user, str) and user.isalnum() else None


@pytest.fixture
def hub() -> Iterator[LiveHub]:
    live = LiveHub(_subject, allowed_origins=lambda: frozenset({ORIGIN}), keepalive_seconds=0.05)
    live.start()
    yield live
    assert live.stop(5)


@contextmanager
def _connect(hub: LiveHub, user: str, origin: str = ORIGIN) -> Iterator[ClientConnection]:
    auth = header_subprotocol({"host": "127.0.0.1:8787", "x-agentturn-dev-user": user})
    with connect(hub.url, subprotocols=[SUBPROTOCOL, auth], origin=origin, open_timeout=5) as socket:  # type: ignore[list-item]
        socket.send(json.dumps({"type": "connection_init"}))
        assert json.loads(socket.recv(timeout=5))["type"] == "connection_ack"
        yield socket


def _next(socket: ClientConnection, *, skip_keepalive: bool = True) -> dict[str, Any]:
    while True:
        message = json.loads(socket.recv(timeout=5))
        if not (skip_keepalive and message["type"] == "ka"):
            return message


def test_a_subscriber_gets_what_is_published_on_its_own_channel() -> None:
    live = LiveHub(_subject, allowed_origins=lambda: frozenset({ORIGIN}))
    live.start()
    try:
        # GIVEN alice subscribed to her conversation's channel
        with _connect(live, "alice") as socket:
            socket.send(json.dumps({"type": "subscribe", "id": "s-1", "channel": "/agentturn/alice/c0ffee"}))
            assert _next(socket) == {"type": "subscribe_success", "id": "s-1"}

            # WHEN a handler publishes two events there, and one on bob's channel
            status, answer = live.publish_http(
                json.dumps({"channel": "/agentturn/alice/c0ffee", "events": ['{"n":1}', '{"n":2}']}).encode()
            )
            live.publish_http(json.dumps({"channel": "/agentturn/bob/c0ffee", "events": ['{"n":3}']}).encode())
            live.publish_http(json.dumps({"channel": "/agentturn/alice/c0ffee", "events": ['{"n":4}']}).encode())

            # THEN the publish succeeded and alice got her events, in order, as the JSON strings published
            assert status == 200
            assert [s["index"] for s in answer["successful"]] == [0, 1]
            assert answer["failed"] == []
            received = [_next(socket) for _ in range(3)]
            assert received == [{"type": "data", "id": "s-1", "event": f'{{"n":{n}}}'} for n in (1, 2, 4)]
    finally:
        live.stop(5)


def test_subscribing_to_another_users_channel_is_refused(hub: LiveHub) -> None:
    # GIVEN bob connected
    with _connect(hub, "bob") as socket:
        # WHEN he subscribes to alice's channel, also naming alice in the subscribe's authorization
        socket.send(json.dumps({"type": "subscribe", "id": "s-1", "channel": "/agentturn/alice/c0ffee"}))
        refused = _next(socket)
        socket.send(
            json.dumps(
                {
                    "type": "subscribe",
                    "id": "s-2",
                    "channel": "/agentturn/alice/c0ffee",
                    "authorization": {"x-agentturn-dev-user": "bob"},
                }
            )
        )
        refused_again = _next(socket)
        # AND alice's conversation gets an event
        hub.publish_http(json.dumps({"channel": "/agentturn/alice/c0ffee", "events": ['{"secret":1}']}).encode())
        socket.send(json.dumps({"type": "subscribe", "id": "s-3", "channel": "/agentturn/bob/c0ffee"}))

        # THEN both subscriptions were refused as unauthorized, and bob never saw alice's event
        assert refused["type"] == refused_again["type"] == "subscribe_error"
        assert refused["errors"][0]["errorType"] == "UnauthorizedException"
        assert _next(socket) == {"type": "subscribe_success", "id": "s-3"}


def test_a_connection_needs_authorization_and_an_allowed_origin(hub: LiveHub) -> None:
    # GIVEN / WHEN a client connects without the authorization subprotocol, THEN the handshake is refused
    with pytest.raises(InvalidStatus) as missing, connect(hub.url, subprotocols=[SUBPROTOCOL], origin=ORIGIN):  # type: ignore[list-item]
        pass
    assert missing.value.response.status_code == 401
    # AND a page on another site is refused too
    with pytest.raises(InvalidStatus) as foreign, _connect(hub, "alice", origin="http://evil.example"):
        pass
    assert foreign.value.response.status_code == 403


def test_keepalives_flow_and_bad_publishes_are_refused(hub: LiveHub) -> None:
    # GIVEN a connected client
    with _connect(hub, "alice") as socket:
        # WHEN it waits, THEN keep-alive messages arrive
        assert _next(socket, skip_keepalive=False) == {"type": "ka"}
    # AND publishes AppSync would refuse are refused: bad channel, too many events, non-JSON event
    for body in (
        {"channel": "/agentturn/a b/c", "events": ["{}"]},
        {"channel": "/agentturn/alice/c", "events": ["{}"] * 6},
        {"channel": "/agentturn/alice/c", "events": ["not json"]},
    ):
        status, answer = hub.publish_http(json.dumps(body).encode())
        assert status == 400, body
        assert answer["errors"][0]["errorType"] == "BadRequestException"


def test_the_tls_listener_takes_any_free_port_when_its_default_is_taken(tmp_path: Path) -> None:
    # GIVEN the TLS listener's default port held by another program
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        live = LiveHub(
            _subject,
            allowed_origins=lambda: frozenset({ORIGIN}),
            tls=self_signed_context(tmp_path),
            tls_port=port,
            tls_port_fallback=True,
        )
        # WHEN the hub starts THEN it listens with TLS elsewhere, and a client that trusts the certificate connects
        live.start()
        try:
            assert live.tls_port not in (0, port)
            assert live.amplify_endpoint == f"https://127.0.0.1:{live.tls_port}/event"
            trust = ssl.create_default_context(cafile=tmp_path / "live-cert.pem")
            auth = header_subprotocol({"host": "127.0.0.1", "x-agentturn-dev-user": "alice"})
            with connect(live.tls_url or "", subprotocols=[SUBPROTOCOL, auth], ssl=trust, open_timeout=5) as client:  # type: ignore[list-item]
                client.send(json.dumps({"type": "connection_init"}))
                assert json.loads(client.recv(timeout=5))["type"] == "connection_ack"
                # AND a person's publish is answered publish_error, as AppSync answers it
                client.send(
                    json.dumps({"type": "publish", "id": "p1", "channel": "/agentturn/alice/c", "events": ["{}"]})
                )
                answer = json.loads(client.recv(timeout=5))
                assert answer["type"] == "publish_error" and answer["id"] == "p1"
                assert answer["errors"][0]["errorType"] == "UnauthorizedException"
        finally:
            assert live.stop(5)
