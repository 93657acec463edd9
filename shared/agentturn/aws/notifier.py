"""Turn notices on Amazon EventBridge: one ``PutEvents`` entry per suspension or terminal state.

``Source`` is ``agentturn``, ``DetailType`` is ``Turn suspended`` / ``Turn completed`` / ``Turn failed`` /
``Turn cancelled`` / ``Turn reminder`` / ``Turn escalated``, and ``Detail`` is the
:class:`agentturn.listeners.notifications.TurnNotice` (camelCase JSON: ids, kind, formKey or toolName, deadline;
never form data). A refused entry raises :class:`NoticeError`, which
:class:`agentturn.listeners.notifications.TurnNotifier` logs and counts.
"""

from __future__ import annotations

import json
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from agentturn.listeners.notifications import TurnNotice

SOURCE: Final = "agentturn"
DETAIL_TYPES: Final = {
    "SUSPENDED": "Turn suspended",
    "COMPLETED": "Turn completed",
    "FAILED": "Turn failed",
    "CANCELLED": "Turn cancelled",
    "REMINDER": "Turn reminder",
    "ESCALATED": "Turn escalated",
}


def events_client() -> Any:
    """A boto3 ``events`` client with the adapters' timeouts and retries."""
    import boto3

    from agentturn.aws._support import client_config

    return boto3.client("events", config=client_config())


class NoticeError(RuntimeError):
    pass


class EventBridgeNotifier:
    """:class:`agentturn.listeners.notifications.NoticeSink` on the event bus ``bus_name`` (a name or an ARN)."""

    def __init__(self, bus_name: str, client: Any) -> None:
        # ``client`` is a boto3 ``events`` client (its stubs are not among the typed ones here).
        if not bus_name.strip():
            raise ValueError("bus_name must not be blank")
        self.bus_name = bus_name
        self.client = client

    def send(self, notice: TurnNotice) -> None:
        detail = notice.model_dump(mode="json", by_alias=True, exclude_none=True)
        entry = {
            "Source": SOURCE,
            "DetailType": DETAIL_TYPES[notice.kind],
            "Detail": json.dumps(detail, ensure_ascii=False),
            "EventBusName": self.bus_name,
            "Resources": [],
        }
        try:
            answer = self.client.put_events(Entries=[entry])
        except (ClientError, BotoCoreError) as exc:
            raise NoticeError(f"notice {notice.kind} of turn {notice.turn_id!r} not put: {exc}") from exc
        if answer.get("FailedEntryCount", 0):
            [result] = answer["Entries"]
            raise NoticeError(
                f"notice {notice.kind} of turn {notice.turn_id!r} refused: "
                f"{result.get('ErrorCode')!r}: {result.get('ErrorMessage')!r}"
            )
