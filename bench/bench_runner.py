"""Runner overhead per form cycle with the scripted model and in-memory adapters (no I/O).

One cycle is the seed's support-ticket flow: run → the tool asks for a form → suspend → submit_resume →
worker resumes → the tool is replayed → the model answers. Reported: median wall and CPU time per cycle,
snapshot writes and bytes per cycle, on a fresh conversation and after N earlier turns in it.

    python bench/bench_runner.py [--cycles 200]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from typing import Any

from agentturn import InMemoryChatMemory, InMemoryTurnStore, Lease, ResumeCommand, Runner, Turn, Worker
from agentturn.demo import demo_agents

DATA = {"affectedSystem": "统一登录系统", "impactScope": "ALL_USERS"}


class CountingStore(InMemoryTurnStore):
    """Counts snapshot writes and the bytes they carry."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.bytes = 0

    def create(self, turn: Turn, *, lease: Lease | None = None) -> Turn:
        self.writes += 1
        self.bytes += len(turn.model_dump_json(by_alias=True))
        return super().create(turn, lease=lease)

    def save(self, turn: Turn, *, expected_version: int, lease_id: str | None = None) -> Turn:
        self.writes += 1
        self.bytes += len(turn.model_dump_json(by_alias=True))
        return super().save(turn, expected_version=expected_version, lease_id=lease_id)


def one_cycle(runner: Runner, worker: Worker, agent: Any, conversation_id: str) -> None:
    waiting = runner.run(agent, conversation_id, "create a high priority login incident ticket")
    assert waiting.suspension is not None
    runner.submit_resume(waiting.id, ResumeCommand.user_input(waiting.suspension.correlation_id, DATA))
    done = worker.process(waiting.id).turn
    assert done is not None and done.status.value == "COMPLETED", done


def measure(cycles: int, earlier_turns: int) -> dict[str, float]:
    store = CountingStore()
    runner = Runner(store=store, chat_memory=InMemoryChatMemory(), agents=demo_agents())
    agent = next(a for a in demo_agents() if a.id == "support-agent")
    runner.register(agent)
    worker = Worker(runner)
    wall: list[float] = []
    cpu: list[float] = []
    writes: list[int] = []
    written: list[int] = []
    for index in range(cycles):
        conversation = f"conv-{index}"
        for _ in range(earlier_turns):
            one_cycle(runner, worker, agent, conversation)
        store.writes = store.bytes = 0
        started_wall, started_cpu = time.perf_counter(), time.process_time()
        one_cycle(runner, worker, agent, conversation)
        wall.append(time.perf_counter() - started_wall)
        cpu.append(time.process_time() - started_cpu)
        writes.append(store.writes)
        written.append(store.bytes)
    return {
        "wall_ms": statistics.median(wall) * 1000,
        "cpu_ms": statistics.median(cpu) * 1000,
        "writes": statistics.median(writes),
        "bytes": statistics.median(written),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=200)
    args = parser.parse_args()
    print(f"# runner overhead per support-ticket form cycle — {platform.python_version()} on {platform.machine()}")
    print(f"{'earlier turns':>13} {'wall ms':>8} {'cpu ms':>7} {'writes':>6} {'bytes':>7} {'cycles':>6}")
    base: dict[str, float] | None = None
    for earlier in (0, 10, 50, 100):
        cycles = args.cycles if earlier == 0 else max(5, args.cycles // (earlier + 1))
        figures = measure(cycles, earlier)
        base = base or figures
        print(
            f"{earlier:>13} {figures['wall_ms']:>8.2f} {figures['cpu_ms']:>7.2f} {figures['writes']:>6.0f} "
            f"{figures['bytes']:>7.0f} {cycles:>6}   cpu ×{figures['cpu_ms'] / base['cpu_ms']:.2f}"
        )


if __name__ == "__main__":
    main()
