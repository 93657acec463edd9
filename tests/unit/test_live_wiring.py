"""The handlers' live timeline and notices, from the environment the stack sets."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentturn.api.live_wiring import ENV_EVENT_BUS, ENV_LIVE_ENDPOINT, ENV_NOTICES, live_listeners
from agentturn.aws.live_publisher import AppSyncEventsPublisher
from agentturn.aws.notifier import EventBridgeNotifier
from agentturn.engine.events import Event, EventType
from agentturn.listeners.live import LiveFeed
from agentturn.listeners.notifications import TurnNotifier


class RefusingEvents:
    """An events client whose every entry is refused (what PutEvents answers for a missing permission)."""

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        return {"FailedEntryCount": 1, "Entries": [{"ErrorCode": "AccessDeniedException", "ErrorMessage": "no"}]}


def test_nothing_is_wired_without_the_variables() -> None:
    # GIVEN / WHEN an environment without the live endpoint and the bus, THEN no listener (nothing imported)
    assert live_listeners({}) == []


def test_the_stacks_variables_wire_the_feed_and_the_notifier() -> None:
    # GIVEN the variables the construct sets
    env = {
        ENV_LIVE_ENDPOINT: "https://abc.appsync-api.eu-west-1.amazonaws.com/event",
        ENV_EVENT_BUS: "notices",
        "AWS_REGION": "eu-west-1",
    }

    # WHEN the handlers wire themselves
    feed, notifier = live_listeners(env, events_client=RefusingEvents())

    # THEN the feed publishes to that endpoint, signed for that region, and the notifier puts on that bus
    assert isinstance(feed, LiveFeed)
    assert isinstance(feed.publisher, AppSyncEventsPublisher)
    assert (feed.publisher.endpoint, feed.publisher.region) == (env[ENV_LIVE_ENDPOINT], "eu-west-1")
    assert isinstance(notifier, TurnNotifier)
    assert isinstance(notifier.sink, EventBridgeNotifier)
    assert notifier.sink.bus_name == "notices"


def test_a_refused_notice_is_counted_as_an_emf_metric(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the notifier wired as in Lambda, on a bus that refuses every entry
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "agentturn-test")
    [notifier] = live_listeners({ENV_EVENT_BUS: "notices"}, events_client=RefusingEvents())

    # WHEN a turn ends
    notifier(Event(EventType.TURN_COMPLETED, "t-1", 7, {"status": "COMPLETED"}, "alice/chat-1"))

    # THEN one EMF line counted the failure (the turn itself went on: the listener did not raise)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [line["NoticesFailed"] for line in lines if "NoticesFailed" in line] == [[1.0]]  # EMF lists values


class KeepingEvents:
    """An events client that accepts every entry and keeps its DetailType."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.sent.extend(entry["DetailType"] for entry in Entries)
        return {"FailedEntryCount": 0, "Entries": [{"EventId": str(n)} for n, _ in enumerate(Entries)]}


def _life_and_a_reminder() -> list[Event]:
    """A turn's end, and a reminder of another turn's wait (what the sweeper finds due)."""
    reminder = {"actionId": "call-r", "assignees": ["g#finance"], "suspensionType": "TOOL_APPROVAL"}
    return [
        Event(EventType.TURN_COMPLETED, "t-1", 7, {"status": "COMPLETED"}, "alice/chat-1"),
        Event(EventType.TURN_REMINDER, "t-2", 3, reminder, "alice/chat-2"),
    ]


@pytest.mark.parametrize(
    ("wanted", "sent"),
    [
        ("people", ["Turn reminder"]),
        ("all", ["Turn completed", "Turn reminder"]),
        ("", ["Turn completed", "Turn reminder"]),  # a function deployed before the setting: as it did then
    ],
)
def test_the_notices_sent_are_the_ones_the_stack_names(wanted: str, sent: list[str]) -> None:
    # GIVEN the notifier wired with the notices the construct names
    events = KeepingEvents()
    [notifier] = live_listeners({ENV_EVENT_BUS: "notices", ENV_NOTICES: wanted}, events_client=events)
    # WHEN a turn ends and another's reminder falls due
    for event in _life_and_a_reminder():
        notifier(event)
    # THEN only the wanted kinds went on the bus
    assert events.sent == sent


def test_an_unknown_notices_setting_is_refused_by_name() -> None:
    # GIVEN / WHEN a misspelt setting THEN the handler refuses to wire itself, naming the variable and the choices
    with pytest.raises(ValueError, match="AGENTTURN_NOTICES must be one of 'all', 'people', 'none', not 'some'"):
        live_listeners({ENV_EVENT_BUS: "notices", ENV_NOTICES: "some"}, events_client=KeepingEvents())
