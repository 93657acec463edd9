"""The opt-in timing trace (``AGENTTURN_TRACE``): what it records, and that nothing is recorded without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentturn.api.live_wiring import ENV_TRACE, live_listeners
from agentturn.engine.events import Event, EventType
from agentturn.listeners.trace import TraceListener, TracePoint, current, mark, trace_at


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_without_the_variable_nothing_is_traced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # GIVEN no AGENTTURN_TRACE
    monkeypatch.delenv(ENV_TRACE, raising=False)

    # WHEN a point is marked, THEN there is no trace, and the handlers wire no trace listener
    mark(TracePoint.GATEWAY_REQUEST, path="/x")
    assert current() is None
    assert live_listeners({}) == []


def test_a_mark_is_one_line_with_the_wall_clock_and_its_fields(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # GIVEN a trace file named by the variable
    path = tmp_path / "trace.jsonl"
    monkeypatch.setenv(ENV_TRACE, str(path))

    # WHEN two points are marked
    mark(TracePoint.GATEWAY_REQUEST, method="POST", path="/conversations/c/turns")
    mark(TracePoint.LIVE_RECEIVED, turn="t1", kind="delta")

    # THEN each is a JSON line, in order, with epoch milliseconds (the clock a page's timeOrigin reads)
    first, second = _lines(path)
    assert first["point"] == "gateway.request" and first["path"] == "/conversations/c/turns"
    assert second == {**second, "point": "live.received", "turn": "t1", "kind": "delta"}
    assert 1.7e12 < float(first["at"]) <= float(second["at"])  # type: ignore[arg-type]


def test_the_listener_marks_what_a_first_token_waits_for_and_only_a_calls_first_piece(tmp_path: Path) -> None:
    # GIVEN the listener on a trace file
    path = tmp_path / "trace.jsonl"
    listener = TraceListener(trace_at(str(path)))

    # WHEN a turn starts, saves, calls its model and streams three pieces, and a tool starts
    listener(Event(EventType.TURN_STARTED, "t1", 1))
    listener(Event(EventType.SNAPSHOT_SAVED, "t1", 2, {"version": 1, "status": "READY"}))
    listener(Event(EventType.MODEL_STARTED, "t1", 3))
    for index in range(3):
        listener(Event(EventType.MODEL_TEXT_DELTA, "t1", 3, {"text": "abcd", "index": index, "call": 1}))
    listener(Event(EventType.TOOL_STARTED, "t1", 4))

    # THEN the start, the save (version and status), the model call and its first piece are marked, nothing else
    lines = _lines(path)
    assert [line["point"] for line in lines] == [
        "event.TURN_STARTED",
        "event.SNAPSHOT_SAVED",
        "event.MODEL_STARTED",
        "event.MODEL_TEXT_DELTA",
    ]
    assert lines[1]["version"] == 1 and lines[1]["status"] == "READY"
    assert {line["turn"] for line in lines} == {"t1"}


def test_the_handlers_put_the_trace_listener_first(tmp_path: Path) -> None:
    # GIVEN the trace and the live endpoint set
    env = {ENV_TRACE: str(tmp_path / "t.jsonl"), "AGENTTURN_LIVE_ENDPOINT": "http://127.0.0.1:1/event"}

    # WHEN the handlers wire their listeners
    listeners = live_listeners(env)

    # THEN the trace listener comes before the feed, so its time is before any publishing
    assert isinstance(listeners[0], TraceListener)
    assert len(listeners) == 2
