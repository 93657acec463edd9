"""Cold start of each Lambda handler, beside a bare ``import boto3``, in the same run.

Two measurements, each in fresh interpreters, alternating modules round after round (so a burst of load
elsewhere on the machine is spread over all of them), after one untimed round that writes the byte-code caches:

* **Import** — ``python -X importtime -c "import <module>"``; the figure is the *cumulative* microseconds
  ``-X importtime`` reports for the top-level module, median of ``--runs``. The environment is a Lambda
  container's (``LAMBDA_TASK_ROOT`` set) with tracing off (``POWERTOOLS_TRACE_DISABLED=true``), and again with
  tracing on, where Powertools' Tracer and the X-Ray SDK load at import. As a cross-check, the whole
  interpreter's wall time minus an empty interpreter's (``-c pass``).
* **First answered request** — on a moto server: a fresh interpreter imports the handler, then calls it once
  with the event its trigger sends (run: ``POST /conversations/{id}/turns``; submit: the submit of a waiting
  turn; worker: the SQS event of a submitted turn; sweeper: the EventBridge schedule; retention: a TTL removal
  from the turns table's stream). The time from before the import to the answer includes the clients' creation
  and every request the invocation makes. The baseline is a bare ``import boto3`` + one client + one
  ``GetItem`` in the same kind of interpreter. Each run gets its own waiting turn / queued message, prepared
  beforehand in this process through the handlers.

Handlers are imported as the functional tests and the bundle do: ``functions.<name>.app`` with the repository
root on ``sys.path``.

    python -m bench.bench_imports [--runs 5] [--out bench/results/imports.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.lambda_process import lambda_env

REPO = Path(__file__).resolve().parent.parent
HANDLERS = ("run", "submit", "worker", "sweeper", "retention")
_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)\s*$")

#: The child that answers one request: times its own import and invocation, writes them to argv[2].
_FIRST_REQUEST = """
import time
started = time.perf_counter()
import json, sys
kind, out, event_path = sys.argv[1], sys.argv[2], sys.argv[3]
if kind == "boto3":
    import boto3
    imported = time.perf_counter()
    client = boto3.client("dynamodb")
    client.get_item(TableName=json.load(open(event_path))["table"], Key={"turnId": {"S": "none"}})
    status = "ok"
else:
    import importlib
    app = importlib.import_module(f"functions.{kind}.app")
    imported = time.perf_counter()
    from agentturn.local.lambda_context import LocalLambdaContext
    event = json.load(open(event_path))
    result = app.handler(event, LocalLambdaContext(function_name=f"agentturn-{kind}", timeout_ms=60_000))
    status = str(result.get("statusCode", "ok") if isinstance(result, dict) else "ok")
    if isinstance(result, dict) and result.get("batchItemFailures"):
        status = f"failures {result['batchItemFailures']}"
answered = time.perf_counter()
json.dump({"import_ms": (imported - started) * 1000, "total_ms": (answered - started) * 1000,
           "status": status, "modules": len(sys.modules)}, open(out, "w"))
"""


def _env(*, tracing: bool, extra: dict[str, str] | None = None) -> dict[str, str]:
    quiet = {"POWERTOOLS_METRICS_NAMESPACE": "agentturn-bench", "POWERTOOLS_LOG_LEVEL": "WARNING"}
    return lambda_env(tracing=tracing, function_name="agentturn-bench", extra={**quiet, **(extra or {})})


def importtime(module: str, *, tracing: bool = False) -> tuple[int | None, float]:
    """(cumulative µs of ``module`` as ``-X importtime`` reports it, interpreter wall seconds)."""
    code = f"import {module}" if module else "pass"
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        cwd=REPO,
        env=_env(tracing=tracing),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"import {module} failed: {completed.stderr[-2000:]}")
    cumulative: int | None = None
    for line in completed.stderr.splitlines():
        matched = _LINE.match(line)
        if matched and matched.group(4) == module and matched.group(3) == " ":
            cumulative = int(matched.group(2))
    return cumulative, wall


def measure_imports(modules: list[str], runs: int) -> dict[str, Any]:
    for module in ["", *modules]:
        importtime(module)  # byte-code caches written; not measured
    off: dict[str, list[tuple[int | None, float]]] = {m: [] for m in ["", *modules]}
    on: dict[str, list[int]] = {m: [] for m in modules}
    for _ in range(runs):
        for module in ["", *modules]:
            off[module].append(importtime(module))
            if module:
                cumulative, _ = importtime(module, tracing=True)
                if cumulative is not None:
                    on[module].append(cumulative)
    empty_wall = statistics.median(w for _, w in off[""])
    rows: list[dict[str, Any]] = []
    for module in modules:
        cumulative = [c for c, _ in off[module] if c is not None]
        rows.append(
            {
                "module": module,
                "importtime_ms": statistics.median(cumulative) / 1000 if cumulative else float("nan"),
                "importtime_tracing_on_ms": statistics.median(on[module]) / 1000 if on[module] else None,
                "wall_minus_empty_ms": (statistics.median(w for _, w in off[module]) - empty_wall) * 1000,
            }
        )
    boto3_ms = rows[0]["importtime_ms"]
    for row in rows:
        row["ratio_to_boto3"] = row["importtime_ms"] / boto3_ms if boto3_ms else None
        on_ms = row["importtime_tracing_on_ms"]
        row["ratio_tracing_on_to_boto3"] = on_ms / boto3_ms if on_ms and boto3_ms else None
    return {"empty_interpreter_ms": empty_wall * 1000, "modules": rows}


def measure_first_requests(runs: int) -> dict[str, Any]:
    """Fresh interpreter → import → one answered request, on a moto server, per handler and for boto3."""
    from agentturn.api.wiring import services_from_env
    from bench._aws_counter import AwsCounter
    from bench._aws_setup import client, ours_resources
    from bench._handlers import (
        EVENTS,
        lambda_context,
        load_app,
        quiet_stdout,
        schedule_event,
        sqs_event,
        start_turn_event,
        submit_event,
    )
    from bench._moto import MotoServer, use_fake_aws_env

    use_fake_aws_env()
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in ("boto3", *HANDLERS)}
    with MotoServer() as moto, tempfile.TemporaryDirectory() as folder:
        plain = client("dynamodb", moto.endpoint_url)
        resources = ours_resources(moto.endpoint_url, AwsCounter(), plain)
        environment = {
            **resources.env(),
            "AWS_ENDPOINT_URL": moto.endpoint_url,
            "AGENTTURN_DEFAULT_AGENT": "support-agent",
        }
        os.environ.update(environment)
        os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
        with quiet_stdout():
            run_app, submit_app = load_app("run", 9001), load_app("submit", 9001)
        run_app.api.use(services_from_env)
        submit_app.api.use(services_from_env)
        sqs = client("sqs", moto.endpoint_url)
        handled: list[dict[str, Any]] = []

        def waiting_turn() -> tuple[str, str]:
            with quiet_stdout():
                response = run_app.handler(
                    start_turn_event(f"cold-{uuid.uuid4().hex[:12]}"), lambda_context("run", 29_000)
                )
            body = json.loads(response["body"])
            return body["turnId"], body["suspension"]["actionId"]

        def queued_message() -> dict[str, Any]:
            turn_id, action_id = waiting_turn()
            with quiet_stdout():
                response = submit_app.handler(submit_event(turn_id, action_id), lambda_context("submit", 15_000))
            assert response["statusCode"] == 202, response
            received = sqs.receive_message(QueueUrl=resources.queue_url, MaxNumberOfMessages=1, VisibilityTimeout=120)
            (message,) = received["Messages"]
            handled.append(message)
            return message

        retention_event = json.loads((EVENTS / "dynamodb_stream_ttl_remove.json").read_text())
        events: dict[str, Callable[[], dict[str, Any]]] = {
            "boto3": lambda: {"table": resources.turns_table},
            "run": lambda: start_turn_event(f"cold-{uuid.uuid4().hex[:12]}"),
            "submit": lambda: submit_event(*waiting_turn()),
            "worker": lambda: sqs_event([queued_message()], resources.queue_url),
            "sweeper": schedule_event,
            "retention": lambda: retention_event,
        }
        env = _env(tracing=False, extra=environment)
        for round_number in range(runs + 1):
            for name, make_event in events.items():
                event_path, out = Path(folder) / f"{name}.event.json", Path(folder) / f"{name}.out.json"
                event_path.write_text(json.dumps(make_event(), ensure_ascii=False))
                completed = subprocess.run(
                    [sys.executable, "-c", _FIRST_REQUEST, name, str(out), str(event_path)],
                    cwd=REPO,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=120,
                    check=False,
                )
                if completed.returncode != 0:
                    raise RuntimeError(f"first request of {name} failed: {completed.stderr[-2000:]}")
                if round_number > 0:  # the first round writes byte-code caches
                    samples[name].append(json.loads(out.read_text()))
                for message in handled:
                    # The worker answered: what its event source mapping then deletes.
                    sqs.delete_message(QueueUrl=resources.queue_url, ReceiptHandle=message["ReceiptHandle"])
                handled.clear()
    rows = []
    for name, runs_of in samples.items():
        rows.append(
            {
                "handler": name,
                "import_ms": statistics.median(s["import_ms"] for s in runs_of),
                "first_answer_ms": statistics.median(s["total_ms"] for s in runs_of),
                "statuses": sorted({s["status"] for s in runs_of}),
                "modules_loaded": statistics.median(s["modules"] for s in runs_of),
            }
        )
    baseline = rows[0]["first_answer_ms"]
    for row in rows:
        row["ratio_to_boto3_first_request"] = row["first_answer_ms"] / baseline if baseline else None
    return {"rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-first-request", action="store_true", help="imports only (no emulator)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/imports.json"))
    args = parser.parse_args()
    present = [name for name in HANDLERS if (REPO / "functions" / name / "app.py").exists()]
    modules = ["boto3", *(f"functions.{name}.app" for name in present)]
    payload: dict[str, Any] = {"runs": args.runs, **measure_imports(modules, args.runs)}
    payload["missing_handlers"] = [name for name in HANDLERS if name not in present]
    if not args.no_first_request:
        payload["first_request"] = measure_first_requests(args.runs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2))
    for row in payload["modules"]:
        on = row["importtime_tracing_on_ms"]
        print(
            f"{row['module']:>24} import {row['importtime_ms']:7.1f} ms ×boto3 {row['ratio_to_boto3']:.2f}  "
            f"tracing on {on if on is None else f'{on:.1f}'} ms  wall-empty {row['wall_minus_empty_ms']:7.1f} ms"
        )
    for row in payload.get("first_request", {}).get("rows", []):
        print(
            f"{row['handler']:>10} first answer {row['first_answer_ms']:7.1f} ms "
            f"(import {row['import_ms']:.1f} ms) ×boto3+GetItem {row['ratio_to_boto3_first_request']:.2f} "
            f"{row['statuses']}"
        )


if __name__ == "__main__":
    main()
