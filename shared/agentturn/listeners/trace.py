"""An opt-in timing trace: where the time of a turn goes, point by point, as JSON lines in one file.

Off unless ``AGENTTURN_TRACE`` names a file (``agentturn dev`` and the benchmarks set it; nothing deployed
does): then :func:`mark` appends ``{"at": <epoch ms>, "point": ..., ...}`` to it, and :class:`TraceListener`
(first among the handlers' listeners, so its time is before any listener's work) marks the runner's events
that a first token waits for. The clock is the wall clock in milliseconds, the one a page's
``performance.timeOrigin + performance.now()`` reads, so that a browser's marks and the server's line up on one
machine. Off, a mark costs one look-up of the environment variable.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Final, TextIO

from agentturn.engine.events import Event, EventType

ENV_TRACE: Final = "AGENTTURN_TRACE"


class TracePoint(StrEnum):
    """The points marked outside the runner (the runner's own are its event types)."""

    #: the local gateway read a request's head (``path``)
    GATEWAY_REQUEST = "gateway.request"
    #: the local gateway wrote the answer (``path``, ``status``)
    GATEWAY_ANSWERED = "gateway.answered"
    #: a function's handler was entered / returned (``function``)
    HANDLER_ENTERED = "handler.entered"
    HANDLER_RETURNED = "handler.returned"
    #: a fresh container of the dev server passed its readiness request (``function``)
    HANDLER_READIED = "handler.readied"
    #: the worker loop received messages from the queue (``turns``)
    QUEUE_RECEIVED = "queue.received"
    #: the live server got a publish (``turn``, ``kind``) / sent it to every subscriber
    LIVE_RECEIVED = "live.received"
    LIVE_DELIVERED = "live.delivered"
    #: the dev server's DynamoDB got a request / answered it (``operation``)
    DYNAMODB_REQUEST = "dynamodb.request"
    DYNAMODB_ANSWERED = "dynamodb.answered"


#: The runner's events a first token waits for (a text piece only when it is a model call's first).
_TRACED: Final = frozenset(
    {
        EventType.TURN_STARTED,
        EventType.TURN_RESUMED,
        EventType.SNAPSHOT_SAVED,
        EventType.MODEL_STARTED,
        EventType.MODEL_TEXT_DELTA,
        EventType.MODEL_COMPLETED,
        EventType.TURN_SUSPENDED,
        EventType.TURN_COMPLETED,
    }
)


class TraceFile:
    """One trace file, appended to by every thread of the process (a line is written whole, under a lock)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._out: TextIO | None = None

    def mark(self, point: str, fields: Mapping[str, object]) -> None:
        line = json.dumps({"at": round(time.time() * 1000, 3), "point": point, **fields}, default=str)
        with self._lock:
            if self._out is None:
                self._out = self.path.open("a", encoding="utf-8")
            self._out.write(line + "\n")
            self._out.flush()


_files: dict[str, TraceFile] = {}
_setup = threading.Lock()


def trace_at(path: str) -> TraceFile:
    """The one :class:`TraceFile` of this process for ``path`` (threads share its lock)."""
    with _setup:
        found = _files.get(path)
        if found is None:
            found = _files[path] = TraceFile(Path(path))
        return found


def current() -> TraceFile | None:
    """The trace ``AGENTTURN_TRACE`` names now, or ``None`` (read on each call: tests set it per test)."""
    wanted = os.environ.get(ENV_TRACE, "").strip()
    return trace_at(wanted) if wanted else None


def mark(point: str, **fields: object) -> None:
    """Record ``point`` now, with ``fields`` (ids), when the trace is on."""
    trace = current()
    if trace is not None:
        trace.mark(point, fields)


class TraceListener:
    """A runner listener marking the events a first token waits for, with the turn's id (and, for a save, its
    version and status). A model call's first text piece only (``index`` 0): the rest are the model's pace."""

    def __init__(self, trace: TraceFile) -> None:
        self.trace = trace

    def __call__(self, event: Event) -> None:
        if event.type not in _TRACED:
            return
        if event.type is EventType.MODEL_TEXT_DELTA and event.data.get("index") != 0:
            return
        fields: dict[str, object] = {"turn": event.turn_id}
        if event.type is EventType.SNAPSHOT_SAVED:
            fields.update(version=event.data.get("version"), status=event.data.get("status"))
        self.trace.mark(f"event.{event.type.value}", fields)
