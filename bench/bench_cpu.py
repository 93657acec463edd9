"""CPU time of the runtime itself per form cycle: no I/O, in-memory persistence on both sides.

agentturn: Runner + Worker with InMemoryTurnStore, InMemoryChatMemory and InMemoryResumeQueue (snapshots
and timeline entries are kept as JSON text, as a real store keeps them), called as the handlers call them
(the projection receipt included); ``agentturn-handlers``: the whole Lambda code path on the same in-memory
ports — the run, submit and worker handlers on API Gateway and SQS events, and the client's GET of the answer
(Powertools resolver, logging and metrics included). LangGraph: the same graph as in the DynamoDB benchmark,
compiled with ``InMemorySaver`` (which pickles/serialises checkpoints with its serde; checkpoint compression is
a setting of its DynamoDB saver, not of the in-memory one).

Both systems run in one interpreter, interleaved cycle by cycle (alternating which goes first), so a
burst of load from anything else on the machine hits both alike; ``time.process_time`` around each
cycle; medians. At 0 earlier turns every cycle has a fresh conversation; at N the conversation grows
and cycles N … N+repeats-1 are measured. A full collection runs before the measured stretches.

    python -m bench.bench_cpu [--repeats 40] [--out bench/results/cpu.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

TEXT = "create a high priority login incident ticket"
DATA = {"affectedSystem": "统一登录系统", "impactScope": "ALL_USERS"}
Cycle = Callable[[str, str, dict[str, Any]], None]


def make_cycle(system: str) -> Cycle:
    if system == "agentturn":
        from bench._ours_side import in_memory_cycle

        return in_memory_cycle()
    if system == "agentturn-handlers":
        from bench._handler_side import in_memory_handler_cycle

        return in_memory_handler_cycle()
    if system == "langgraph":
        from langgraph.checkpoint.memory import InMemorySaver

        from bench._langgraph_side import LangGraphCycle, build_graph

        return LangGraphCycle(build_graph(InMemorySaver()))
    raise SystemExit(f"unknown system {system!r}")


def timed(cycle: Cycle, conversation: str) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    cycle(conversation, TEXT, DATA)
    return (time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000


def measure(systems: list[str], points: list[int], repeats: int, warmup: int) -> dict[str, list[dict[str, Any]]]:
    cycles = {name: make_cycle(name) for name in systems}

    def step(index: int, conversations: dict[str, str], samples: dict[str, list[tuple[float, float]]] | None) -> None:
        order = systems if index % 2 == 0 else systems[::-1]
        for name in order:
            sample = timed(cycles[name], conversations[name])
            if samples is not None:
                samples[name].append(sample)

    for index in range(warmup):
        step(index, {name: f"warm-{uuid.uuid4().hex}" for name in systems}, None)
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in systems}
    if 0 in points:
        gc.collect()
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in systems}
        for index in range(repeats):
            step(index, {name: f"fresh-{uuid.uuid4().hex}" for name in systems}, samples)
        for name in systems:
            results[name].append(_summary(0, samples[name]))
    growing = {name: f"grow-{uuid.uuid4().hex}" for name in systems}
    done = 0
    for target in sorted(p for p in points if p > 0):
        while done < target:
            step(done, growing, None)
            done += 1
        gc.collect()
        samples = {name: [] for name in systems}
        for _ in range(repeats):
            step(done, growing, samples)
            done += 1
        for name in systems:
            results[name].append(_summary(target, samples[name]))
    return results


def _summary(earlier: int, samples: list[tuple[float, float]]) -> dict[str, Any]:
    cpu = [c for c, _ in samples]
    wall = [w for _, w in samples]
    return {
        "earlier_turns": earlier,
        "cycles": len(samples),
        "cpu_ms_median": statistics.median(cpu),
        "cpu_ms_p90": statistics.quantiles(cpu, n=10)[-1] if len(cpu) >= 10 else max(cpu),
        "wall_ms_median": statistics.median(wall),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", default="agentturn,agentturn-handlers,langgraph")
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--points", default="0,10,50,100")
    parser.add_argument("--out", type=Path, default=Path("bench/results/cpu.json"))
    args = parser.parse_args()
    points = [int(p) for p in args.points.split(",")]
    systems = args.systems.split(",")
    started = time.perf_counter()
    results = measure(systems, points, args.repeats, args.warmup)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"repeats": args.repeats, "systems": results, "seconds": time.perf_counter() - started}
    args.out.write_text(json.dumps(payload, indent=2))
    for name, rows in results.items():
        for r in rows:
            print(f"{name:>18} N={r['earlier_turns']:<3} cpu {r['cpu_ms_median']:6.2f} ms (p90 {r['cpu_ms_p90']:.2f})")
    print(f"cpu benchmark: {payload['seconds']:.0f} s")


if __name__ == "__main__":
    main()
