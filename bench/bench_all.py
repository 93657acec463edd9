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
from typing import Any, Final

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
README = REPO / "bench" / "README.md"
START_MARK = "<!-- results:start -->"
END_MARK = "<!-- results:end -->"
LABELS = {
    "agentturn": "agentturn",
    "agentturn-handlers": "agentturn, whole handler path",
    "langgraph": "LangGraph",
    "langgraph-compressed": "LangGraph, compression on",
    "langgraph-exit": 'LangGraph, compression on, durability="exit"',
}
#: The comparison LangGraph lines of the headline: its default, and its best configuration for cost.
LANGGRAPH_LINES = ("langgraph", "langgraph-compressed")

#: US East (N. Virginia) list prices in dollars per request or unit, as published in 2026 (no free tier).
PRICES: dict[str, float] = {
    "dynamodb_write_unit": 0.625e-6,  # on-demand write request unit
    "dynamodb_read_unit": 0.125e-6,  # on-demand read request unit
    "s3_put": 0.005e-3,  # S3 Standard PUT, COPY, POST, LIST
    "s3_get": 0.0004e-3,  # S3 Standard GET and other reads (DELETE is free)
    "sqs_request": 0.40e-6,  # standard queue, per request (each 64 KB chunk)
    "lambda_request": 0.20e-6,  # Lambda invocation (duration not counted)
    "http_api_request": 1.00e-6,  # API Gateway HTTP API, first 300 million a month
}
_S3_FREE: Final = frozenset({"DeleteObject", "DeleteObjects"})
_S3_READS: Final = frozenset({"GetObject", "HeadObject"})


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
    # SQS bodies too: ours carry the snapshot a submit saved (about 1.5 KB), theirs none.
    return int(p["dynamodb_write_bytes"] + p["s3_write_bytes"] + p.get("sqs_write_bytes", 0))


def _fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def cost_per_million(p: dict[str, Any], config: dict[str, Any]) -> dict[str, float]:
    """Dollars per million cycles at :data:`PRICES`, by what is billed."""
    s3_ops = p.get("s3_by_operation", {})
    s3 = sum(
        n * (PRICES["s3_get"] if op in _S3_READS else PRICES["s3_put"])
        for op, n in s3_ops.items()
        if op not in _S3_FREE
    )
    cost = {
        "dynamodb_writes": p["write_units"] * PRICES["dynamodb_write_unit"],
        "dynamodb_reads": (p.get("read_units") or 0.0) * PRICES["dynamodb_read_unit"],
        "s3": s3,
        "sqs": p["sqs_requests"] * PRICES["sqs_request"],
        "lambda": config.get("lambda_invocations_per_cycle", 0) * PRICES["lambda_request"],
        "http_api": config.get("http_requests_per_cycle", 0) * PRICES["http_api_request"],
    }
    million = {key: value * 1e6 for key, value in cost.items()}
    million["storage_and_queue"] = (
        million["dynamodb_writes"] + million["dynamodb_reads"] + million["s3"] + million["sqs"]
    )
    million["all_counted"] = million["storage_and_queue"] + million["lambda"] + million["http_api"]
    return million


def _edges(cycle: dict[str, Any]) -> list[int]:
    ours = _points(cycle, "agentturn")
    return [n for n in (0, max(ours, default=0)) if n in ours] if ours else []


def headline_table(cycle: dict[str, Any], cpu: dict[str, Any], n: int) -> list[str]:
    """Every figure of one conversation length: agentturn, LangGraph's default and its best, and the ratios."""
    lines_of = [s for s in LANGGRAPH_LINES if n in _points(cycle, s)]
    ours = _points(cycle, "agentturn")[n]
    theirs = [_points(cycle, s)[n] for s in lines_of]
    config = cycle.get("configuration", {})
    cpu_ours = _cpu_points(cpu, "agentturn").get(n)
    cpu_handlers = _cpu_points(cpu, "agentturn-handlers").get(n)
    cpu_theirs = _cpu_points(cpu, "langgraph").get(n)
    header = "| per form cycle | agentturn | " + " | ".join(LABELS[s] for s in lines_of) + " | "
    header += " | ".join(f"ours ÷ {LABELS[s]}" for s in lines_of) + " |"
    lines = [header, "|---|" + "---:|" * (1 + 2 * len(lines_of))]

    def row(label: str, values: list[float | None], digits: int = 0) -> None:
        a, rest = values[0], values[1:]
        cells = [_fmt(v, digits) for v in values] + [_ratio(a, b) for b in rest]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    def each(get: Any, digits: int = 0, label: str = "") -> None:
        row(
            label,
            [get(p, config.get(name, {})) for p, name in zip([ours, *theirs], ["agentturn", *lines_of], strict=True)],
            digits,
        )

    each(lambda p, _: p["dynamodb_requests"], label="DynamoDB requests")
    each(lambda p, _: p["write_units"], label="DynamoDB write units (computed from item sizes, indexes included)")
    each(lambda p, _: p.get("read_units"), 1, label="DynamoDB read units (computed from item sizes)")
    each(lambda p, _: _bytes(p), label="bytes written (DynamoDB + S3 + SQS request bodies)")
    each(lambda p, _: p["s3_requests"], label="S3 requests")
    each(
        lambda p, _: p["sqs_requests"], label="SQS requests (ours: send, the event source mapping's receive and delete)"
    )
    each(
        lambda p, c: c.get("lambda_invocations_per_cycle"), label="Lambda invocations (theirs: if served the same way)"
    )
    each(lambda p, c: c.get("http_requests_per_cycle"), label="HTTP requests of the client (ours: start, submit, GET)")
    each(
        lambda p, c: cost_per_million(p, c)["storage_and_queue"],
        2,
        label="**AWS cost per million cycles, $ (DynamoDB + S3 + SQS requests and capacity)**",
    )
    each(
        lambda p, c: cost_per_million(p, c)["all_counted"],
        2,
        label="… with Lambda and HTTP API requests ($; Lambda duration not counted)",
    )
    each(lambda p, _: p["wall_ms_median"], 1, label="wall time on moto, ms (median)")
    each(lambda p, _: p.get("phase_ms_median", {}).get("ask"), 1, label="… ask → form shown, ms (median)")
    each(
        lambda p, _: p.get("phase_ms_median", {}).get("submit"),
        1,
        label="… submit accepted, ms (median; LangGraph: none)",
    )
    each(lambda p, _: p.get("phase_ms_median", {}).get("resume"), 1, label="… resume → answer, ms (median)")
    each(
        lambda p, _: p.get("phase_ms_median", {}).get("read"),
        1,
        label="… GET of the answer, ms (median; LangGraph: none)",
    )
    each(lambda p, _: p["client_cpu_ms_median"], 1, label="benchmark-process CPU on moto, ms (median)")
    each(lambda p, _: p["emulator_cpu_ms_mean"], 1, label="emulator CPU, ms (mean)")
    theirs_cpu = cpu_theirs["cpu_ms_median"] if cpu_theirs else None
    row(
        "runtime CPU in memory, ms (median; LangGraph on InMemorySaver, no compression setting there)",
        [cpu_ours["cpu_ms_median"] if cpu_ours else None, *([theirs_cpu] * len(lines_of))],
        2,
    )
    row(
        "… agentturn's whole handler path in memory (HTTP, Powertools, the GET), ms (median)",
        [cpu_handlers["cpu_ms_median"] if cpu_handlers else None, *([theirs_cpu] * len(lines_of))],
        2,
    )
    return lines


def cost_table(cycle: dict[str, Any]) -> list[str]:
    config = cycle.get("configuration", {})
    edges = _edges(cycle)
    columns = [(system, n) for system in cycle["systems"] for n in edges if n in _points(cycle, system)]
    lines = [
        "| $ per million cycles | " + " | ".join(f"{LABELS.get(s, s)} @{n}" for s, n in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    rows = (
        ("DynamoDB write units", "dynamodb_writes"),
        ("DynamoDB read units", "dynamodb_reads"),
        ("S3 requests", "s3"),
        ("SQS requests", "sqs"),
        ("**DynamoDB + S3 + SQS**", "storage_and_queue"),
        ("Lambda invocations", "lambda"),
        ("API Gateway HTTP API requests", "http_api"),
        ("**all counted**", "all_counted"),
    )
    costs = {(s, n): cost_per_million(_points(cycle, s)[n], config.get(s, {})) for s, n in columns}
    for label, key in rows:
        lines.append(f"| {label} | " + " | ".join(f"{costs[c][key]:.2f}" for c in columns) + " |")
    prices = ", ".join(f"{k} ${v * 1e6:g}/M" for k, v in PRICES.items())
    lines.append("")
    lines.append(
        f"List prices, US East (N. Virginia), no free tier: {prices}. DynamoDB on-demand bills per request unit, so "
        "its requests are priced through their units. Not counted: storage (GB-month; see what each system keeps "
        "below), Lambda duration, data transfer, and the SQS polling an idle event source mapping does."
    )
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


def callers_table(cycle: dict[str, Any], system: str, n: int) -> list[str]:
    """Every request of one accounting cycle, in order."""
    points = _points(cycle, system)
    if n not in points:
        return []
    lines = ["| # | request | made by | outcome | write units | read units |", "|---:|---|---|---|---:|---:|"]
    for index, entry in enumerate(points[n]["trace"], 1):
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
    if not imports.get("modules"):
        lines = ["(the import table was not measured: `--first-request-only`)"]
    else:
        lines = [
            "| module | import, ms (`-X importtime` cumulative, median), tracing off | × `import boto3` "
            "| import with tracing on, ms | × `import boto3` "
            "| interpreter wall − empty interpreter, ms (tracing off) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
    for row in imports.get("modules", []):
        lines.append(
            f"| `{row['module']}` | {row['importtime_ms']:.0f} | {_fmt(row.get('ratio_to_boto3'), 2)} "
            f"| {_fmt(row.get('importtime_tracing_on_ms'))} | {_fmt(row.get('ratio_tracing_on_to_boto3'), 2)} "
            f"| {row['wall_minus_empty_ms']:.0f} |"
        )
    if imports.get("missing_handlers"):
        lines.append(f"\nMissing handlers (not measured): {', '.join(imports['missing_handlers'])}")
    first = imports.get("first_request")
    if first:
        load = first.get("load_average_1m", {})
        lines += [
            "",
            f"Time to the first answered request of a cold process on the emulator (a fresh Python "
            f"{first.get('python', '?')} interpreter running the function's built asset"
            f"{', mounted read-only' if first.get('read_only_mount') else ''}: import, client creation, the "
            f"invocation and all its requests; median; the 1-minute load average while it ran "
            f"{_fmt(load.get('min'), 1)}–{_fmt(load.get('max'), 1)}, median {_fmt(load.get('median'), 1)}). "
            "*pyc*: the asset as deployed, with the byte code of the runtime's Python; *source*: the same asset "
            "without it, as deployed before. The anchor is the bare boto3 from the asset with byte code; the floor "
            "is the anchor inside the least handler this house's style allows (Powertools' Logger and Metrics "
            "around it, one pydantic model for what it read), from the same asset:",
            "",
            "| handler (event) | asset | first answer, ms | of which import, ms "
            "| × boto3 import + client + one GetItem | × the floor | answer | modules loaded |",
            "|---|---|---:|---:|---:|---:|---|---:|",
        ]
        events = {
            "boto3": "bare `import boto3`, one client, one GetItem",
            "pydantic": "the same with one pydantic model for what it read",
            "floor": "the floor: the same inside Powertools' Logger + Metrics",
            "run": "run (POST /conversations/{id}/turns)",
            "submit": "submit (POST …/submit)",
            "worker": "worker (SQS resume message)",
            "sweeper": "sweeper (EventBridge schedule)",
            "retention": "retention (stream TTL removal)",
        }
        for row in first["rows"]:
            event = events.get(row["handler"], row["handler"])
            lines.append(
                f"| {event} | {row.get('asset', 'source')} | {row['first_answer_ms']:.0f} | {row['import_ms']:.0f} "
                f"| {_fmt(row['ratio_to_boto3_first_request'], 2)} | {_fmt(row.get('ratio_to_floor'), 2)} "
                f"| {', '.join(row['statuses'])} "
                f"| {row['modules_loaded']:.0f} |"
            )
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


def _by_date(reused_from: dict[str, str]) -> dict[str, list[str]]:
    """``{date: [step, …]}`` of the steps reused from earlier runs."""
    grouped: dict[str, list[str]] = {}
    for step, date in reused_from.items():
        grouped.setdefault(date, []).append(step)
    return grouped


def render(results: dict[str, Any]) -> str:
    m = results["machine"]
    cycle, cpu = results["cycle"], results["cpu"]
    probe = cycle.get("moto_consumed_capacity_probe", {})
    parts = [
        f"Run of {m['date']} on {m['nproc']} cores ({m['cpu'] or 'unknown CPU'}), Python {m['python']}, "
        f"1-minute load average {m['load_average_at_start'][0]:.2f} at the start, "
        f"{m.get('load_average_at_end', [float('nan')])[0]:.2f} at the end; agentturn {m['agentturn_commit']}; "
        + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v)
        + f". Whole run: {results['seconds']:.0f} s."
        + "".join(
            f" The {' and '.join([', '.join(steps[:-1]), steps[-1]] if len(steps) > 1 else steps)} results are those"
            f" of the run of {date} (not re-run)."
            for date, steps in _by_date(results.get("reused_from", {})).items()
        ),
        "",
        *(
            line
            for n in _edges(cycle)
            for line in (
                f"### Per form cycle, {'fresh conversation' if n == 0 else f'after {n} earlier turns'}",
                "",
                *headline_table(cycle, cpu, n),
                "",
            )
        ),
        f"Wall times: median of {cycle['repeats']} cycles per point; in-memory CPU: median of {cpu['repeats']}. "
        f"moto's own ConsumedCapacity is not usable (a 3 KB PutItem reports {probe.get('put_item_3kb_reported')}, "
        f"an UpdateItem to 6 KB {probe.get('update_item_to_6kb_reported')}), so write units are computed.",
        "",
        *(
            [f"Failed cycles (each retried once, after cancelling agentturn's stuck turn): {cycle['failures']}", ""]
            if cycle.get("failures")
            else []
        ),
        "### AWS cost per million cycles",
        "",
        *cost_table(cycle),
        "",
        "### Growth with conversation length",
        "",
        *growth_table(cycle, cpu),
        "",
        "![DynamoDB requests per cycle](results/requests_per_cycle.png)",
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
        *(
            line
            for system in ("agentturn", "langgraph-compressed")
            for n in _edges(cycle)
            for line in (
                f"### {LABELS[system]}: every AWS request of one cycle, in order ({n} earlier turns)",
                "",
                *callers_table(cycle, system, n),
                "",
            )
        ),
        "### Handler cold start",
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
        "agentturn-handlers": {"color": "#1f77b4", "marker": "D", "linestyle": "--"},
        "langgraph-compressed": {"color": "#ff7f0e", "marker": "s", "linestyle": "-"},
        "langgraph-exit": {"color": "#ff7f0e", "marker": "^", "linestyle": "--"},
    }

    # Labels of different series go to different sides of their points, so they do not print over each other.
    label_offsets = {
        "agentturn": (7, 7),
        "agentturn-handlers": (7, 7),
        "langgraph": (7, -13),
        "langgraph-compressed": (-30, 7),
        "langgraph-exit": (7, -13),
    }

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
        "requests_per_cycle.png",
        "DynamoDB requests per form cycle (ours: the handlers' path, the client's GET included)",
        "requests",
        cycle_series(lambda p: p["dynamodb_requests"]),
    )
    figure(
        "bytes_per_cycle.png",
        "Bytes written per form cycle (DynamoDB + S3 + SQS request bodies)",
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
            900,
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
            1800,
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
    last = json.loads(previous.read_text()) if previous.exists() else None
    if skip >= set(steps) and last is not None:
        # Nothing was run: redraw from the last run, under that run's date, machine and duration.
        results["machine"], results["seconds"] = last["machine"], last["seconds"]
        results["reused_from"] = last.get("reused_from", {})
    elif last is not None:
        # A step not re-run keeps the date of the run that measured it, and the page says so.
        earlier = last.get("reused_from", {})
        results["reused_from"] = {
            step: earlier.get(step, last["machine"]["date"]) for step in sorted(skip & set(steps))
        }
    (RESULTS / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False))
    plot(results)
    text = render(results)
    (RESULTS / "RESULTS.md").write_text("# Latest benchmark results\n\n" + text.replace("](results/", "]("))
    update_readme(text)
    print(text)
    print(f"bench: {results['seconds']:.0f} s; results in {RESULTS.relative_to(REPO)}/", flush=True)


if __name__ == "__main__":
    main()
