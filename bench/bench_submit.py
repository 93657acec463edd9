"""The submit path under load: ``functions/submit/app.py`` invoked with API Gateway HTTP API (payload 2.0)
events, from 1, 4 and 16 client threads, on a moto server in its own process.

* Events are the recorded ``tests/events/http_submit_form.json`` re-targeted (path, route parameters,
  ``Idempotency-Key``, body, JWT ``sub``), so the handler sees what API Gateway would send.
* Each thread is its own Lambda container: its own import of ``app.py`` (own Powertools resolver, own
  lazily built boto3 clients), as Lambda gives every concurrent invocation its own container. They still
  share this process's GIL and the machine's 2 cores with the emulator, so the figures are a property of
  the handler *and* this emulator, not of AWS.
* Before each stage, N waiting turns are created through the run handler (each its own conversation);
  every submit answers a distinct one. Each stage is bounded in count and in time.
* The resume queue is drained by a separate process while the submits run (moto's SQS slows down as a
  queue gets deeper; a real queue does not).
* Every response is checked: 202, and the turn and action it names are the ones submitted.

    python -m bench.bench_submit [--threads 1,4,16] [--submits 60,120,240] [--out bench/results/submit.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

from bench._aws_counter import AwsCounter
from bench._aws_setup import client, ours_resources
from bench._handlers import REPO, lambda_context, load_app, quiet_stdout, start_turn_event, submit_event
from bench._moto import MotoServer, use_fake_aws_env


def create_waiting_turns(count: int, containers: list[ModuleType]) -> list[tuple[str, str]]:
    """``count`` turns waiting for the support form, through the run handler, ``len(containers)`` at a time."""
    created: list[tuple[str, str]] = []
    failures: list[str] = []
    lock = threading.Lock()
    per_worker = [count // len(containers) + (1 if i < count % len(containers) else 0) for i in range(len(containers))]

    def work(container: ModuleType, how_many: int) -> None:
        for _ in range(how_many):
            event = start_turn_event(f"load-{uuid.uuid4().hex[:12]}")
            response = container.handler(event, lambda_context("run", 29_000))
            body = json.loads(response["body"])
            with lock:
                if response["statusCode"] == 200 and body.get("status") == "WAITING_FOR_USER":
                    created.append((body["turnId"], body["suspension"]["actionId"]))
                else:
                    failures.append(f"{response['statusCode']}: {response['body'][:300]}")

    threads = [threading.Thread(target=work, args=(c, n)) for c, n in zip(containers, per_worker, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    if failures:
        raise RuntimeError(f"{len(failures)} turns could not be created; first: {failures[0]}")
    return created


def drainer(endpoint_url: str, queue_url: str, seconds: float) -> subprocess.Popen[bytes]:
    code = (
        "import sys, time, boto3\n"
        "sqs = boto3.client('sqs', endpoint_url=sys.argv[1], region_name='us-east-1')\n"
        "deadline = time.monotonic() + float(sys.argv[3])\n"
        "while time.monotonic() < deadline:\n"
        "    got = sqs.receive_message(QueueUrl=sys.argv[2], MaxNumberOfMessages=10, WaitTimeSeconds=1)\n"
        "    messages = got.get('Messages', [])\n"
        "    batch = [{'Id': str(i), 'ReceiptHandle': m['ReceiptHandle']} for i, m in enumerate(messages)]\n"
        "    if batch:\n"
        "        sqs.delete_message_batch(QueueUrl=sys.argv[2], Entries=batch)\n"
    )
    return subprocess.Popen([sys.executable, "-c", code, endpoint_url, queue_url, str(seconds)])


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def run_stage(
    threads: int,
    turns: list[tuple[str, str]],
    containers: list[ModuleType],
    counter: AwsCounter,
    time_limit: float,
    moto: MotoServer,
) -> dict[str, Any]:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    work = list(turns)
    deadline = time.monotonic() + time_limit

    def client_thread(container: ModuleType) -> None:
        while time.monotonic() < deadline:
            with lock:
                if not work:
                    return
                turn_id, action_id = work.pop()
            event = submit_event(turn_id, action_id)
            started = time.perf_counter()
            response = container.handler(event, lambda_context("submit", 15_000))
            elapsed = time.perf_counter() - started
            body = json.loads(response["body"])
            ok = response["statusCode"] == 202 and body.get("turnId") == turn_id and body.get("actionId") == action_id
            with lock:
                if ok:
                    latencies.append(elapsed * 1000)
                else:
                    errors.append(f"{response['statusCode']}: {response['body'][:300]}")

    counter.reset()
    started, cpu_started, emulator_started = time.perf_counter(), time.process_time(), moto.cpu_seconds()
    pool = [threading.Thread(target=client_thread, args=(containers[i],)) for i in range(threads)]
    with quiet_stdout():
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join(timeout=time_limit + 60)
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    emulator = moto.cpu_seconds() - emulator_started
    tally = counter.reset()
    done = len(latencies)
    requests = {
        "dynamodb": tally.by_operation("dynamodb"),
        "sqs": tally.by_operation("sqs"),
        "s3": tally.by_operation("s3"),
    }
    total = sum(sum(ops.values()) for ops in requests.values())
    return {
        "threads": threads,
        "submits": done,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "seconds": elapsed,
        "submits_per_second": done / elapsed if elapsed else 0.0,
        "p50_ms": percentile(latencies, 50) if latencies else None,
        "p95_ms": percentile(latencies, 95) if latencies else None,
        "p99_ms": percentile(latencies, 99) if latencies else None,
        "mean_ms": statistics.fmean(latencies) if latencies else None,
        "aws_requests_per_submit": total / (done + len(errors)) if done + len(errors) else None,
        # This process (handlers + boto3; the drainer is another process) and the emulator, per submit.
        "handler_cpu_ms_per_submit": cpu * 1000 / done if done else None,
        "emulator_cpu_ms_per_submit": emulator * 1000 / done if done else None,
        "requests_by_operation": requests,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", default="1,4,16")
    parser.add_argument("--submits", default="60,120,240", help="submits per stage (one distinct turn each)")
    parser.add_argument("--stage-seconds", type=float, default=60.0, help="time limit of each stage")
    parser.add_argument("--out", type=Path, default=Path("bench/results/submit.json"))
    args = parser.parse_args()
    thread_counts = [int(t) for t in args.threads.split(",")]
    submit_counts = [int(n) for n in args.submits.split(",")]
    if not (REPO / "functions" / "submit" / "app.py").exists():
        raise SystemExit("functions/submit/app.py does not exist yet: nothing to measure")
    use_fake_aws_env()
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "agentturn-bench")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    started = time.perf_counter()
    stages: list[dict[str, Any]] = []
    with MotoServer() as moto:
        plain = client("dynamodb", moto.endpoint_url)
        resources = ours_resources(moto.endpoint_url, AwsCounter(), plain)
        os.environ.update(resources.env())
        os.environ["AWS_ENDPOINT_URL"] = moto.endpoint_url
        os.environ["AGENTTURN_DEFAULT_AGENT"] = "support-agent"
        counter = AwsCounter()
        most = max(thread_counts)
        with quiet_stdout():
            submitters = [load_app("submit", i) for i in range(most)]
            runners = [load_app("run", i) for i in range(4)]
            # Build every container's services (and boto3 clients) one at a time, as cold starts do: boto3's
            # default session is not safe for concurrent client creation.
            for container in [*submitters, *runners]:
                services = container.api.services
            for container in submitters:
                services = container.api.services
                counter.attach(services.store.client)
                counter.attach(services.queue.client)
                blobs = getattr(services.store, "_blobs", None)
                if blobs is not None:
                    counter.attach(blobs.client)
        total_seconds = args.stage_seconds * len(thread_counts) + 600
        drain = drainer(moto.endpoint_url, resources.queue_url, total_seconds)
        try:
            for threads, submits in zip(thread_counts, submit_counts, strict=True):
                created_at = time.perf_counter()
                with quiet_stdout():
                    turns = create_waiting_turns(submits, runners)
                print(f"  {len(turns)} waiting turns created in {time.perf_counter() - created_at:.1f} s", flush=True)
                stage = run_stage(threads, turns, submitters, counter, args.stage_seconds, moto)
                stages.append(stage)
                print(
                    f"  {threads:>2} threads: {stage['submits']} submits, {stage['submits_per_second']:.1f}/s, "
                    f"p50 {stage['p50_ms']:.1f} p95 {stage['p95_ms']:.1f} p99 {stage['p99_ms']:.1f} ms, "
                    f"{stage['aws_requests_per_submit']:.2f} AWS requests/submit, errors {stage['errors']}",
                    flush=True,
                )
        finally:
            drain.terminate()
            drain.wait(timeout=10)
    payload = {"stages": stages, "seconds": time.perf_counter() - started}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2))
    print(f"submit benchmark: {payload['seconds']:.0f} s")


if __name__ == "__main__":
    main()
