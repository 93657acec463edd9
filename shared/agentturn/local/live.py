"""The live timeline of ``agentturn dev``: the subset of the AppSync Events protocol the console speaks.

Publishing is AppSync's HTTP publish: the handlers' :class:`~agentturn.aws.live_publisher.AppSyncEventsPublisher`
posts ``{"channel", "events": ["<JSON>", ...]}`` to the gateway's ``POST /event`` (signed with SigV4,
as deployed; the signature is not checked here, there is no secret to check it with), which hands it to
:meth:`LiveHub.publish`. Subscribing is AppSync's WebSocket protocol, on its own port:

- the handshake offers the subprotocols ``aws-appsync-event-ws`` and ``header-<base64url JSON>``, the
  JSON holding the authorization headers; locally the caller is the dev user of
  ``x-agentturn-dev-user`` (the same switch the gateway honours), where AppSync would verify a JWT;
- ``connection_init`` → ``connection_ack`` (with ``connectionTimeoutMs``), then ``ka`` every
  ``keepalive_seconds``;
- ``subscribe`` (``id``, ``channel``, optional ``authorization``) → ``subscribe_success``, or
  ``subscribe_error`` with ``UnauthorizedException`` when the channel is not the caller's: the rule of the
  deployed channel namespace's onSubscribe handler (the channel's second segment is the caller's ``sub``);
- ``data`` (``id``, ``event``: the published JSON string) for each event on a subscribed channel;
- ``unsubscribe`` → ``unsubscribe_success``;
- ``publish`` (``id``, ``channel``, ``events``, ``authorization``) → ``publish_success`` (``successful``:
  ``identifier`` and ``index`` per event, ``failed``) or ``publish_error``: as deployed, only IAM (a SigV4
  ``Authorization``; not verified here) may publish, so a person's publish is ``UnauthorizedException``.

Besides the plain ``ws://`` listener the console uses, :class:`LiveHub` can listen with TLS
(``tls=``), for clients built for AppSync: AWS Amplify's Events client derives
``wss://<endpoint host:port>/event/realtime`` from the configured HTTP endpoint (``https://host:port/event``)
and will not speak plain ``ws://``. :func:`self_signed_context` makes the certificate ``agentturn dev`` uses.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import errno
import json
import logging
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Final

from agentturn.listeners.trace import TracePoint, current
from agentturn.local.log import LOGGER_NAME

if TYPE_CHECKING:
    import ssl
    from pathlib import Path

_log = logging.getLogger(LOGGER_NAME)

SUBPROTOCOL: Final = "aws-appsync-event-ws"
REALTIME_PATH: Final = "/event/realtime"
CONNECTION_TIMEOUT_MS: Final = 300_000
#: AppSync's channel rules: 1-5 segments of letters, digits and dashes, at most 50 characters each.
_CHANNEL: Final = re.compile(r"^(/[A-Za-z0-9-]{1,50}){1,5}$")
_MAX_EVENTS: Final = 5
#: Page origins the TLS listener accepts: any port of this machine (a team's own dev server, say), never a
#: named site (a DNS-rebinding page has its own name as origin).
_LOOPBACK_ORIGIN: Final = re.compile(r"^https?://(127\.0\.0\.1|localhost|\[::1\])(:\d{1,5})?$")
#: What an IAM-signed (SigV4) request's Authorization header starts with: the only publisher AppSync lets in.
_SIGV4: Final = "AWS4-HMAC-SHA256 "

#: ``authorization headers → subject`` (None: not authorized).
Authenticate = Callable[[dict[str, Any]], "str | None"]


class PublishRefused(ValueError):
    """A publish that AppSync would refuse (bad channel, too many or non-JSON events)."""


@dataclass(eq=False)  # each connection is itself, kept in a set
class _Connection:
    socket: Any
    subject: str
    subscriptions: dict[str, str] = field(default_factory=dict)  # subscription id → channel


def header_subprotocol(headers: dict[str, Any]) -> str:
    """``header-<base64url(JSON)>``: how a browser passes authorization headers in a WebSocket handshake."""
    encoded = base64.urlsafe_b64encode(json.dumps(headers).encode()).decode().rstrip("=")
    return f"header-{encoded}"


def _read_header_subprotocol(protocols: Sequence[str]) -> dict[str, Any] | None:
    for protocol in protocols:
        if protocol.startswith("header-"):
            encoded = protocol[len("header-") :]
            try:
                decoded = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
            except (binascii.Error, ValueError):
                return None
            return decoded if isinstance(decoded, dict) else None
    return None


def owns_channel(subject: str, channel: str) -> bool:
    """The deployed onSubscribe rule: ``/agentturn/{sub}/...`` may be subscribed to by ``sub`` alone."""
    segments = channel.strip("/").split("/")
    return len(segments) >= 3 and segments[1] == subject


class LiveHub:
    """Channels and their WebSocket subscribers; ``publish`` may be called from any thread."""

    def __init__(
        self,
        authenticate: Authenticate,
        *,
        allowed_origins: Callable[[], frozenset[str]] = frozenset,
        keepalive_seconds: float = 30.0,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: ssl.SSLContext | None = None,
        tls_port: int = 0,
        tls_port_fallback: bool = False,
        certificate: Path | None = None,
    ) -> None:
        self.authenticate = authenticate
        self.allowed_origins = allowed_origins
        self.keepalive_seconds = keepalive_seconds
        self.host = host
        self.requested_port = port
        self.port = 0
        self.tls = tls
        self.requested_tls_port = tls_port
        #: Whether a taken ``tls_port`` may be replaced by any free one (a default port, not one asked for).
        self.tls_port_fallback = tls_port_fallback
        #: The TLS listener's port (0: none).
        self.tls_port = 0
        #: The TLS listener's certificate (PEM), for a client to trust.
        self.certificate = certificate
        self._connections: set[_Connection] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._failure: BaseException | None = None
        #: Publishes accepted (the benchmark and tests read it).
        self.published = 0

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}{REALTIME_PATH}"

    @property
    def tls_url(self) -> str | None:
        return f"wss://{self.host}:{self.tls_port}{REALTIME_PATH}" if self.tls_port else None

    @property
    def amplify_endpoint(self) -> str | None:
        """What AWS Amplify's ``API.Events.endpoint`` names: it adds ``/realtime`` and speaks ``wss://``."""
        return f"https://{self.host}:{self.tls_port}/event" if self.tls_port else None

    # ------------------------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 10.0) -> None:
        self._thread = threading.Thread(target=self._run, name="live-hub", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("the live WebSocket server did not start in time")
        if self._failure is not None:
            raise RuntimeError(f"the live WebSocket server did not start: {self._failure}") from self._failure

    def stop(self, timeout: float = 5.0) -> bool:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported to start(); the thread ends either way
            self._failure = exc
            self._ready.set()

    async def _serve(self) -> None:
        from websockets.asyncio.server import serve

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with contextlib.AsyncExitStack() as listeners:
            server = await listeners.enter_async_context(
                serve(
                    self._connection,
                    self.host,
                    self.requested_port,
                    subprotocols=[SUBPROTOCOL],  # type: ignore[list-item]
                    select_subprotocol=self._select_subprotocol,
                    process_request=self._check_request,
                )
            )
            self.port = int(next(iter(server.sockets)).getsockname()[1])
            if self.tls is not None:
                try:
                    secure = await listeners.enter_async_context(self._serve_tls(self.requested_tls_port))
                except OSError as exc:
                    if exc.errno != errno.EADDRINUSE or not self.tls_port_fallback:
                        raise
                    # The default port (the one after the console's) is taken: any free one, said in the banner.
                    secure = await listeners.enter_async_context(self._serve_tls(0))
                self.tls_port = int(next(iter(secure.sockets)).getsockname()[1])
            self._ready.set()
            await self._stop.wait()

    def _serve_tls(self, port: int) -> Any:
        from websockets.asyncio.server import serve

        return serve(
            self._connection,
            self.host,
            port,
            ssl=self.tls,
            subprotocols=[SUBPROTOCOL],  # type: ignore[list-item]
            select_subprotocol=self._select_subprotocol,
            process_request=self._check_tls_request,
        )

    # ------------------------------------------------------------------------------------ handshake

    def _select_subprotocol(self, connection: Any, protocols: Sequence[str]) -> Any:
        return SUBPROTOCOL if SUBPROTOCOL in protocols else None

    def _check_request(self, connection: Any, request: Any) -> Any:
        return self._check(connection, request, lambda origin: origin in self.allowed_origins())

    def _check_tls_request(self, connection: Any, request: Any) -> Any:
        # A team's own page (its dev server on another port of this machine) connects here with Amplify.
        return self._check(connection, request, lambda origin: bool(_LOOPBACK_ORIGIN.match(origin)))

    def _check(self, connection: Any, request: Any, origin_allowed: Callable[[str], bool]) -> Any:
        if request.path.split("?")[0] != REALTIME_PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, "no such endpoint\n")
        origin = request.headers.get("Origin")
        if origin is not None and self.allowed_origins() and not origin_allowed(origin):
            # A page on another site must not read a developer's conversations (DNS rebinding, CSRF).
            return connection.respond(HTTPStatus.FORBIDDEN, "origin not allowed\n")
        protocols = [p.strip() for p in ",".join(request.headers.get_all("Sec-WebSocket-Protocol")).split(",")]
        if SUBPROTOCOL not in protocols:
            return connection.respond(HTTPStatus.BAD_REQUEST, f"the subprotocol {SUBPROTOCOL} is required\n")
        headers = _read_header_subprotocol(protocols)
        if headers is None or self.authenticate(headers) is None:
            return connection.respond(HTTPStatus.UNAUTHORIZED, "not authorized\n")
        return None

    # ------------------------------------------------------------------------------------ messages

    async def _connection(self, socket: Any) -> None:
        protocols = [p.strip() for p in ",".join(socket.request.headers.get_all("Sec-WebSocket-Protocol")).split(",")]
        subject = self.authenticate(_read_header_subprotocol(protocols) or {})
        if subject is None:  # checked in the handshake; kept for safety
            await socket.close(4401, "not authorized")
            return
        connection = _Connection(socket, subject)
        self._connections.add(connection)
        keepalive: asyncio.Task[None] | None = None
        try:
            async for raw in socket:
                try:
                    message = json.loads(raw)
                except (TypeError, ValueError):
                    await self._send(connection, _error(None, "BadRequestException", "a message must be JSON"))
                    continue
                kind = message.get("type") if isinstance(message, dict) else None
                if kind == "connection_init":
                    await self._send(
                        connection, {"type": "connection_ack", "connectionTimeoutMs": CONNECTION_TIMEOUT_MS}
                    )
                    if keepalive is None:
                        keepalive = asyncio.create_task(self._keepalive(connection))
                elif kind == "subscribe":
                    await self._subscribe(connection, message)
                elif kind == "publish":
                    await self._publish_from(connection, message)
                elif kind == "unsubscribe":
                    sid = str(message.get("id", ""))
                    connection.subscriptions.pop(sid, None)
                    await self._send(connection, {"type": "unsubscribe_success", "id": sid})
                else:
                    named = message.get("id") if isinstance(message, dict) else None
                    await self._send(connection, _error(named, "UnsupportedOperation", f"unsupported type {kind!r}"))
        except Exception as exc:  # a dropped connection ends like a closed one
            if not _is_closed(exc):
                raise
        finally:
            if keepalive is not None:
                keepalive.cancel()
            self._connections.discard(connection)

    async def _subscribe(self, connection: _Connection, message: dict[str, Any]) -> None:
        sid = message.get("id")
        channel = message.get("channel")
        if not isinstance(sid, str) or not sid or not isinstance(channel, str) or not _CHANNEL.match(channel):
            await self._send(
                connection, _subscribe_error(sid, "BadRequestException", "a subscribe needs an id and a valid channel")
            )
            return
        subject = connection.subject
        authorization = message.get("authorization")
        if isinstance(authorization, dict):
            subject = self.authenticate(authorization) or ""
        if not subject or not owns_channel(subject, channel):
            _log.info("live: refused %r subscribing to %s", subject, channel)
            await self._send(
                connection, _subscribe_error(sid, "UnauthorizedException", "you may not subscribe to this channel")
            )
            return
        connection.subscriptions[sid] = channel
        await self._send(connection, {"type": "subscribe_success", "id": sid})

    async def _publish_from(self, connection: _Connection, message: dict[str, Any]) -> None:
        """A publish over the WebSocket, answered as AppSync answers it (``publish_success``/``publish_error``
        with the message's ``id``): what lets a client's ``publish()`` settle."""
        pid = message.get("id")
        if not isinstance(pid, str) or not pid:
            await self._send(connection, _error(None, "BadRequestException", "a publish needs an id"))
            return
        authorization = message.get("authorization")
        signed = isinstance(authorization, dict) and any(
            key.lower() == "authorization" and isinstance(value, str) and value.startswith(_SIGV4)
            for key, value in authorization.items()
        )
        if not signed:
            # The deployed channel namespace publishes with IAM only: the handlers publish, people subscribe.
            await self._send(
                connection,
                _publish_error(pid, "UnauthorizedException", "publishing to this channel needs IAM authorization"),
            )
            return
        channel, events = message.get("channel"), message.get("events")
        try:
            _check_publish(channel, events)
        except PublishRefused as exc:
            await self._send(connection, _publish_error(pid, "BadRequestException", str(exc)))
            return
        assert isinstance(channel, str)  # checked above
        assert isinstance(events, list)
        self.published += 1
        await self._deliver(channel, list(events))
        successful = [{"identifier": str(uuid.uuid4()), "index": index} for index in range(len(events))]
        await self._send(connection, {"type": "publish_success", "id": pid, "successful": successful, "failed": []})

    async def _keepalive(self, connection: _Connection) -> None:
        while True:
            await asyncio.sleep(self.keepalive_seconds)
            await self._send(connection, {"type": "ka"})

    async def _send(self, connection: _Connection, message: dict[str, Any]) -> None:
        with contextlib.suppress(Exception):  # a connection that went away is dropped by its own loop
            await connection.socket.send(json.dumps(message))

    # ------------------------------------------------------------------------------------ publishing

    def publish(self, channel: str, events: Sequence[str]) -> list[str]:
        """Deliver ``events`` (JSON strings) to the channel's subscribers; returns their identifiers."""
        _check_publish(channel, events)
        loop = self._loop
        if loop is None:
            raise PublishRefused("the live server is not running")
        self.published += 1
        trace = current()
        traced = [_traced(event) for event in events] if trace is not None else []
        if trace is not None:
            for fields in traced:
                trace.mark(TracePoint.LIVE_RECEIVED, fields)
        future = asyncio.run_coroutine_threadsafe(self._deliver(channel, list(events)), loop)
        # Delivered in publish order: the publisher (a handler thread) waits, as an HTTP publish would.
        future.result(timeout=5)
        if trace is not None:
            for fields in traced:
                trace.mark(TracePoint.LIVE_DELIVERED, fields)
        return [str(uuid.uuid4()) for _ in events]

    async def _deliver(self, channel: str, events: list[str]) -> None:
        for connection in list(self._connections):
            for sid, subscribed in list(connection.subscriptions.items()):
                if subscribed == channel:
                    for event in events:
                        await self._send(connection, {"type": "data", "id": sid, "event": event})

    def publish_http(self, body: bytes) -> tuple[int, dict[str, Any]]:
        """AppSync's ``POST /event``: (status, answer)."""
        try:
            document = json.loads(body or b"null")
        except ValueError:
            return 400, {"errors": [{"errorType": "BadRequestException", "message": "the body is not JSON"}]}
        if not isinstance(document, dict) or not isinstance(document.get("channel"), str):
            return 400, {"errors": [{"errorType": "BadRequestException", "message": "channel is required"}]}
        events = document.get("events")
        if not isinstance(events, list):
            return 400, {"errors": [{"errorType": "BadRequestException", "message": "events must be a list"}]}
        channel = document["channel"]
        try:
            ids = self.publish(channel if channel.startswith("/") else f"/{channel}", events)
        except PublishRefused as exc:
            return 400, {"errors": [{"errorType": "BadRequestException", "message": str(exc)}]}
        return 200, {"successful": [{"identifier": i, "index": n} for n, i in enumerate(ids)], "failed": []}


def _traced(event: str) -> dict[str, Any]:
    """What the trace says of a published event: its turn and kind (a checked publish is JSON)."""
    document = json.loads(event)
    if not isinstance(document, dict):
        return {}
    return {"turn": document.get("turnId"), "kind": document.get("type")}


def _check_publish(channel: Any, events: Any) -> None:
    """AppSync's rules for a publish: a valid channel path, 1 to 5 events, each a JSON document in a string."""
    if not isinstance(channel, str) or not isinstance(events, list | tuple):
        raise PublishRefused("a publish needs a channel and a list of events")
    if not _CHANNEL.match(channel):
        raise PublishRefused(f"channel {channel!r} is not a valid channel path")
    if not 1 <= len(events) <= _MAX_EVENTS:
        raise PublishRefused(f"publish 1 to {_MAX_EVENTS} events, not {len(events)}")
    for event in events:
        if not isinstance(event, str):
            raise PublishRefused("each event must be a JSON string")
        try:
            json.loads(event)
        except ValueError as exc:
            raise PublishRefused(f"an event is not valid JSON: {exc}") from None


def self_signed_context(folder: Path, host: str = "127.0.0.1") -> ssl.SSLContext:
    """A server TLS context with a new self-signed certificate for ``host`` and ``localhost``, written to
    ``folder/live-cert.pem`` (what a client trusts: ``NODE_EXTRA_CA_CERTS``, or the browser's exception) and
    ``folder/live-key.pem``. Made at each start: nothing outlives the dev server that needs it."""
    import datetime
    import ipaddress
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "agentturn dev")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host)), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = folder / "live-cert.pem", folder / "live-key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.touch(mode=0o600)
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return context


def _publish_error(pid: str, kind: str, text: str) -> dict[str, Any]:
    return {"type": "publish_error", "id": pid, "errors": [{"errorType": kind, "message": text}]}


def _error(sid: Any, kind: str, text: str) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "error", "errors": [{"errorType": kind, "message": text}]}
    if isinstance(sid, str):
        message["id"] = sid
    return message


def _subscribe_error(sid: Any, kind: str, text: str) -> dict[str, Any]:
    return {"type": "subscribe_error", "id": sid, "errors": [{"errorType": kind, "message": text}]}


def _is_closed(exc: Exception) -> bool:
    from websockets.exceptions import ConnectionClosed

    return isinstance(exc, ConnectionClosed)
