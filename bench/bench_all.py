"""Everything ``make bench`` runs: each benchmark in its own interpreter, then the tables and the plots.

    python -m bench.bench_all [--quick]

Writes ``bench/results/`` — ``results.json`` (every figure), ``RESULTS.md`` (the tables), the PNG plots —
and replaces the block between the ``results`` markers in ``bench/README.md`` with the same tables.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
README = REPO / "bench" / "README.md"
START_MARK = "<!-- results:start -->"
END_MARK = "<!-- results:end -->"
LABELS = {"agentturn": "agentturn", "langgraph": "LangGraph", "langgraph-exit": 'LangGraph, durability="exit"'}


def run_step(name: str, args: list[str], timeout: float) -> None:
    print(f"==> {name}: {' '.join(args)}", flush=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", *args], cwd=REPO, check=True, timeout=timeout)
    print(f"==> {name} done in {time.perf_counter() - started:.0f} s", flush=True)


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    git = ["git", "-C", str(REPO)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--", "shared", "functions"], capture_output=True, text=True, check=False
    ).stdout
    versions = {}
    for package in (
        "langgraph",
        "langgraph-checkpoint",
        "langgraph-checkpoint-aws",
        "langchain-core",
        "moto",
        "boto3",
        "aws-lambda-powertools",
        "pydantic",
    ):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_start": os.getloadavg(),
        "agentturn_commit": commit.strip() + (" + uncommitted changes" if dirty.strip() else ""),
        "versions": versions,
    }


# ------------------------------------------------------------------------------------------ tables


def _points(cycle: dict[str, Any], system: str) -> dict[int, dict[str, Any]]:
    return {p["earlier_turns"]: p for p in cycle["systems"].get(system, [])}


def _cpu_points(cpu: dict[str, Any], system: str) -> dict[int, dict[str, Any]]:
    return {p["earlier_turns"]: p for p in cpu["systems"].get(system, [])}


def _ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None or theirs == 0:
        return "—"
    return f"{ours / theirs:.2f}"


def _bytes(p: dict[str, Any]) -> int:
    return int(p["dynamodb_write_bytes"] + p["s3_write_bytes"])


def _fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def headline_table(cycle: dict[str, Any], cpu: dict[str, Any]) -> list[str]:
    ours, theirs = _points(cycle, "agentturn"), _points(cycle, "langgraph")
    cpu_ours, cpu_theirs = _cpu_points(cpu, "agentturn"), _cpu_points(cpu, "langgraph")
    edge = [n for n in (0, 100) if n in ours and n in theirs]
    header = "| per form cycle | " + " | ".join(f"agentturn @{n} | LangGraph @{n} | ours/LG @{n}" for n in edge) + " |"
    lines = [header, "|---|" + "---:|" * (3 * len(edge))]

    def row(label: str, get: Any, digits: int = 0) -> None:
        cells = []
        for n in edge:
            a, b = get(ours[n], cpu_ours.get(n)), get(theirs[n], cpu_theirs.get(n))
            cells += [_fmt(a, digits), _fmt(b, digits), _ratio(a, b)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row("DynamoDB requests", lambda p, _: p["dynamodb_requests"])
    row("DynamoDB write units (computed from item sizes, indexes included)", lambda p, _: p["write_units"])
    row("DynamoDB read units (computed from item sizes)", lambda p, _: p.get("read_units"), 1)
    row("bytes written (DynamoDB + S3 request bodies)", lambda p, _: _bytes(p))
    row("S3 requests", lambda p, _: p["s3_requests"])
    row("SQS requests", lambda p, _: p["sqs_requests"])
    row("all AWS requests", lambda p, _: p["dynamodb_requests"] + p["s3_requests"] + p["sqs_requests"])
    row("wall time on moto, ms (median)", lambda p, _: p["wall_ms_median"], 1)
    row("… ask → form shown, ms (median)", lambda p, _: p.get("phase_ms_median", {}).get("ask"), 1)
    row("… submit accepted, ms (median; LangGraph: none)", lambda p, _: p.get("phase_ms_median", {}).get("submit"), 1)
    row("… resume → answer, ms (median)", lambda p, _: p.get("phase_ms_median", {}).get("resume"), 1)
    row("benchmark-process CPU on moto, ms (median)", lambda p, _: p["client_cpu_ms_median"], 1)
    row("emulator CPU, ms (mean)", lambda p, _: p["emulator_cpu_ms_mean"], 1)
    row(
        "benchmark-process + emulator CPU, ms (less sensitive to machine load than wall)",
        lambda p, _: p["client_cpu_ms_median"] + p["emulator_cpu_ms_mean"],
        1,
    )
    row("runtime CPU in memory, ms (median)", lambda _, c: c["cpu_ms_median"] if c else None, 2)
    return lines


def growth_table(cycle: dict[str, Any], cpu: dict[str, Any]) -> list[str]:
    lines = [
        "| system | earlier turns | DynamoDB req | write units | read units | bytes written | S3 req "
        "| wall ms (median, min–max) | in-memory CPU ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for system in cycle["systems"]:
        cpu_points = _cpu_points(cpu, system)
        for n, p in sorted(_points(cycle, system).items()):
            c = cpu_points.get(n)
            lines.append(
                f"| {LABELS.get(system, system)} | {n} | {p['dynamodb_requests']} | {p['write_units']} | "
                f"{_fmt(p.get('read_units'), 1)} | "
                f"{_bytes(p):,} | {p['s3_requests']} | "
                f"{p['wall_ms_median']:.1f} ({p['wall_ms_min']:.0f}–{p['wall_ms_max']:.0f}) | "
                f"{_fmt(c['cpu_ms_median'] if c else None, 2)} |"
            )
    return lines


def stored_table(cycle: dict[str, Any]) -> list[str]:
    stored = cycle.get("stored_at_end")
    if not stored:
        return []
    cycles = max(p for p in cycle["points"]) + cycle["repeats"] + 1
    lines = [
        f"Stored at the end of the run (every conversation of the run; the longest has {cycles} turns):",
        "",
        "| system | DynamoDB items | item bytes | S3 objects | S3 bytes |",
        "|---|---:|---:|---:|---:|",
    ]
    for system, s in stored.items():
        lines.append(
            f"| {LABELS.get(system, system)} | {s['items']:,} | {s['item_bytes']:,} | {s['s3_objects']:,} "
            f"| {s['s3_bytes']:,} |"
        )
    return [*lines, ""]


def operations_table(cycle: dict[str, Any]) -> list[str]:
    lines = [
        "| system @ earlier turns | DynamoDB requests by operation "
        "| write units: table + indexes + failed conditions |",
        "|---|---|---|",
    ]
    for system in cycle["systems"]:
        for n, p in sorted(_points(cycle, system).items()):
            if n not in (0, 100):
                continue
            ops = ", ".join(f"{op} {count}" for op, count in p["dynamodb_by_operation"].items())
            units = f"{p['write_units_table']} + {p['write_units_index']} + {p['write_units_failed_condition']}"
            lines.append(f"| {LABELS.get(system, system)} @{n} | {ops} | {units} |")
    return lines


def callers_table(cycle: dict[str, Any], system: str = "agentturn") -> list[str]:
    """Where our requests come from, in cycle order (accounting cycle at 0 earlier turns)."""
    points = _points(cycle, system)
    if 0 not in points:
        return []
    lines = ["| # | request | made by | outcome | write units | read units |", "|---:|---|---|---|---:|---:|"]
    for index, entry in enumerate(points[0]["trace"], 1):
        units = ""
        if "units_table" in entry:
            units = str(entry["units_table"] + entry["units_index"] + entry["units_failed"])
        outcome = "ok" if entry["ok"] else entry.get("error") or "error"
        caller = entry["caller"] or "(the benchmark, as the worker's SQS event source mapping)"
        read = entry.get("read_units")
        lines.append(
            f"| {index} | {entry['operation']} | `{caller}` | {outcome} | {units} | {'' if read is None else read} |"
        )
    return lines


def imports_table(imports: dict[str, Any]) -> list[str]:
    lines = [
        "| module | `-X importtime` cumulative, ms (median) | interpreter wall − empty interpreter, ms "
        "| × `import boto3` |",
        "|---|---:|---:|---:|",
    ]
    for row in imports["modules"]:
        ratio = row["ratio_to_boto3"]
        lines.append(
            f"| `{row['module']}` | {row['importtime_ms']:.0f} | {row['wall_minus_empty_ms']:.0f} | {ratio:.2f} |"
            if ratio is not None
            else f"| `{row['module']}` | {row['importtime_ms']:.0f} | — | — |"
        )
    if imports.get("missing_handlers"):
        lines.append(f"\nMissing handlers (not measured): {', '.join(imports['missing_handlers'])}")
    return lines


def submit_table(submit: dict[str, Any] | None) -> list[str]:
    if not submit:
        return ["(submit handler not measured)"]
    lines = [
        "| client threads | submits | submits/s | p50 ms | p95 ms | p99 ms | AWS requests per submit "
        "| handler CPU ms per submit | emulator CPU ms per submit | errors |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in submit["stages"]:
        lines.append(
            f"| {s['threads']} | {s['submits']} | {s['submits_per_second']:.1f} | {_fmt(s['p50_ms'], 1)} | "
            f"{_fmt(s['p95_ms'], 1)} | {_fmt(s['p99_ms'], 1)} | {_fmt(s['aws_requests_per_submit'], 2)} "
            f"| {_fmt(s.get('handler_cpu_ms_per_submit'), 1)} | {_fmt(s.get('emulator_cpu_ms_per_submit'), 1)} "
            f"| {s['errors']} |"
        )
    first = submit["stages"][0]["requests_by_operation"] if submit["stages"] else {}
    per = ", ".join(f"{service}.{op} {count}" for service, ops in first.items() for op, count in ops.items())
    lines.append(f"\nRequests of the 1-thread stage by operation (all submits): {per}")
    return lines


def render(results: dict[str, Any]) -> str:
    m = results["machine"]
    cycle, cpu = results["cycle"], results["cpu"]
    probe = cycle.get("moto_consumed_capacity_probe", {})
    parts = [
        f"Run of {m['date']} on {m['nproc']} cores ({m['cpu'] or 'unknown CPU'}), Python {m['python']}, "
        f"1-minute load average {m['load_average_at_start'][0]:.2f} at the start, "
        f"{m.get('load_average_at_end', [float('nan')])[0]:.2f} at the end; agentturn {m['agentturn_commit']}; "
        + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v)
        + f". Whole run: {results['seconds']:.0f} s.",
        "",
        "### Per form cycle, fresh conversation and after 100 earlier turns",
        "",
        *headline_table(cycle, cpu),
        "",
        f"Wall times: median of {cycle['repeats']} cycles per point; in-memory CPU: median of {cpu['repeats']}. "
        f"moto's own ConsumedCapacity is not usable (a 3 KB PutItem reports {probe.get('put_item_3kb_reported')}, "
        f"an UpdateItem to 6 KB {probe.get('update_item_to_6kb_reported')}), so write units are computed.",
        "",
        *(
            [f"Failed cycles (each retried once, after cancelling agentturn's stuck turn): {cycle['failures']}", ""]
            if cycle.get("failures")
            else []
        ),
        "### Growth with conversation length",
        "",
        *growth_table(cycle, cpu),
        "",
        "![bytes written per cycle](results/bytes_per_cycle.png)",
        "![wall time per cycle](results/wall_per_cycle.png)",
        "![write units per cycle](results/write_units_per_cycle.png)",
        "![runtime CPU per cycle](results/cpu_per_cycle.png)",
        "",
        *stored_table(cycle),
        "### DynamoDB requests by operation",
        "",
        *operations_table(cycle),
        "",
        "### agentturn's requests in one cycle, in order (0 earlier turns)",
        "",
        *callers_table(cycle),
        "",
        "### Handler cold import",
        "",
        *imports_table(results["imports"]),
        "",
        "### Submit handler under load (moto server, API Gateway v2 events)",
        "",
        *submit_table(results.get("submit")),
    ]
    return "\n".join(parts) + "\n"


# ------------------------------------------------------------------------------------------ plots


def plot(results: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cycle, cpu = results["cycle"], results["cpu"]
    styles: dict[str, dict[str, Any]] = {
        "agentturn": {"color": "#1f77b4", "marker": "o", "linestyle": "-"},
        "langgraph": {"color": "#d62728", "marker": "s", "linestyle": "-"},
        "langgraph-exit": {"color": "#d62728", "marker": "^", "linestyle": "--"},
    }

    # Labels of different series go to different sides of their points, so they do not print over each other.
    label_offsets = {"agentturn": (7, 7), "langgraph": (7, -13), "langgraph-exit": (7, -13)}

    def figure(filename: str, title: str, ylabel: str, series: dict[str, tuple[list[int], list[float], Any]]) -> None:
        from matplotlib.ticker import FuncFormatter

        fig, ax = plt.subplots(figsize=(8.5, 5), dpi=120)
        for system, (xs, ys, err) in series.items():
            style = styles.get(system, {})
            if err is not None:
                ax.errorbar(xs, ys, yerr=err, capsize=3, label=LABELS.get(system, system), **style)
            else:
                ax.plot(xs, ys, label=LABELS.get(system, system), **style)
            for x, y in zip(xs, ys, strict=True):
                ax.annotate(
                    f"{y:,.0f}" if y >= 100 or y == int(y) else f"{y:.1f}",
                    (x, y),
                    textcoords="offset points",
                    xytext=label_offsets.get(system, (7, 7)),
                    fontsize=8,
                    color=style.get("color", "black"),
                )
        ax.set_title(title)
        ax.set_xlabel("earlier turns in the same conversation / thread")
        ax.set_ylabel(ylabel)
        ax.set_xticks(sorted({x for xs, _, _ in series.values() for x in xs}))
        ax.margins(x=0.1)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(RESULTS / filename)
        plt.close(fig)

    def cycle_series(get: Any, with_range: bool = False) -> dict[str, tuple[list[int], list[float], Any]]:
        series = {}
        for system in cycle["systems"]:
            points = sorted(_points(cycle, system).items())
            xs = [n for n, _ in points]
            ys = [float(get(p)) for _, p in points]
            err = None
            if with_range:
                err = [
                    [p["wall_ms_median"] - p["wall_ms_min"] for _, p in points],
                    [p["wall_ms_max"] - p["wall_ms_median"] for _, p in points],
                ]
            series[system] = (xs, ys, err)
        return series

    figure(
        "bytes_per_cycle.png",
        "Bytes written per form cycle (DynamoDB + S3 request bodies)",
        "bytes",
        cycle_series(_bytes),
    )
    figure(
        "wall_per_cycle.png",
        "Wall time per form cycle on the same moto server (median, min–max)",
        "ms",
        cycle_series(lambda p: p["wall_ms_median"], with_range=True),
    )
    figure(
        "write_units_per_cycle.png",
        "DynamoDB write units per form cycle (from item sizes, indexes included)",
        "write units",
        cycle_series(lambda p: p["write_units"]),
    )
    cpu_series = {}
    for system, rows in cpu["systems"].items():
        xs = [r["earlier_turns"] for r in rows]
        cpu_series[system] = (xs, [r["cpu_ms_median"] for r in rows], None)
    figure("cpu_per_cycle.png", "Runtime CPU per form cycle, in-memory persistence (median)", "ms of CPU", cpu_series)


# ------------------------------------------------------------------------------------------ main


def update_readme(text: str) -> None:
    if not README.exists():
        return
    readme = README.read_text()
    if START_MARK not in readme or END_MARK not in readme:
        return
    head, rest = readme.split(START_MARK, 1)
    _, tail = rest.split(END_MARK, 1)
    README.write_text(f"{head}{START_MARK}\n{text}{END_MARK}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and points (a smoke run, minutes less)")
    parser.add_argument(
        "--skip", default="", help="comma-separated steps to reuse from bench/results: cpu,imports,cycle,submit"
    )
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    RESULTS.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    info = machine()
    quick = args.quick
    steps = {
        "cpu": (["bench.bench_cpu", "--repeats", "10" if quick else "40", "--out", str(RESULTS / "cpu.json")], 300),
        "imports": (
            ["bench.bench_imports", "--runs", "2" if quick else "5", "--out", str(RESULTS / "imports.json")],
            300,
        ),
        "cycle": (
            [
                "bench.bench_cycle",
                "--repeats",
                "2" if quick else "7",
                "--points",
                "0,10" if quick else "0,10,50,100",
                "--out",
                str(RESULTS / "cycle.json"),
            ],
            720,
        ),
        "submit": (
            [
                "bench.bench_submit",
                "--submits",
                "10,20,40" if quick else "50,100,200",
                "--out",
                str(RESULTS / "submit.json"),
            ],
            400,
        ),
    }
    for name, (step_args, timeout) in steps.items():
        if name in skip:
            continue
        if name == "submit" and not (REPO / "functions" / "submit" / "app.py").exists():
            print("==> submit: functions/submit/app.py does not exist; skipped", flush=True)
            (RESULTS / "submit.json").unlink(missing_ok=True)
            continue
        run_step(name, step_args, timeout)
    results: dict[str, Any] = {"machine": info}
    for name in ("cpu", "imports", "cycle", "submit"):
        path = RESULTS / f"{name}.json"
        results[name] = json.loads(path.read_text()) if path.exists() else None
    info["load_average_at_end"] = os.getloadavg()
    results["seconds"] = time.perf_counter() - started
    previous = RESULTS / "results.json"
    if skip >= set(steps) and previous.exists():
        # Nothing was run: redraw from the last run, under that run's date, machine and duration.
        last = json.loads(previous.read_text())
        results["machine"], results["seconds"] = last["machine"], last["seconds"]
    (RESULTS / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False))
    plot(results)
    text = render(results)
    (RESULTS / "RESULTS.md").write_text("# Latest benchmark results\n\n" + text.replace("](results/", "]("))
    update_readme(text)
    print(text)
    print(f"bench: {results['seconds']:.0f} s; results in {RESULTS.relative_to(REPO)}/", flush=True)


if __name__ == "__main__":
    main()
