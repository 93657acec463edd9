"""Cold start of each Lambda handler, beside a bare ``import boto3``, in the same run.

Two measurements, each in fresh interpreters, alternating modules round after round (so a burst of load
elsewhere on the machine is spread over all of them), after one untimed round that writes the byte-code caches:

* **Import** — ``python -X importtime -c "import <module>"``; the figure is the *cumulative* microseconds
  ``-X importtime`` reports for the top-level module, median of ``--runs``. The environment is a Lambda
  container's (``LAMBDA_TASK_ROOT`` set) with tracing off (``POWERTOOLS_TRACE_DISABLED=true``), and again with
  tracing on, where Powertools' Tracer and the X-Ray SDK load at import. As a cross-check, the whole
  interpreter's wall time minus an empty interpreter's (``-c pass``).
* **First answered request** — from each function's *built asset* (``agentturn.cdk.bundling.build_asset`` for
  the Lambda's Python, ``--python``, default 3.12), run by an interpreter of that version (pyenv's, or
  ``$AGENTTURN_LAMBDA_PYTHON``) with nothing but the asset and the standard library on the path (``-I -S``),
  the asset bind-mounted read-only like ``/var/task`` where the machine allows it (``-B`` otherwise), on a
  moto server: a fresh interpreter imports ``app`` and calls ``app.handler`` once with the event its trigger
  sends (run: ``POST /conversations/{id}/turns``; submit: the submit of a waiting turn; worker: the SQS event
  of a submitted turn; sweeper: the EventBridge schedule; retention: a TTL removal from the turns table's
  stream). The time from the script's first line to the answer includes the clients' creation and every request
  the invocation makes. Each asset is measured twice: as deployed (*pyc*: the byte code of that Python) and
  without its ``__pycache__`` folders (*source*, as assets were before), beside the anchor — a bare
  ``import boto3`` + one client + one ``GetItem``, boto3 from the asset with byte code (the runtime's own
  boto3 is precompiled) and without — and the *floor*: the anchor inside Powertools' ``Logger`` and ``Metrics``
  decorators with one pydantic model validating what it read (the least handler in this house's style, from the
  run asset; ``×floor`` per handler), and the same without Powertools (*pydantic*: what pydantic alone adds) —
  all alternating in the same rounds, after one untimed round. The
  1-minute load average is recorded around every sample. Besides the wall time, each child reports its own CPU
  time (``process_time``, the emulator's excluded): steadier on a loaded machine. ``--before PATH`` also builds
  another checkout's deployed assets with that checkout's own bench and construct environment (``git worktree add
  /tmp/main main``) and measures them in the same rounds: ``×before`` per handler; ``--assets pyc,before`` skips
  the *source* variant. Each run gets its own waiting turn / queued message,
  prepared beforehand in this process through the handlers. ``--importtime-dir`` also writes each child's
  ``-X importtime`` report (where the time goes; not for the figures).

The import table imports handlers as the functional tests do (``functions.<name>.app`` with the repository root
on ``sys.path``, this interpreter); ``--first-request-only`` skips it.

    python -m bench.bench_imports [--runs 5] [--first-request-only] [--before PATH] [--assets pyc,source,before]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
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
#: The rows that are not a handler, and the asset each imports from: the anchor (boto3 + client + GetItem) from the
#: smallest asset; the anchor + one pydantic model, and the floor (that + Powertools' Logger and Metrics), from one
#: that holds all three packages at their pinned versions.
ANCHOR_ASSETS = {"boto3": "retention", "pydantic": "run", "floor": "run"}
#: The anchor rows first (boto3, then what the floor adds step by step), then the handlers as they ran.
_ROW_ORDER = {name: index for index, name in enumerate(ANCHOR_ASSETS)}
#: The construct's default runtime: what the assets are built and measured for unless ``--python`` says otherwise.
DEPLOY_PYTHON = "3.12"
_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)\s*$")

#: The child that answers one request from a built asset: times its own import and invocation, writes them to
#: argv[2]. The Lambda context is made here (the asset holds no agentturn.local).
_FIRST_REQUEST = """
import time
started, started_cpu = time.perf_counter(), time.process_time()
import json, sys, uuid
kind, out, event_path = sys.argv[1], sys.argv[2], sys.argv[3]
if kind == "boto3":
    import boto3
    imported = time.perf_counter()
    client = boto3.client("dynamodb")
    client.get_item(TableName=json.load(open(event_path))["table"], Key={"turnId": {"S": "none"}})
    status = "ok"
elif kind in ("pydantic", "floor"):
    # The anchor plus the least a handler written in this house's style imports: one pydantic model validating
    # what it read ("pydantic") and, for the floor, Powertools' Logger and Metrics around the function.
    import boto3
    from pydantic import BaseModel
    if kind == "floor":
        from aws_lambda_powertools import Logger, Metrics
    imported = time.perf_counter()

    class Item(BaseModel):
        found: bool

    def handler(event, context):
        client = boto3.client("dynamodb")
        item = client.get_item(TableName=event["table"], Key={"turnId": {"S": "none"}}).get("Item")
        return Item(found=item is not None).model_dump()

    if kind == "floor":
        handler = Logger().inject_lambda_context(Metrics(namespace="agentturn-bench").log_metrics(handler))

    class FloorContext:
        function_name, memory_limit_in_mb, function_version = "agentturn-floor", 1024, "$LATEST"
        aws_request_id, log_group_name, log_stream_name = str(uuid.uuid4()), "/aws/lambda/agentturn-floor", "cold"
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:agentturn-floor"

    handler(json.load(open(event_path)), FloorContext())
    status = "ok"
else:
    import app
    imported = time.perf_counter()

    class Context:
        function_name = f"agentturn-{kind}"
        memory_limit_in_mb = 1024
        function_version = "$LATEST"
        aws_request_id = str(uuid.uuid4())
        invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:agentturn-{kind}"
        log_group_name = f"/aws/lambda/agentturn-{kind}"
        log_stream_name = "cold"

        def get_remaining_time_in_millis(self):
            return max(0, 60_000 - int((time.perf_counter() - imported) * 1000))

    event = json.load(open(event_path))
    result = app.handler(event, Context())
    status = str(result.get("statusCode", "ok") if isinstance(result, dict) else "ok")
    if isinstance(result, dict) and result.get("batchItemFailures"):
        status = f"failures {result['batchItemFailures']}"
answered = time.perf_counter()
json.dump({"import_ms": (imported - started) * 1000, "total_ms": (answered - started) * 1000,
           "cpu_ms": (time.process_time() - started_cpu) * 1000,
           "status": status, "modules": len(sys.modules)}, open(out, "w"))
"""
#: The assets of each function: with the target's byte code (what is deployed), without it (as before byte code),
#: and — with ``--before PATH`` — another checkout's deployed asset, as that checkout builds and configures it.
VARIANTS = ("pyc", "source", "before")
#: Run by this interpreter in the ``--before`` checkout: its own bench builds its assets, and says the environment
#: its construct adds to every function (none before ``DEPLOYED_ENVIRONMENT`` existed).
_BUILD_BEFORE = """
import json, sys
from pathlib import Path
from bench.bench_imports import build_assets
import agentturn.api.lambdas as lambdas
build_assets(Path(sys.argv[1]), sys.argv[2])
print(json.dumps(dict(getattr(lambdas, "DEPLOYED_ENVIRONMENT", {}))))
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


def build_assets(folder: Path, python_version: str) -> dict[str, dict[str, Path]]:
    """``{variant: {function: asset}}``: each function's deployed asset (byte code of ``python_version``), and
    the same tree without its ``__pycache__`` folders."""
    from agentturn.cdk.bundling import AssetInputs, DependencySpec, Target, build_asset

    spec = DependencySpec.for_target(Target(python_version, "x86_64"))
    from agentturn.api.settings import DEFAULT_AGENTS

    # As the construct builds them by default: the demo agents, their form schemas checked at build.
    inputs = AssetInputs(modules=("agentturn.demo",), sdk_tracing=False, agents=DEFAULT_AGENTS)
    assets: dict[str, dict[str, Path]] = {variant: {} for variant in VARIANTS}
    for name in HANDLERS:
        built = folder / "pyc" / name
        build_asset(name, spec, built, inputs)
        assets["pyc"][name] = built
        assets["source"][name] = folder / "source" / name
        shutil.copytree(built, assets["source"][name], ignore=shutil.ignore_patterns("__pycache__"))
    return assets


def build_before(checkout: Path, folder: Path, python_version: str) -> tuple[dict[str, Path], dict[str, str]]:
    """Another checkout's deployed assets, built by its own code (``{function: asset}``), and the environment its
    construct adds to every function."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(checkout / "shared"), str(checkout)))}
    completed = subprocess.run(
        [sys.executable, "-c", _BUILD_BEFORE, str(folder), python_version],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"building the assets of {checkout} failed: {completed.stderr[-2000:]}")
    deployed = json.loads(completed.stdout.strip().splitlines()[-1])
    return {name: folder / "pyc" / name for name in HANDLERS}, deployed


def measure_first_requests(
    runs: int,
    python_version: str = DEPLOY_PYTHON,
    importtime_dir: Path | None = None,
    *,
    variants: tuple[str, ...] = ("pyc", "source"),
    before: Path | None = None,
) -> dict[str, Any]:
    """Fresh interpreter of the Lambda's version → import from the built asset, read-only → one answered request,
    on a moto server, per handler and asset variant, and for the bare boto3 anchor, in the same rounds.

    With ``importtime_dir``, each child also runs with ``-X importtime`` (slower: for finding where the time
    goes, not for the figures) and its report is written there as ``<handler>.<variant>.txt``."""
    from tests.support.task_root import can_mount_read_only, python_in_asset

    from agentturn.api.wiring import services_from_env
    from agentturn.cdk.bytecode import target_interpreter
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

    interpreter = target_interpreter(python_version)
    if interpreter is None:
        raise SystemExit(f"no Python {python_version} here: set $AGENTTURN_LAMBDA_PYTHON or use --python")
    use_fake_aws_env()
    samples: dict[str, list[dict[str, Any]]] = {}
    loads: list[float] = []
    with MotoServer() as moto, tempfile.TemporaryDirectory(prefix="agentturn-cold-") as scratch:
        folder = Path(scratch)
        assets = build_assets(folder / "assets", python_version)
        from agentturn.api.lambdas import DEPLOYED_ENVIRONMENT

        # What each variant's functions get from their construct besides the resources (the before checkout's own).
        deployed_env: dict[str, dict[str, str]] = {variant: dict(DEPLOYED_ENVIRONMENT) for variant in variants}
        if before is not None:
            assets["before"], deployed_env["before"] = build_before(before, folder / "before", python_version)
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
            "pydantic": lambda: {"table": resources.turns_table},
            "floor": lambda: {"table": resources.turns_table},
            "run": lambda: start_turn_event(f"cold-{uuid.uuid4().hex[:12]}"),
            "submit": lambda: submit_event(*waiting_turn()),
            "worker": lambda: sqs_event([queued_message()], resources.queue_url),
            "sweeper": schedule_event,
            "retention": lambda: retention_event,
        }
        for round_number in range(runs + 1):
            for variant in variants:
                for name, make_event in events.items():
                    # The anchor and the floor import from an asset too: the same pinned versions.
                    asset = assets[variant][ANCHOR_ASSETS.get(name, name)]
                    key = f"{name}/{variant}"
                    event_path, out = folder / f"{name}.event.json", folder / f"{name}.out.json"
                    event_path.write_text(json.dumps(make_event(), ensure_ascii=False))
                    env = _env(tracing=False, extra={**environment, "LAMBDA_TASK_ROOT": str(asset)})
                    env.pop("PYTHONPATH", None)
                    for variable in DEPLOYED_ENVIRONMENT:
                        env.pop(variable, None)
                    env.update(deployed_env[variant])
                    load_before = os.getloadavg()[0]
                    completed = subprocess.run(
                        python_in_asset(
                            interpreter,
                            asset,
                            _FIRST_REQUEST,
                            name,
                            str(out),
                            str(event_path),
                            options=("-X", "importtime") if importtime_dir else (),
                        ),
                        cwd=asset,
                        env={**env, "AWS_LAMBDA_FUNCTION_NAME": f"agentturn-{name}"},
                        capture_output=True,
                        text=True,
                        timeout=120,
                        check=False,
                    )
                    if completed.returncode != 0:
                        raise RuntimeError(f"first request of {key} failed: {completed.stderr[-2000:]}")
                    if importtime_dir is not None:
                        importtime_dir.mkdir(parents=True, exist_ok=True)
                        (importtime_dir / f"{name}.{variant}.txt").write_text(completed.stderr)
                    if round_number > 0:  # the first round reads the assets into the page cache
                        samples.setdefault(key, []).append(json.loads(out.read_text()))
                        loads += [load_before, os.getloadavg()[0]]
                    for message in handled:
                        # The worker answered: what its event source mapping then deletes.
                        sqs.delete_message(QueueUrl=resources.queue_url, ReceiptHandle=message["ReceiptHandle"])
                    handled.clear()
    rows = []
    for key, runs_of in samples.items():
        name, variant = key.split("/")
        rows.append(
            {
                "handler": name,
                "asset": variant,
                "import_ms": statistics.median(s["import_ms"] for s in runs_of),
                "first_answer_ms": statistics.median(s["total_ms"] for s in runs_of),
                "first_answer_ms_runs": [round(s["total_ms"], 1) for s in runs_of],
                # The child's own CPU (not the emulator's): steadier than wall time on a loaded machine.
                "first_answer_cpu_ms": statistics.median(s["cpu_ms"] for s in runs_of),
                "statuses": sorted({s["status"] for s in runs_of}),
                "modules_loaded": statistics.median(s["modules"] for s in runs_of),
            }
        )
    # The anchor is boto3 with byte code: the runtime's own boto3 is precompiled.
    baseline = next(r["first_answer_ms"] for r in rows if r["handler"] == "boto3" and r["asset"] == "pyc")
    baseline_cpu = next(r["first_answer_cpu_ms"] for r in rows if r["handler"] == "boto3" and r["asset"] == "pyc")
    # The floor: what any handler in this house's style pays before its own code (with byte code, as deployed).
    floor = next(r for r in rows if r["handler"] == "floor" and r["asset"] == "pyc")
    for row in rows:
        row["ratio_to_boto3_first_request"] = row["first_answer_ms"] / baseline
        row["cpu_ratio_to_boto3_first_request"] = row["first_answer_cpu_ms"] / baseline_cpu
        row["ratio_to_floor"] = row["first_answer_ms"] / floor["first_answer_ms"]
        row["cpu_ratio_to_floor"] = row["first_answer_cpu_ms"] / floor["first_answer_cpu_ms"]
    if before is not None:
        # Per handler, this checkout's deployed asset against the before checkout's, in the same rounds.
        was = {r["handler"]: r["first_answer_ms"] for r in rows if r["asset"] == "before"}
        was_cpu = {r["handler"]: r["first_answer_cpu_ms"] for r in rows if r["asset"] == "before"}
        for row in rows:
            if row["asset"] == "pyc" and row["handler"] in was:
                row["ratio_to_before"] = row["first_answer_ms"] / was[row["handler"]]
                row["cpu_ratio_to_before"] = row["first_answer_cpu_ms"] / was_cpu[row["handler"]]
    return {
        "python": python_version,
        "interpreter": interpreter,
        "read_only_mount": can_mount_read_only(),
        "load_average_1m": {"min": min(loads), "median": statistics.median(loads), "max": max(loads)},
        "before": str(before) if before is not None else None,
        "rows": sorted(rows, key=lambda r: (VARIANTS.index(r["asset"]), _ROW_ORDER.get(r["handler"], len(_ROW_ORDER)))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-first-request", action="store_true", help="imports only (no emulator)")
    parser.add_argument("--first-request-only", action="store_true", help="skip the source tree's import table")
    parser.add_argument("--importtime-dir", type=Path, help="also write each child's -X importtime report here")
    parser.add_argument("--python", default=DEPLOY_PYTHON, help="the Lambda runtime's version (default 3.12)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/imports.json"))
    parser.add_argument(
        "--assets",
        default="pyc,source",
        help="which assets of each function: pyc (deployed), source (without byte code), before (needs --before)",
    )
    parser.add_argument(
        "--before", type=Path, help="another checkout (e.g. `git worktree add` of main): its deployed assets too"
    )
    args = parser.parse_args()
    variants = tuple(v for v in args.assets.split(",") if v)
    if args.before is not None and "before" not in variants:
        variants = (*variants, "before")
    if "before" in variants and args.before is None:
        parser.error("--assets before needs --before PATH")
    if unknown := sorted(set(variants) - set(VARIANTS)) or ("pyc" not in variants and ["pyc"]):
        parser.error(f"--assets: {unknown!r} (pyc, the anchor's, is always measured)")
    present = [name for name in HANDLERS if (REPO / "functions" / name / "app.py").exists()]
    modules = ["boto3", *(f"functions.{name}.app" for name in present)]
    payload: dict[str, Any] = {"runs": args.runs, "modules": []}
    if not args.first_request_only:
        payload.update(measure_imports(modules, args.runs))
    payload["missing_handlers"] = [name for name in HANDLERS if name not in present]
    if not args.no_first_request:
        payload["first_request"] = measure_first_requests(
            args.runs, args.python, args.importtime_dir, variants=variants, before=args.before
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2))
    for row in payload["modules"]:
        on = row["importtime_tracing_on_ms"]
        print(
            f"{row['module']:>24} import {row['importtime_ms']:7.1f} ms ×boto3 {row['ratio_to_boto3']:.2f}  "
            f"tracing on {on if on is None else f'{on:.1f}'} ms  wall-empty {row['wall_minus_empty_ms']:7.1f} ms"
        )
    first = payload.get("first_request")
    if first:
        print(
            f"first answered request, built assets, Python {first['python']}, read-only: {first['read_only_mount']}, "
            f"load average (1 min) median {first['load_average_1m']['median']:.2f}"
        )
    for row in payload.get("first_request", {}).get("rows", []):
        print(
            f"{row['handler']:>10} {row['asset']:>6} first answer {row['first_answer_ms']:7.1f} ms "
            f"(import {row['import_ms']:.1f} ms) ×boto3+GetItem {row['ratio_to_boto3_first_request']:.2f} "
            f"cpu {row['first_answer_cpu_ms']:6.1f} ms ×boto3 {row['cpu_ratio_to_boto3_first_request']:.2f} "
            f"×floor {row['ratio_to_floor']:.2f} (cpu {row['cpu_ratio_to_floor']:.2f}) "
            + (
                f"×before {row['ratio_to_before']:.2f} (cpu {row['cpu_ratio_to_before']:.2f}) "
                if "ratio_to_before" in row
                else ""
            )
            + f"{row['statuses']}"
        )


if __name__ == "__main__":
    main()
