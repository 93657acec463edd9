"""The live timeline on AppSync Events: HTTP publish (``POST https://{http domain}/event``) signed with SigV4.

One request per publish: ``{"channel": "/agentturn/...", "events": ["<JSON>", ...]}`` (at most 5 events,
each a JSON string), signed for the ``appsync`` service with the Lambda's own credentials (the role holds
``appsync:EventPublish`` on the channel namespace). A refusal, a timeout or an answer that lists failed
events raises :class:`LivePublishError`; :class:`agentturn.listeners.live.LiveFeed` logs and counts it, and the turn
goes on.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, Final

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from agentturn.listeners.live import LiveMessage, wire

#: AppSync Events takes at most this many events in one publish.
MAX_EVENTS: Final = 5
SERVICE: Final = "appsync"


class LivePublishError(RuntimeError):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.status))


class AppSyncEventsPublisher:
    """:class:`agentturn.listeners.live.TimelinePublisher` over an AppSync Events API's HTTP endpoint.

    ``endpoint`` is ``https://{http domain}/event`` (or the dev server's ``http://127.0.0.1:PORT/event``);
    credentials come from botocore's chain on first use (the Lambda's role) unless given.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        region: str,
        credentials: Credentials | None = None,
        timeout: float = 2.0,
    ) -> None:
        if not endpoint.startswith(("https://", "http://")):
            raise ValueError(f"endpoint {endpoint!r} must be an http(s) URL")
        if not region:
            raise ValueError("region must not be blank")
        self.endpoint = endpoint
        self.region = region
        self.timeout = timeout
        self._credentials = credentials
        self._lock = threading.Lock()
        #: How many publishes were sent (the benchmark reads it).
        self.sent = 0

    def publish(self, channel: str, messages: Sequence[LiveMessage]) -> None:
        for start in range(0, len(messages), MAX_EVENTS):
            self._send(channel, messages[start : start + MAX_EVENTS])

    def _send(self, channel: str, messages: Sequence[LiveMessage]) -> None:
        events = [json.dumps(wire(m), ensure_ascii=False, separators=(",", ":")) for m in messages]
        body = json.dumps({"channel": channel, "events": events}, ensure_ascii=False).encode()
        signed = AWSRequest(method="POST", url=self.endpoint, data=body, headers={"content-type": "application/json"})
        SigV4Auth(self._frozen_credentials(), SERVICE, self.region).add_auth(signed)
        request = urllib.request.Request(self.endpoint, data=body, headers=dict(signed.headers.items()), method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read(2048).decode("utf-8", errors="replace")
            raise LivePublishError(f"publish to {channel!r} refused: HTTP {exc.code}: {detail}", exc.code) from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise LivePublishError(f"publish to {channel!r} failed: {exc}") from exc
        with self._lock:
            self.sent += 1
        _raise_failed(channel, answer)

    def _frozen_credentials(self) -> Any:
        with self._lock:
            if self._credentials is None:
                import botocore.session

                found = botocore.session.get_session().get_credentials()
                if found is None:
                    raise LivePublishError("no AWS credentials to sign the publish with")
                self._credentials = found
            return self._credentials.get_frozen_credentials()


def _raise_failed(channel: str, answer: bytes) -> None:
    """AppSync answers 200 with ``{"successful": [...], "failed": [...]}``; a failed event is a failure."""
    try:
        document = json.loads(answer or b"{}")
    except json.JSONDecodeError:
        return
    failed = document.get("failed") if isinstance(document, dict) else None
    if failed:
        raise LivePublishError(f"publish to {channel!r}: {len(failed)} event(s) failed: {failed!r}")
