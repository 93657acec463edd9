"""The live timeline, measured in the console: ``agentturn dev`` with a scripted model that streams with
delays, driven by Playwright in Debian's Chromium (headless).

For each repeat, a fresh conversation; the bench clicks Send and reads the page's own clock
(``performance.now()``):

* **submit → first token**: from the click to the first streamed piece shown (``agentturn:first-delta``);
* **start → first token**: from the turn's ``createdAt`` (the server's clock: the turn exists) to the first
  piece (the page's ``performance.timeOrigin`` plus its mark: one machine, one clock);
* the same first-token time with the live socket killed (the console polls), where the first text shown is
  the whole saved reply;
* **where the time goes**: the dev server's timing trace (``AGENTTURN_TRACE``, :mod:`agentturn.listeners.trace`)
  lined up with the page's own marks (the click as the page gets it, its fetch, the first piece shown), median
  and p90 per segment (``bench/_first_token_trace.py``): the page's send, the gateway, the run handler up to the
  turn's start (and its DynamoDB requests), the model's first piece, the publish, the live server, the page.
  ``click_to_first_token`` starts at the click as the page gets it; ``submit_to_first_token`` at the bench's
  call, so it also holds Playwright's own checks before it clicks (``bench_call_to_click``). A form's answer is
  followed through the queue to the worker's model call once (``form_submit_to_worker_model_call``). A checkout
  without the trace (``--before`` an older commit) has no breakdown.

The model waits ``--first-delay`` seconds before its first piece (a model's time to first token) and
``--piece-delay`` between pieces of 4 characters; figures are reported with that delay and without it (the
overhead of the path: handler, publish, local AppSync stand-in, socket, rendering).

It also counts the publishes of one turn of each kind (a WebSocket subscriber of the dev server counts the
messages on the conversation's channel: one message per publish) and the notices, and prices them at list
prices per million cycles, with the lifecycle notices on (``AgentTurn(notices=TurnNotices.ALL)``) and off
(``TurnNotices.PEOPLE``, the default: a form cycle sends none).

``--before PATH`` measures another checkout first (e.g. ``git archive`` of the commit before a change,
unpacked), with its own server and console, in the same run: both sides, and the ratios after / before.

    python -m bench.bench_live [--repeats 8] [--first-delay 1.0] [--piece-delay 0.05] [--before PATH]
                               [--out bench/results/live.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "shared"), str(REPO)]

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, DevProcess, free_port  # noqa: E402

from bench._first_token_trace import breakdown, read_trace, resume_path  # noqa: E402

#: List prices (us-east-1): AppSync Events $1.00 per million operations (a publish is one inbound message,
#: each delivery one outbound message; connect and subscribe requests are operations too) and $0.08 per
#: million connection-minutes; EventBridge custom events $1.00 per million.
APPSYNC_PER_MILLION_OPERATIONS = 1.00
APPSYNC_PER_MILLION_CONNECTION_MINUTES = 0.08
EVENTBRIDGE_PER_MILLION_EVENTS = 1.00

TICKET = "create a high priority login incident ticket"
FORM = {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}


def _started_turn(dev: DevProcess, conversation: str) -> tuple[str, float]:
    """The conversation's last turn, and when it was created (epoch ms, the server's clock)."""
    from datetime import datetime

    _, timeline = dev.request("GET", f"/conversations/{conversation}/messages")
    turn_id = timeline["messages"][-1]["turnId"]
    _, turn = dev.request("GET", f"/turns/{turn_id}")
    return turn_id, datetime.fromisoformat(turn["createdAt"].replace("Z", "+00:00")).timestamp() * 1000


#: The bench's probes in the page: the moment the click reaches it (Playwright's own checks before it dispatches the
#: click are the bench's time, not the page's), and resource timings from here on (the POST's fetch start).
_PROBES = """() => {
  performance.clearMarks();
  performance.clearResourceTimings();
  document.addEventListener("click", (event) => {
    if (event.target.closest && event.target.closest("#send")) performance.mark("bench:click");
  }, { capture: true });
}"""
_ANSWERED = """(path) => performance.getEntriesByType("resource").some((e) => new URL(e.name).pathname === path)"""
_MARKS = """(path) => {
  const fetched = performance.getEntriesByType("resource").find((entry) => new URL(entry.name).pathname === path);
  return {
    origin: performance.timeOrigin,
    click: performance.getEntriesByName("bench:click")[0].startTime,
    fetch: fetched ? fetched.startTime : NaN,
    firstDelta: performance.getEntriesByName("agentturn:first-delta")[0].startTime,
  };
}"""


def _first_token(page: Any, dev: DevProcess, conversation: str, agent: str, *, live: bool) -> dict[str, Any]:
    # A new query each time: a change of the hash alone would keep the page (and its conversation).
    page.goto(f"/?agent={agent}&run={conversation}#c={conversation}")
    page.wait_for_function("(agent) => document.querySelector('#agent').value === agent", arg=agent)
    if live:
        page.wait_for_function("document.body.dataset.live === 'live'")
    page.evaluate(_PROBES)
    page.locator("#input").fill("write something")
    clicked = page.evaluate("() => { performance.mark('bench:submit'); return performance.now(); }")
    page.locator("#send").click()
    if live:
        page.wait_for_function("performance.getEntriesByName('agentturn:first-delta').length > 0", timeout=60_000)
        page.wait_for_function("document.querySelector('#turn-status').dataset.status === 'COMPLETED'", timeout=60_000)
        # Read once the POST has its answer (a resource timing exists only then): the turn ran in that request.
        path = f"/conversations/{conversation}/turns"
        page.wait_for_function(_ANSWERED, arg=path, timeout=60_000)
        marks = page.evaluate(_MARKS, path)
        first, origin = marks["firstDelta"], marks["origin"]
        turn_id, created = _started_turn(dev, conversation)
        return {
            "submit_to_first_token_ms": first - clicked,
            "click_to_first_token_ms": first - marks["click"],
            "start_to_first_token_ms": origin + first - created,
            # For the breakdown: the page's marks on the wall clock the server's trace uses.
            "conversation": conversation,
            "turn": turn_id,
            "bench_clicked_at": origin + clicked,
            "clicked_at": origin + marks["click"],
            "fetch_at": origin + marks["fetch"],
            "created_at": created,
            "shown_at": origin + first,
        }
    page.wait_for_function(
        "document.querySelectorAll('[data-testid=ai-message]').length > 0", timeout=60_000, polling=10
    )
    shown = page.evaluate("() => performance.now()")
    return {"submit_to_first_text_ms": shown - clicked}


def _channel_messages(dev: DevProcess, user: str, conversation: str, act: Any, until: Any) -> list[dict[str, Any]]:
    from websockets.sync.client import connect

    from agentturn.api.live_channels import channel_for
    from agentturn.local.live import SUBPROTOCOL, header_subprotocol

    _, info = dev.request("GET", "/_dev/info")
    auth = header_subprotocol({"host": info["live"]["host"], "x-agentturn-dev-user": user})
    seen: list[dict[str, Any]] = []
    with connect(info["live"]["realtimeUrl"], subprotocols=[SUBPROTOCOL, auth], origin=dev.url.rstrip("/")) as ws:  # type: ignore[list-item]
        ws.send(json.dumps({"type": "connection_init"}))
        ws.recv(timeout=10)
        ws.send(json.dumps({"type": "subscribe", "id": "b", "channel": channel_for(user, conversation)}))
        ws.recv(timeout=10)
        act()
        deadline = time.monotonic() + 60
        while not until(seen) and time.monotonic() < deadline:
            message = json.loads(ws.recv(timeout=60))
            if message["type"] == "data":
                seen.append(json.loads(message["event"]))
    return seen


def _ended(messages: list[dict[str, Any]]) -> bool:
    """A save that leaves the turn waiting for a person or ended."""
    return any(m["type"] == "timeline" and m["status"] not in ("READY", "RUNNING") for m in messages)


def _count(messages: list[dict[str, Any]]) -> dict[str, int]:
    kinds = {"timeline": 0, "status": 0, "delta": 0}
    for m in messages:
        kinds[m["type"]] += 1
    return {**kinds, "total": len(messages)}


def _publishes(dev: DevProcess, agent: str) -> dict[str, Any]:
    user = "bench"
    header = {"X-Agentturn-Dev-User": user}
    streamed = f"bench-{uuid.uuid4().hex[:8]}"
    text = _channel_messages(
        dev,
        user,
        streamed,
        lambda: dev.request("POST", f"/conversations/{streamed}/turns", {"input": "write", "agentId": agent}, header),
        _ended,
    )
    cycle = f"bench-{uuid.uuid4().hex[:8]}"
    turn: dict[str, Any] = {}

    def start() -> None:
        _, body = dev.request(
            "POST", f"/conversations/{cycle}/turns", {"input": TICKET, "agentId": "support-agent"}, header
        )
        turn.update(body)

    asked = _channel_messages(dev, user, cycle, start, _ended)
    action = _wait_action(dev, turn["turnId"], header)

    def submit() -> None:
        dev.request(
            "POST",
            f"/turns/{turn['turnId']}/actions/{action}/submit",
            {"data": FORM},
            {**header, "Idempotency-Key": uuid.uuid4().hex},
        )

    answered = _channel_messages(dev, user, cycle, submit, _ended)
    return {
        "streamed_text_turn": _count(text),
        "form_cycle_start": _count(asked),
        "form_cycle_submit_and_resume": _count(answered),
        "form_cycle_total": len(asked) + len(answered),
        "form_cycle_turn": turn["turnId"],
        # One suspension and one end per form cycle: one PutEvents entry each.
        "form_cycle_notices": 2,
    }


def _wait_action(dev: DevProcess, turn_id: str, header: dict[str, str]) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        _, turn = dev.request("GET", f"/turns/{turn_id}", headers=header)
        suspension = turn.get("suspension") or {}
        if suspension.get("actionId"):
            return str(suspension["actionId"])
        time.sleep(0.1)
    raise TimeoutError(f"turn {turn_id} never waited for its form")


def _cost(publishes_per_cycle: int, notices_per_cycle: int, connection_minutes: float) -> dict[str, float]:
    """US$ per million form cycles, one page watching: each publish is one inbound and one outbound operation,
    plus one connect and one subscribe per page visit; the connection is open ``connection_minutes``."""
    operations = 2 * publishes_per_cycle + 2
    appsync_ops = operations * APPSYNC_PER_MILLION_OPERATIONS
    appsync_minutes = connection_minutes * APPSYNC_PER_MILLION_CONNECTION_MINUTES
    eventbridge = notices_per_cycle * EVENTBRIDGE_PER_MILLION_EVENTS
    return {
        "appsync_operations_per_cycle": operations,
        "appsync_operations_usd": round(appsync_ops, 2),
        "appsync_connection_minutes_usd": round(appsync_minutes, 2),
        "eventbridge_usd": round(eventbridge, 2),
        "total_usd_per_million_cycles": round(appsync_ops + appsync_minutes + eventbridge, 2),
    }


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median": round(statistics.median(ordered), 1),
        "p90": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 1),
        "min": round(ordered[0], 1),
        "max": round(ordered[-1], 1),
        "n": len(ordered),
    }


def _measure(tree: Path, args: argparse.Namespace, label: str) -> dict[str, Any]:
    """Everything, against ``agentturn dev`` (and its console) from the checkout ``tree``."""
    from playwright.sync_api import sync_playwright

    env = {
        "AGENTTURN_AGENTS": "bench.live_agents:agents",
        "BENCH_LIVE_FIRST_DELAY": str(args.first_delay),
        "BENCH_LIVE_PIECE_DELAY": str(args.piece_delay),
    }
    log = REPO / ".artifacts" / f"bench-live-dev-{label}.log"
    # The dev server's timing trace (a checkout without it ignores the variable: no breakdown for that side).
    trace = REPO / ".artifacts" / f"bench-live-trace-{label}.jsonl"
    trace.unlink(missing_ok=True)
    env["AGENTTURN_TRACE"] = str(trace)
    dev = DevProcess(free_port(), log, args=["--quiet"], env=env, cwd=tree)
    dev.base_env = {"PYTHONPATH": os.pathsep.join([str(tree / "shared"), str(tree)])}
    dev.start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            context = browser.new_context(base_url=dev.url, bypass_csp=True)  # its string predicates are eval()ed
            page = context.new_page()
            live = [
                _first_token(page, dev, f"bench-{uuid.uuid4().hex[:8]}", "streamer", live=True)
                for _ in range(args.repeats)
            ]
            polled_page = context.new_page()
            polled_page.route_web_socket("**/event/realtime", lambda ws: ws.close())
            polled = [
                _first_token(polled_page, dev, f"bench-{uuid.uuid4().hex[:8]}", "streamer", live=False)
                for _ in range(max(3, args.repeats // 2))
            ]
            browser.close()
        publishes = _publishes(dev, "streamer")
    finally:
        dev.stop()

    delay_ms = args.first_delay * 1000
    submit = [s["submit_to_first_token_ms"] for s in live]
    start = [s["start_to_first_token_ms"] for s in live]
    cycle = publishes["form_cycle_total"]
    return {
        "tree": str(tree),
        "live": {
            "submit_to_first_token_ms": _summary(submit),
            "start_to_first_token_ms": _summary(start),
            "submit_to_first_token_minus_model_delay_ms": _summary([s - delay_ms for s in submit]),
            # From the moment the click reaches the page (without Playwright's checks before it dispatches it).
            "click_to_first_token_minus_model_delay_ms": _summary(
                [s["click_to_first_token_ms"] - delay_ms for s in live]
            ),
            "start_to_first_token_minus_model_delay_ms": _summary([s - delay_ms for s in start]),
            # Where submit → first token goes (median per segment; the model's delay is in
            # model_called_to_first_piece), from the dev server's trace.
            "submit_to_first_token_breakdown": breakdown(live, read_trace(trace)),
        },
        # A form's answer through the queue to the worker's model call (one form cycle, the demo support agent).
        "form_submit_to_worker_model_call": resume_path(publishes.pop("form_cycle_turn"), read_trace(trace)),
        "polling_socket_killed": {
            "submit_to_first_text_ms": _summary([s["submit_to_first_text_ms"] for s in polled]),
        },
        "publishes": publishes,
        "cost_per_million_form_cycles": {
            "notices_on": _cost(cycle, publishes["form_cycle_notices"], args.connection_minutes),
            "notices_off": _cost(cycle, 0, args.connection_minutes),
        },
    }


def _ratios(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    """after / before, for the figures that the change is about."""

    def ratio(path: tuple[str, ...]) -> float:
        a: Any = after
        b: Any = before
        for key in path:
            a, b = a[key], b[key]
        return round(float(a) / float(b), 3) if b else float("nan")

    return {
        "form_cycle_publishes": ratio(("publishes", "form_cycle_total")),
        "streamed_text_turn_publishes": ratio(("publishes", "streamed_text_turn", "total")),
        "usd_per_million_cycles_notices_on": ratio(
            ("cost_per_million_form_cycles", "notices_on", "total_usd_per_million_cycles")
        ),
        "submit_to_first_token_median": ratio(("live", "submit_to_first_token_ms", "median")),
        "start_to_first_token_median": ratio(("live", "start_to_first_token_ms", "median")),
    }


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--first-delay", type=float, default=1.0)
    parser.add_argument("--piece-delay", type=float, default=0.05)
    parser.add_argument("--connection-minutes", type=float, default=2.0)
    parser.add_argument("--before", type=Path, default=None, help="another checkout, measured first in this run")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "live.json")
    args = parser.parse_args()

    results: dict[str, Any] = {
        "model": {"first_delay_s": args.first_delay, "piece_delay_s": args.piece_delay, "piece_chars": 4},
        "assumed_connection_minutes_per_cycle": args.connection_minutes,
        "load_average_at_start": _load(),
    }
    if args.before is not None:
        results["before"] = _measure(args.before.resolve(), args, "before")
    results["after"] = _measure(REPO, args, "after")
    results["load_average_at_end"] = _load()
    if args.before is not None:
        results["ratios_after_over_before"] = _ratios(results["before"], results["after"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
