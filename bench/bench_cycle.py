"""One support-ticket form cycle on the same moto server, agentturn vs LangGraph, and how it grows.

For each system, at 0, 10, 50 and 100 earlier turns in the same conversation (agentturn: one
conversation_id; LangGraph: one thread_id): AWS requests by service and operation, DynamoDB write units,
bytes written, wall time, the benchmark process's CPU (the runtime + boto3, what a Lambda would burn) and
the emulator's CPU.

* Every figure is counted by the same botocore hooks on every client (``bench/_aws_counter.py``).
* At each point the first cycle is an *accounting* cycle (write units from item sizes, which needs extra
  uncounted reads) and is not timed; the next ``--repeats`` cycles are timed. "After N earlier turns"
  means the accounting cycle has exactly N before it; the timed ones N+1 … N+repeats.
* The systems run interleaved, cycle by cycle, alternating which goes first, so drift in the machine's
  load hits both alike.

    python -m bench.bench_cycle [--repeats 7] [--points 0,10,50,100] [--out bench/results/cycle.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._aws_counter import AwsCounter, Tally, item_size, probe_moto_consumed_capacity
from bench._aws_setup import client, langgraph_saver, ours_resources
from bench._handlers import DATA, TEXT
from bench._moto import MotoServer, use_fake_aws_env

Cycle = Callable[[str, str, dict[str, Any]], None]


@dataclass
class Point:
    """Figures of one system at one conversation length."""

    earlier_turns: int
    accounting: dict[str, Any] = field(default_factory=dict)
    wall_ms: list[float] = field(default_factory=list)
    client_cpu_ms: list[float] = field(default_factory=list)
    emulator_cpu_ms: list[float] = field(default_factory=list)
    timed_tallies: list[dict[str, Any]] = field(default_factory=list)
    phase_ms: dict[str, list[float]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        counts = [t["dynamodb_requests"] for t in self.timed_tallies]
        return {
            "earlier_turns": self.earlier_turns,
            **self.accounting,
            "timed_cycles": len(self.wall_ms),
            "wall_ms_median": statistics.median(self.wall_ms),
            "wall_ms_min": min(self.wall_ms),
            "wall_ms_max": max(self.wall_ms),
            "client_cpu_ms_median": statistics.median(self.client_cpu_ms),
            # The emulator's CPU is read at 10 ms resolution: the mean over the timed cycles is the figure.
            "emulator_cpu_ms_mean": statistics.fmean(self.emulator_cpu_ms),
            "timed_dynamodb_requests_min": min(counts),
            "timed_dynamodb_requests_max": max(counts),
            "wall_ms_samples": self.wall_ms,
            "phase_ms_median": {phase: statistics.median(v) for phase, v in self.phase_ms.items()},
        }


@dataclass
class System:
    name: str
    cycle: Cycle
    counter: AwsCounter
    prefix: str
    #: Called after a failed cycle, before it is tried again (agentturn: cancel the conversation's turn).
    recover: Callable[[str], None] | None = None
    points: dict[int, Point] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    #: where the system keeps its data (for what is stored at the end of the run)
    tables: list[str] = field(default_factory=list)
    buckets: list[str] = field(default_factory=list)

    def conversation(self) -> str:
        return f"{self.prefix}-{uuid.uuid4().hex[:12]}"


def _run_once(system: System, moto: MotoServer, conversation: str, mode: str, point: Point | None) -> None:
    counter = system.counter
    for attempt in (1, 2):
        counter.reset()
        counter.accounting = mode == "account"
        emulator_before = moto.cpu_seconds()
        wall_before, cpu_before = time.perf_counter(), time.process_time()
        try:
            system.cycle(conversation, TEXT, DATA)
            break
        except Exception as exc:
            # Recorded in the results and tried once more: one failure must not lose the whole run.
            counter.accounting = False
            system.failures.append(f"{mode} cycle on {conversation}: {type(exc).__name__}: {exc}")
            print(f"  {system.name}: cycle failed ({type(exc).__name__}: {exc}); trying again", flush=True)
            if attempt == 2:
                raise
            if system.recover is not None:
                system.recover(conversation)
    wall, cpu = time.perf_counter() - wall_before, time.process_time() - cpu_before
    emulator = moto.cpu_seconds() - emulator_before
    counter.accounting = False
    tally: Tally = counter.reset()
    if point is None:
        return
    if mode == "account":
        point.accounting = tally.as_dict()
    else:
        point.wall_ms.append(wall * 1000)
        point.client_cpu_ms.append(cpu * 1000)
        point.emulator_cpu_ms.append(emulator * 1000)
        point.timed_tallies.append(tally.as_dict())
        for phase, seconds in getattr(system.cycle, "last_phases", {}).items():
            point.phase_ms.setdefault(phase, []).append(seconds * 1000)


def measure(systems: list[System], moto: MotoServer, points: list[int], repeats: int, warmup: int) -> None:
    def step(index: int, conversations: dict[str, str], mode: str, point_of: Callable[[System], Point | None]) -> None:
        order = systems if index % 2 == 0 else systems[::-1]
        for system in order:
            _run_once(system, moto, conversations[system.name], mode, point_of(system))

    # Warm-up: imports, connection pools, first-call caches; not measured.
    for index in range(warmup):
        step(index, {s.name: s.conversation() for s in systems}, "plain", lambda _: None)
    # 0 earlier turns: a fresh conversation for every cycle.
    if 0 in points:
        for system in systems:
            system.points[0] = Point(0)
        for index in range(repeats + 1):
            mode = "account" if index == 0 else "timed"
            step(index, {s.name: s.conversation() for s in systems}, mode, lambda s: s.points[0])
    # N earlier turns: one conversation that grows; measured when it has N turns behind it.
    growing = {s.name: s.conversation() for s in systems}
    done = 0
    for target in sorted(p for p in points if p > 0):
        while done < target:
            step(done, growing, "plain", lambda _: None)
            done += 1
        for system in systems:
            system.points[target] = Point(target)

        def at_target(system: System, target: int = target) -> Point | None:
            return system.points[target]

        for index in range(repeats + 1):
            mode = "account" if index == 0 else "timed"
            step(done, growing, mode, at_target)
            done += 1
        print(f"  measured at {target} earlier turns", flush=True)


def stored_bytes(endpoint_url: str, system: System) -> dict[str, Any]:
    """Items and bytes the system keeps after the whole run (every conversation it ran), by scanning."""
    dynamodb, s3 = client("dynamodb", endpoint_url), client("s3", endpoint_url)
    items = size = 0
    for table in system.tables:
        for page in dynamodb.get_paginator("scan").paginate(TableName=table):
            items += len(page["Items"])
            size += sum(item_size(item) for item in page["Items"])
    objects = object_bytes = 0
    for bucket in system.buckets:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            objects += len(page.get("Contents", []))
            object_bytes += sum(o["Size"] for o in page.get("Contents", []))
    return {"items": items, "item_bytes": size, "s3_objects": objects, "s3_bytes": object_bytes}


def build_systems(moto: MotoServer, *, with_exit_mode: bool) -> tuple[list[System], dict[str, Any]]:
    from bench._handler_side import INVOCATIONS_PER_CYCLE, aws_handler_cycle
    from bench._langgraph_side import LangGraphCycle, build_graph

    plain = client("dynamodb", moto.endpoint_url)
    systems: list[System] = []

    counter = AwsCounter(accounting_client=plain)
    resources = ours_resources(moto.endpoint_url, AwsCounter(), plain)
    ours = aws_handler_cycle(resources, moto.endpoint_url, counter)
    systems.append(
        System(
            "agentturn",
            ours,
            counter,
            "conv",
            recover=ours.recover,
            tables=[resources.turns_table, resources.conversations_table],
            buckets=[resources.bucket],
        )
    )

    def langgraph(name: str, *, compression: bool, durability: str | None = None) -> None:
        lg_counter = AwsCounter(accounting_client=plain)
        saver = langgraph_saver(moto.endpoint_url, lg_counter, plain, compression=compression)
        systems.append(
            System(
                name,
                LangGraphCycle(build_graph(saver), durability=durability),
                lg_counter,
                "thread",
                tables=[saver.table_name],
                buckets=[saver.storage.s3_bucket],
            )
        )

    langgraph("langgraph", compression=False)
    langgraph("langgraph-compressed", compression=True)
    if with_exit_mode:
        langgraph("langgraph-exit", compression=True, durability="exit")
    config: dict[str, Any] = {
        "agentturn": {
            "path": "the Lambda handlers (functions/run, submit, worker app.py) on API Gateway v2 and SQS events; "
            "the client's GET /turns/{turnId} for the answer",
            "lambda_invocations_per_cycle": INVOCATIONS_PER_CYCLE,
            "http_requests_per_cycle": 3,
            "turn_store": "DynamoDBTurnStore (snapshot bucket configured), as the handlers' wiring builds it",
            "chat_memory": "DynamoDBChatMemory (bucket configured)",
            "queue": "SqsResumeQueue (standard queue)",
        },
        "langgraph": {
            "checkpointer": "DynamoDBSaver(s3_offload_config)",
            "durability": "default (async)",
            "lambda_invocations_per_cycle": 2,
            "http_requests_per_cycle": 2,
        },
        "langgraph-compressed": {
            "checkpointer": "DynamoDBSaver(s3_offload_config, enable_checkpoint_compression=True)",
            "durability": "default (async)",
            "lambda_invocations_per_cycle": 2,
            "http_requests_per_cycle": 2,
        },
    }
    if with_exit_mode:
        config["langgraph-exit"] = {
            "checkpointer": "DynamoDBSaver(s3_offload_config, enable_checkpoint_compression=True)",
            "durability": "exit",
            "lambda_invocations_per_cycle": 2,
            "http_requests_per_cycle": 2,
        }
    return systems, config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--points", default="0,10,50,100")
    parser.add_argument("--no-exit-mode", action="store_true", help="skip LangGraph with durability='exit'")
    parser.add_argument("--out", type=Path, default=Path("bench/results/cycle.json"))
    args = parser.parse_args()
    points = [int(p) for p in args.points.split(",")]
    use_fake_aws_env()
    started = time.perf_counter()
    with MotoServer() as moto:
        probe = probe_moto_consumed_capacity(client("dynamodb", moto.endpoint_url))
        systems, config = build_systems(moto, with_exit_mode=not args.no_exit_mode)
        measure(systems, moto, points, args.repeats, args.warmup)
        stored = {s.name: stored_bytes(moto.endpoint_url, s) for s in systems}
    result = {
        "repeats": args.repeats,
        "points": points,
        "moto_consumed_capacity_probe": probe,
        "configuration": config,
        "systems": {s.name: [s.points[p].summary() for p in points] for s in systems},
        "failures": {s.name: s.failures for s in systems if s.failures},
        "stored_at_end": stored,
        "seconds": time.perf_counter() - started,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    for system in systems:
        for p in points:
            s = system.points[p].summary()
            print(
                f"{system.name:>15} N={p:<3} ddb={s['dynamodb_requests']:>3} s3={s['s3_requests']} "
                f"sqs={s['sqs_requests']} wcu={s['write_units']:>5} bytes={s['dynamodb_write_bytes']:>7} "
                f"wall={s['wall_ms_median']:7.1f} ms cpu={s['client_cpu_ms_median']:6.1f} ms "
                f"emu={s['emulator_cpu_ms_mean']:6.1f} ms"
            )
    print(f"cycle benchmark: {result['seconds']:.0f} s")


if __name__ == "__main__":
    main()
