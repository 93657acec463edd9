"""DynamoDB cost of one support-ticket form cycle, and the turn store's throughput, on the emulators.

Part 1 — one complete form cycle (run: ask → the tool needs a form → suspend; submit: validate → resume
→ enqueue; worker: claim → replay the tool → answer), as the three Lambdas would run it, each with its
own adapter instances. Counted with botocore event hooks on every client:

* requests, by DynamoDB operation and by adapter method (``store.save``, ``memory.append``, ...);
* write and read units: ``ReturnConsumedCapacity=TOTAL`` is added to every DynamoDB call by a
  ``before-parameter-build.dynamodb.*`` hook and the units are read from the responses. DynamoDB Local
  computes them from item sizes (indexes included); moto answers with constants, so its figures are
  shown but mean little;
* bytes written: the HTTP request body sizes of DynamoDB write calls (PutItem, UpdateItem, DeleteItem,
  BatchWriteItem), plus S3 PUTs and SQS sends separately.

The cycle is measured on a fresh conversation and after 10 and 100 earlier cycles in the same
conversation: a snapshot holds only its own turn, so the cost must stay flat.

Part 2 — store throughput with 8 worker threads (the shape of a published Redis/MySQL agent-store
benchmark): create 2,000 turns, claim + complete each (claim, save COMPLETED under the lease), then
10,000 loads. moto runs in its own process here, so its CPU is not the benchmark's.

    unshare -n -- sh -c 'ip link set lo up && python -m bench.bench_store'   # DynamoDB Local binds *:port
    python -m bench.bench_store --turns 500 --loads 2000 --skip-moto        # quicker

Never collected by pytest.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import platform
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `python bench/bench_store.py` works too

import boto3
from botocore.config import Config
from tests.support.emulators import FAKE_AWS_ENV, boto3_session_kwargs, start_dynamodb_local

from agentturn import ResumeCommand, Runner, Turn, TurnStatus, UserMessage, Worker
from agentturn.aws.chat_memory import DynamoDBChatMemory
from agentturn.aws.resume_queue import SqsResumeQueue, parse_resume_message
from agentturn.aws.tables import TableNames, create_tables
from agentturn.aws.turn_store import DynamoDBTurnStore
from agentturn.demo import TicketLedger, demo_agents
from agentturn.engine.clock import iso
from agentturn.timeline.identity import stamp

SUPPORT_DATA = {"affectedSystem": "统一登录系统", "impactScope": "ALL_USERS"}
DYNAMODB_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
CAPACITY_OPERATIONS = DYNAMODB_WRITES | {"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"}
CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, max_pool_connections=64)


# ------------------------------------------------------------------------------------------- metering


@dataclass
class Meter:
    """What went over the wire, from botocore's event hooks; attributed to the adapter method running."""

    requests: Counter[str] = field(default_factory=Counter)
    by_method: Counter[str] = field(default_factory=Counter)
    write_units: float = 0.0
    read_units: float = 0.0
    dynamodb_bytes_written: int = 0
    other: Counter[str] = field(default_factory=Counter)
    other_bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _method: threading.local = field(default_factory=threading.local)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.by_method.clear()
            self.other.clear()
            self.write_units = self.read_units = 0.0
            self.dynamodb_bytes_written = self.other_bytes = 0

    def attach(self, client: Any) -> Any:
        events = client.meta.events
        service = client.meta.service_model.service_name
        if service == "dynamodb":
            events.register("before-parameter-build.dynamodb.*", self._ask_for_capacity)
            events.register("after-call.dynamodb.*", self._read_capacity)
        events.register(f"before-send.{service}.*", self._count)
        return client

    @staticmethod
    def _ask_for_capacity(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in CAPACITY_OPERATIONS:
            params.setdefault("ReturnConsumedCapacity", "TOTAL")

    def _read_capacity(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        consumed = parsed.get("ConsumedCapacity")
        entries = consumed if isinstance(consumed, list) else [consumed] if consumed else []
        units = sum(float(e.get("CapacityUnits", 0.0)) for e in entries)
        with self._lock:
            if model.name in DYNAMODB_WRITES:
                self.write_units += units
            else:
                self.read_units += units

    def _count(self, request: Any, event_name: str, **_: Any) -> None:
        _, service, operation = event_name.split(".", 2)
        body = request.body or b""
        size = len(body) if isinstance(body, bytes | bytearray | str) else 0
        method = getattr(self._method, "name", "?")
        with self._lock:
            if service == "dynamodb":
                self.requests[operation] += 1
                self.by_method[method] += 1
                if operation in DYNAMODB_WRITES:
                    self.dynamodb_bytes_written += size
            else:
                self.other[f"{service}.{operation}"] += 1
                if operation in ("PutObject", "SendMessage"):
                    self.other_bytes += size

    @contextlib.contextmanager
    def method(self, name: str) -> Iterator[None]:
        outer = getattr(self._method, "name", None)
        if outer is None:
            self._method.name = name
        try:
            yield
        finally:
            if outer is None:
                del self._method.name

    def wrap(self, target: Any, prefix: str) -> Any:
        return _Metered(target, prefix, self)


class _Metered:
    """Attributes the requests made inside each method call of ``target`` to ``prefix.method``."""

    def __init__(self, target: Any, prefix: str, meter: Meter) -> None:
        self._target, self._prefix, self._meter = target, prefix, meter

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._meter.method(f"{self._prefix}.{name}"):
                return value(*args, **kwargs)

        return call


# ------------------------------------------------------------------------------------------ emulators


class MotoProcess:
    """moto's server in its own process on 127.0.0.1 (so its CPU is not the benchmark's)."""

    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.endpoint_url = f"http://127.0.0.1:{self.port}"
        code = (
            "import logging, sys; logging.getLogger('werkzeug').setLevel(logging.ERROR); "
            "from moto.server import main; main(['-H', '127.0.0.1', '-p', sys.argv[1]])"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **FAKE_AWS_ENV},
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{self.endpoint_url}/moto-api/", timeout=1):
                    return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


@dataclass
class Target:
    name: str
    dynamodb_url: str
    s3_url: str
    meter: Meter = field(default_factory=Meter)
    names: TableNames = field(init=False)

    def client(self, service: str, url: str) -> Any:
        return self.meter.attach(boto3.client(service, endpoint_url=url, config=CONFIG, **boto3_session_kwargs()))

    def __post_init__(self) -> None:
        suffix = uuid.uuid4().hex[:8]
        self.names = TableNames(
            turns_table=f"turns-{suffix}",
            conversations_table=f"conversations-{suffix}",
            idempotency_table=f"idempotency-{suffix}",
            snapshot_bucket=f"snapshots-{suffix}",
        )
        admin = boto3.client("dynamodb", endpoint_url=self.dynamodb_url, **boto3_session_kwargs())
        create_tables(admin, self.names)
        s3 = boto3.client("s3", endpoint_url=self.s3_url, **boto3_session_kwargs())
        s3.create_bucket(Bucket=self.names.snapshot_bucket or "")
        sqs = boto3.client("sqs", endpoint_url=self.s3_url, **boto3_session_kwargs())
        self.queue_url = sqs.create_queue(QueueName=f"resume-{suffix}")["QueueUrl"]

    def lambda_process(self) -> tuple[Runner, SqsResumeQueue, Any]:
        """What one Lambda has: its own clients and adapters (metered), a Runner with the demo agents."""
        dynamodb = self.client("dynamodb", self.dynamodb_url)
        s3 = self.client("s3", self.s3_url)
        sqs = self.client("sqs", self.s3_url)
        bucket = self.names.snapshot_bucket
        store = DynamoDBTurnStore(self.names.turns_table, client=dynamodb, s3_client=s3, bucket=bucket)
        memory = DynamoDBChatMemory(self.names.conversations_table, client=dynamodb, s3_client=s3, bucket=bucket)
        runner = Runner(
            store=self.meter.wrap(store, "store"),
            chat_memory=lambda cid: self.meter.wrap(memory(cid), "memory"),
            agents=demo_agents(LEDGER),
        )
        return runner, SqsResumeQueue(self.queue_url, sqs), sqs


LEDGER = TicketLedger()


# ------------------------------------------------------------------------------------------ form cycle


def form_cycle(target: Target, conversation_id: str) -> Turn:
    """run λ → submit λ (+ enqueue) → worker λ (receive, parse, process), each a separate "process"."""
    run_runner, _, _ = target.lambda_process()
    support = next(a for a in demo_agents(LEDGER) if a.id == "support-agent")
    waiting = run_runner.run(support, conversation_id, "create a high priority login incident ticket")
    assert waiting.status is TurnStatus.WAITING_FOR_USER and waiting.suspension is not None, waiting.status
    submit_runner, queue, _ = target.lambda_process()
    accepted = submit_runner.submit_resume(
        waiting.id, ResumeCommand.user_input(waiting.suspension.correlation_id, SUPPORT_DATA)
    )
    # As the submit Lambda does: the message carries the receipt that the timeline shows this version.
    queue.enqueue(accepted.id, accepted.version)
    worker_runner, _, sqs = target.lambda_process()
    received = sqs.receive_message(QueueUrl=target.queue_url, MaxNumberOfMessages=1, WaitTimeSeconds=1)["Messages"]
    message = parse_resume_message(received[0]["Body"])
    sqs.delete_message(QueueUrl=target.queue_url, ReceiptHandle=received[0]["ReceiptHandle"])
    done = Worker(worker_runner).process(message.turn_id).turn
    assert done is not None and done.status is TurnStatus.COMPLETED, done
    return done


@dataclass
class CycleFigures:
    requests: Counter[str]
    by_method: Counter[str]
    write_units: float
    read_units: float
    bytes_written: int
    other: Counter[str]
    wall_ms: float


def measure_cycle(target: Target, earlier: int) -> CycleFigures:
    conversation_id = f"conversation-{uuid.uuid4().hex[:8]}"
    for _ in range(earlier):
        form_cycle(target, conversation_id)
    target.meter.reset()
    started = time.perf_counter()
    form_cycle(target, conversation_id)
    wall = (time.perf_counter() - started) * 1000
    meter = target.meter
    return CycleFigures(
        Counter(meter.requests),
        Counter(meter.by_method),
        meter.write_units,
        meter.read_units,
        meter.dynamodb_bytes_written,
        Counter(meter.other),
        wall,
    )


def print_cycle(target: Target, points: list[int]) -> None:
    print(f"\n## {target.name}: one support-ticket form cycle (run → submit → worker)")
    figures = {n: measure_cycle(target, n) for n in points}
    print(
        f"{'earlier cycles':>14} {'DDB req':>7} {'WCU':>6} {'RCU':>6} {'bytes written':>13} "
        f"{'S3/SQS req':>10} {'wall ms':>8}"
    )
    for n, f in figures.items():
        print(
            f"{n:>14} {sum(f.requests.values()):>7} {f.write_units:>6.1f} {f.read_units:>6.1f} "
            f"{f.bytes_written:>13} {sum(f.other.values()):>10} {f.wall_ms:>8.1f}"
        )
    fresh = figures[points[0]]
    print("\nrequests by DynamoDB operation (fresh conversation):", dict(sorted(fresh.requests.items())))
    print("other AWS requests:", dict(sorted(fresh.other.items())))
    print("requests by adapter method (fresh conversation):")
    for method, count in sorted(fresh.by_method.items()):
        print(f"  {method:<28} {count}")


# ------------------------------------------------------------------------------------------ throughput


def timed(pool: ThreadPoolExecutor, items: list[Any], action: Callable[[Any], Any]) -> tuple[float, list[float]]:
    """(ops per second, per-op latencies in ms) of ``action`` over ``items`` on the pool."""

    def one(item: Any) -> float:
        started = time.perf_counter()
        action(item)
        return (time.perf_counter() - started) * 1000

    started = time.perf_counter()
    latencies = list(pool.map(one, items))
    elapsed = time.perf_counter() - started
    return len(items) / elapsed, latencies


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def sample_turn(index: int) -> Turn:
    turn = Turn(
        id=uuid.uuid4().hex,
        conversation_id=f"bench-{index}",
        agent_id="support-agent",
        agent_version="1",
        input="create a high priority login incident ticket",
        created_at=iso(time.time()),
        updated_at=iso(time.time()),
    )
    turn.messages.append(stamp(turn, UserMessage(content=turn.input)))
    return turn


def throughput(target: Target, turns: int, loads: int, threads: int) -> None:
    client = boto3.client("dynamodb", endpoint_url=target.dynamodb_url, config=CONFIG, **boto3_session_kwargs())
    store = DynamoDBTurnStore(target.names.turns_table, client=client)
    created: list[Turn] = []
    lock = threading.Lock()

    def create(index: int) -> None:
        turn = store.create(sample_turn(index))
        with lock:
            created.append(turn)

    def claim_and_complete(turn: Turn) -> None:
        lease = store.claim(turn.id, "bench-worker", 60)
        assert lease is not None
        done = turn.model_copy(update={"status": TurnStatus.COMPLETED, "final_output": "done"})
        store.save(done, expected_version=turn.version, lease_id=lease.lease_id)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        rows = [("create", *timed(pool, list(range(turns)), create))]
        rows.append(("claim+complete", *timed(pool, list(created), claim_and_complete)))
        ids = [created[i % len(created)].id for i in range(loads)]
        rows.append(("load", *timed(pool, ids, store.load)))
    print(f"\n## {target.name}: store throughput, {threads} threads ({turns} turns, {loads} loads)")
    print(f"{'operation':<16} {'count':>6} {'ops/s':>8} {'p50 ms':>7} {'p99 ms':>7}")
    for name, rate, latencies in rows:
        p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
        print(f"{name:<16} {len(latencies):>6} {rate:>8.0f} {p50:>7.2f} {p99:>7.2f}")


# ------------------------------------------------------------------------------------------------ main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--loads", type=int, default=10000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--points", default="0,10,100", help="earlier cycles before the measured one")
    parser.add_argument("--skip-moto", action="store_true")
    args = parser.parse_args()
    points = [int(p) for p in args.points.split(",")]
    os.environ.update(FAKE_AWS_ENV)
    for name in [n for n in os.environ if n.startswith("AWS_ENDPOINT_URL")]:
        del os.environ[name]
    logging.getLogger("agentturn").setLevel(logging.ERROR)
    python = platform.python_version()
    print(f"# agentturn DynamoDB adapters — Python {python} on {platform.machine()}, {os.cpu_count()} CPUs")
    moto = MotoProcess()
    dynamodb_local = start_dynamodb_local()
    try:
        local = Target("DynamoDB Local 3.x (S3/SQS on moto)", dynamodb_local.endpoint_url, moto.endpoint_url)
        print_cycle(local, points)
        if not args.skip_moto:
            print_cycle(Target("moto server (DynamoDB, S3, SQS)", moto.endpoint_url, moto.endpoint_url), points[:1])
            print("(moto's ConsumedCapacity is a constant per call, not computed from item sizes)")
        throughput(
            Target("DynamoDB Local", dynamodb_local.endpoint_url, moto.endpoint_url),
            args.turns,
            args.loads,
            args.threads,
        )
        if not args.skip_moto:
            throughput(
                Target("moto server (own process)", moto.endpoint_url, moto.endpoint_url),
                args.turns,
                args.loads,
                args.threads,
            )
    finally:
        dynamodb_local.stop()
        moto.stop()


if __name__ == "__main__":
    main()
