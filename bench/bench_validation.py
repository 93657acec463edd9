"""Validation time per submission for the demo forms (p50/p99), valid and invalid data, a warm validator.

    python -m bench.bench_validation [--repeats 3000]

Reports; asserts nothing. Run it with another checkout first on PYTHONPATH to compare versions.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from agentturn.demo.agents import MEETING_SCHEMA, SUPPORT_TICKET_SCHEMA
from agentturn.forms.validation import validate_form_data

CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "support valid": (SUPPORT_TICKET_SCHEMA, {"affectedSystem": "统一登录系统", "impactScope": "ALL_USERS"}),
    "support invalid": (SUPPORT_TICKET_SCHEMA, {"impactScope": "EVERYONE", "isAdmin": True}),
    "meeting valid": (
        MEETING_SCHEMA,
        {"topic": "Review", "date": "2026-12-01", "startTime": "10:00", "attendees": 6, "needsProjector": True},
    ),
    "meeting invalid": (MEETING_SCHEMA, {"topic": "", "date": "2026-02-30", "startTime": "10:00\n", "attendees": 0}),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3000)
    args = parser.parse_args()
    for name, (schema, data) in CASES.items():
        validate_form_data(schema, data)  # warm: imports, compilation
        times = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            validate_form_data(schema, data)
            times.append(time.perf_counter() - started)
        times.sort()
        p50 = statistics.median(times) * 1e6
        p99 = times[int(len(times) * 0.99)] * 1e6
        print(f"{name:16s} p50 {p50:8.1f} µs   p99 {p99:8.1f} µs")


if __name__ == "__main__":
    main()
