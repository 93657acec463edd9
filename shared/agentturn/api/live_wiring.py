"""The handlers' live timeline and notices, from the environment the stack sets.

``AGENTTURN_LIVE_ENDPOINT`` (the AppSync Events HTTP publish URL, ``https://{http domain}/event``; the dev
server's own locally) turns on :class:`~agentturn.listeners.live.LiveFeed`; ``AGENTTURN_EVENT_BUS`` (the bus's name)
turns on :class:`~agentturn.listeners.notifications.TurnNotifier`, for the notices ``AGENTTURN_NOTICES`` names (a
:class:`~agentturn.listeners.notifications.TurnNotices` value; absent: all, as before the setting existed).
Neither set: no listener, nothing imported. ``AGENTTURN_TRACE`` (a file; ``agentturn dev``'s timing trace, never
deployed) puts :class:`~agentturn.listeners.trace.TraceListener` first. A failed publish or notice is logged and counted
(``LivePublishFailed``, ``NoticesFailed``) as an EMF metric of its own, since it happens inside a turn, away from
the handler's telemetry.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from agentturn.engine.events import Listener

ENV_LIVE_ENDPOINT: Final = "AGENTTURN_LIVE_ENDPOINT"
ENV_EVENT_BUS: Final = "AGENTTURN_EVENT_BUS"
ENV_NOTICES: Final = "AGENTTURN_NOTICES"
ENV_TRACE: Final = "AGENTTURN_TRACE"


def live_listeners(environ: Mapping[str, str] | None = None, *, events_client: Any = None) -> list[Listener]:
    env = os.environ if environ is None else environ
    listeners: list[Listener] = []
    trace = env.get(ENV_TRACE, "").strip()
    if trace:
        from agentturn.listeners.trace import TraceListener, trace_at

        listeners.append(TraceListener(trace_at(trace)))
    endpoint = env.get(ENV_LIVE_ENDPOINT, "").strip()
    if endpoint:
        from agentturn.api.live_channels import channel_of
        from agentturn.aws.live_publisher import AppSyncEventsPublisher
        from agentturn.listeners.live import LiveFeed

        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
        publisher = AppSyncEventsPublisher(endpoint, region=region)
        listeners.append(LiveFeed(publisher, channel_of, on_failure=lambda *_: _count("LivePublishFailed")))
    bus = env.get(ENV_EVENT_BUS, "").strip()
    if bus:
        from agentturn.api.live_channels import owner_and_conversation
        from agentturn.aws.notifier import EventBridgeNotifier
        from agentturn.listeners.notifications import TurnNotices, TurnNotifier

        wanted = env.get(ENV_NOTICES, "").strip() or TurnNotices.ALL.value
        try:
            notices = TurnNotices(wanted)
        except ValueError:
            choices = ", ".join(repr(n.value) for n in TurnNotices)
            raise ValueError(f"{ENV_NOTICES} must be one of {choices}, not {wanted!r}") from None

        if events_client is None:
            from agentturn.aws.notifier import events_client as make_events_client

            events_client = make_events_client()
        notifier = EventBridgeNotifier(bus, events_client)
        listeners.append(
            TurnNotifier(
                notifier,
                owner_and_conversation,
                on_failure=lambda *_: _count("NoticesFailed"),
                kinds=notices.kinds,
            )
        )
    return listeners


def _count(name: str) -> None:
    try:
        from aws_lambda_powertools.metrics import MetricUnit, single_metric

        from agentturn.api.lambdas import metrics_namespace
    except ImportError:  # the core without the [aws] extra: the log line is all there is
        return
    with single_metric(name=name, unit=MetricUnit.Count, value=1, namespace=metrics_namespace()):
        pass
