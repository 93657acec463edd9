"""Cold-import time of each Lambda handler module, beside a bare ``import boto3``, in the same run.

Method: for each module, fresh interpreters ``python -X importtime -c "import <module>"`` (after one
untimed run, so every interpreter finds the same byte-code caches); the figure is the *cumulative*
microseconds ``-X importtime`` reports for the top-level module, median of ``--runs`` interpreters. As a
cross-check, the whole interpreter's wall time minus that of an empty interpreter (``-c pass``), median
too. Handlers are imported the way the functional tests and the bundle do: ``functions.<name>.app`` with
the repository root on ``sys.path`` (``agentturn`` from the bench virtualenv's editable install).

Interpreters run one after another, alternating modules, so a burst of load elsewhere on the machine
is spread over all of them.

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
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
HANDLERS = ("run", "submit", "worker", "sweeper")
_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)\s*$")


def importtime(module: str) -> tuple[int | None, float]:
    """(cumulative µs of ``module`` as ``-X importtime`` reports it, interpreter wall seconds)."""
    code = f"import {module}" if module else "pass"
    env = {**os.environ, "PYTHONPATH": str(REPO), "POWERTOOLS_TRACE_DISABLED": "true"}
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        cwd=REPO,
        env=env,
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/results/imports.json"))
    args = parser.parse_args()
    modules = [
        "boto3",
        *(f"functions.{name}.app" for name in HANDLERS if (REPO / "functions" / name / "app.py").exists()),
    ]
    missing = [name for name in HANDLERS if not (REPO / "functions" / name / "app.py").exists()]
    for module in ["", *modules]:
        importtime(module)  # byte-code caches written; not measured
    samples: dict[str, list[tuple[int | None, float]]] = {m: [] for m in ["", *modules]}
    for _ in range(args.runs):
        for module in ["", *modules]:
            samples[module].append(importtime(module))
    empty_wall = statistics.median(w for _, w in samples[""])
    rows: list[dict[str, Any]] = []
    boto3_ms: float | None = None
    for module in modules:
        cumulative = [c for c, _ in samples[module] if c is not None]
        import_ms = statistics.median(cumulative) / 1000 if cumulative else float("nan")
        wall_ms = (statistics.median(w for _, w in samples[module]) - empty_wall) * 1000
        if module == "boto3":
            boto3_ms = import_ms
        rows.append({"module": module, "importtime_ms": import_ms, "wall_minus_empty_ms": wall_ms})
    for row in rows:
        row["ratio_to_boto3"] = row["importtime_ms"] / boto3_ms if boto3_ms else None
    payload = {
        "runs": args.runs,
        "empty_interpreter_ms": empty_wall * 1000,
        "modules": rows,
        "missing_handlers": missing,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2))
    for row in rows:
        print(
            f"{row['module']:>24} importtime {row['importtime_ms']:7.1f} ms  "
            f"wall-empty {row['wall_minus_empty_ms']:7.1f} ms  ×boto3 {row['ratio_to_boto3']:.2f}"
        )
    if missing:
        print(f"missing handlers: {missing}")


if __name__ == "__main__":
    main()
