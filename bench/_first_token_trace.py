"""Where the time from Send to the first streamed token goes: ``agentturn dev``'s timing trace
(``AGENTTURN_TRACE``, :mod:`agentturn.listeners.trace`) lined up with the page's own marks, segment by segment.

Each repeat of ``bench_live`` gives the page's click and first shown piece (wall clock, ``performance.timeOrigin``
plus the mark) with its conversation and turn; the trace gives the server's points. Each point is the first one
of its kind at or after the point before it, so the segments of one repeat add up to its submit → first token.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

Line = Mapping[str, Any]
#: A segment ends at the first trace line (after its start) that the matcher accepts, given the repeat's sample.
Matcher = Callable[[Line, Mapping[str, Any]], bool]


def _point(name: str, **wanted: Any) -> Matcher:
    def matches(line: Line, sample: Mapping[str, Any]) -> bool:
        if line.get("point") != name:
            return False
        for key, value in wanted.items():
            expected = value(sample) if callable(value) else value
            if line.get(key) != expected:
                return False
        return True

    return matches


def _turns_path(sample: Mapping[str, Any]) -> str:
    return f"/conversations/{sample['conversation']}/turns"


def _turn(sample: Mapping[str, Any]) -> str:
    return str(sample["turn"])


#: The path of Send, in order: (segment name, the point that ends it: a trace line, or a field of the repeat's sample
#: for a point the page marked itself). The last segment ends at the page's mark.
SEGMENTS: Sequence[tuple[str, Matcher | str]] = (
    ("click_to_fetch", "fetch_at"),
    ("fetch_to_gateway", _point("gateway.request", method="POST", path=_turns_path)),
    ("gateway_to_handler", _point("handler.entered", function="run", path=_turns_path)),
    ("handler_to_turn_started", _point("event.TURN_STARTED", turn=_turn)),
    ("turn_started_to_model_called", _point("event.MODEL_STARTED", turn=_turn)),
    ("model_called_to_first_piece", _point("event.MODEL_TEXT_DELTA", turn=_turn)),
    ("first_piece_to_publish_received", _point("live.received", turn=_turn, kind="delta")),
    ("publish_received_to_socket", _point("live.delivered", turn=_turn, kind="delta")),
)
#: From the last server point to the page showing the piece (WebSocket to the page, its parse and render).
LAST_SEGMENT = "socket_to_page_shown"


def read_trace(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines() if text.strip()]
    return sorted(lines, key=lambda line: float(line["at"]))


def segments_of(sample: Mapping[str, Any], trace: Sequence[Line]) -> dict[str, float] | None:
    """One repeat's segments (ms), or ``None`` when a point is missing from the trace (an older checkout's)."""
    at = float(sample["clicked_at"])
    found: dict[str, float] = {}
    for name, matcher in SEGMENTS:
        if isinstance(matcher, str):
            reached = float(sample[matcher])
        else:
            hit = next((line for line in trace if float(line["at"]) >= at and matcher(line, sample)), None)
            if hit is None:
                return None
            reached = float(hit["at"])
        found[name] = reached - at
        at = reached
    found[LAST_SEGMENT] = float(sample["shown_at"]) - at
    found["bench_call_to_click"] = float(sample["clicked_at"]) - float(sample["bench_clicked_at"])
    found["created_to_turn_started"] = _first_at(trace, "event.TURN_STARTED", sample) - float(sample["created_at"])
    found.update(_dynamodb_before_start(sample, trace))
    return found


def _first_at(trace: Sequence[Line], point: str, sample: Mapping[str, Any]) -> float:
    return next(
        float(line["at"]) for line in trace if line.get("point") == point and line.get("turn") == sample["turn"]
    )


def _dynamodb_before_start(sample: Mapping[str, Any], trace: Sequence[Line]) -> dict[str, float]:
    """DynamoDB's share of handler → turn started: requests answered in that window, and their time (from the
    request reaching the emulator to its answer: other requests' turns at its lock included)."""
    entered = next(
        float(line["at"])
        for line in trace
        if _point("handler.entered", function="run", path=_turns_path)(line, sample)
        and float(line["at"]) >= float(sample["clicked_at"])
    )
    started = _first_at(trace, "event.TURN_STARTED", sample)
    window = [line for line in trace if entered <= float(line["at"]) <= started]
    opened: list[float] = []
    spent = 0.0
    count = 0
    for line in window:
        if line.get("point") == "dynamodb.request":
            opened.append(float(line["at"]))
        elif line.get("point") == "dynamodb.answered" and opened:
            spent += float(line["at"]) - opened.pop(0)
            count += 1
    return {"dynamodb_requests_before_turn_started": float(count), "dynamodb_ms_before_turn_started": spent}


def breakdown(samples: Sequence[Mapping[str, Any]], trace: Sequence[Line]) -> dict[str, Any] | None:
    """Median and p90 per segment over the repeats, in the order of the path; ``None`` without a trace."""
    rows = [row for row in (segments_of(sample, trace) for sample in samples) if row is not None]
    if not rows:
        return None
    names = list(rows[0])
    result: dict[str, Any] = {}
    for name in names:
        values = sorted(row[name] for row in rows)
        result[name] = {
            "median": round(statistics.median(values), 1),
            "p90": round(values[min(len(values) - 1, int(0.9 * len(values)))], 1),
        }
    return {"segments_ms": result, "n": len(rows)}


def _in_turns(sample: Mapping[str, Any]) -> Matcher:
    def matches(line: Line, _: Mapping[str, Any]) -> bool:
        return line.get("point") == "queue.received" and sample["turn"] in (line.get("turns") or [])

    return matches


def _submit_request(line: Line, sample: Mapping[str, Any]) -> bool:
    path = str(line.get("path", ""))
    return (
        line.get("point") == "gateway.request"
        and path.startswith(f"/turns/{sample['turn']}/actions/")
        and path.endswith("/submit")
    )


def resume_path(turn: str, trace: Sequence[Line]) -> dict[str, float] | None:
    """A form's answer to the worker's model call, once (the bench's form cycle), each point in ms after the submit
    reached the gateway: the submit handler's answer (saved, card written, enqueued), the worker loop's receive, the
    worker handler, the model called, the turn completed. ``None`` without a trace."""
    sample = {"turn": turn}
    start = next((line for line in trace if _submit_request(line, sample)), None)
    if start is None:
        return None
    chain: Sequence[tuple[str, Matcher]] = (
        ("submit_handled", _point("handler.returned", function="submit")),
        ("queue_received", _in_turns(sample)),
        ("worker_entered", _point("handler.entered", function="worker")),
        ("model_called", _point("event.MODEL_STARTED", turn=_turn)),
        ("turn_completed", _point("event.TURN_COMPLETED", turn=_turn)),
    )
    # Each from the submit (the worker may receive the message before the submit handler has returned).
    at = float(start["at"])
    found: dict[str, float] = {}
    for name, matcher in chain:
        hit = next((line for line in trace if float(line["at"]) >= at and matcher(line, sample)), None)
        if hit is None:
            return None
        found[f"{name}_ms_after_submit"] = round(float(hit["at"]) - at, 1)
    return found
