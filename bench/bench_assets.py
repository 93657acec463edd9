"""Each Lambda function's asset: what it holds, unzipped and zipped, beside the single tree every function
shipped before, and beside the same asset without boto3 (the runtime's instead).

Builds every function's asset (with the byte code of its Python) for the deploy target (Python 3.12, x86_64)
from the dependency cache (run ``python -m agentturn.cdk prefetch`` once where there is a network), zips it the
way CDK does (deflate), and prints one table, with the sizes without boto3 and without byte code beside. Sizes are
properties of the assets, not of the machine's load.

    python -m bench.bench_assets [--out bench/results/assets.json]
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Final

from agentturn.cdk.bundling import (
    DEPLOY_TARGET,
    PACKAGE_DIR,
    RUNTIME_EXCLUDED,
    AssetInputs,
    DependencySpec,
    build_asset,
    ensure_dependencies,
)

FUNCTIONS: Final = ("run", "submit", "worker", "sweeper", "retention")
#: What a Python Lambda runtime already holds: boto3 and what only it needs.
RUNTIME_SDK: Final = ("boto3", "botocore", "s3transfer", "jmespath", "urllib3", "dateutil", "six")


def _sizes(folder: Path, *, skip: tuple[str, ...] = (), bytecode: bool = True) -> tuple[int, int]:
    """(bytes unzipped, bytes zipped with deflate) of ``folder``, top-level entries named in ``skip`` left out, and
    the ``__pycache__`` folders too unless ``bytecode``."""
    buffer = io.BytesIO()
    unzipped = 0
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            top = relative.parts[0].split("-")[0].removesuffix(".py")
            if not path.is_file() or top in skip or (not bytecode and "__pycache__" in relative.parts):
                continue
            unzipped += path.stat().st_size
            archive.write(path, relative.as_posix())
    return unzipped, buffer.tell()


def _whole_tree(spec: DependencySpec, function: str, out: Path) -> None:
    """The asset as it was before: the whole dependency tree and the whole runtime package."""
    shutil.copytree(ensure_dependencies(spec), out, ignore=shutil.ignore_patterns("__pycache__", ".bytecode-*"))
    shutil.copytree(PACKAGE_DIR, out / "agentturn", ignore=shutil.ignore_patterns("__pycache__", *RUNTIME_EXCLUDED))
    shutil.copy2(Path("functions") / function / "app.py", out / "app.py")


def measure() -> dict[str, Any]:
    spec = DependencySpec.for_target(DEPLOY_TARGET)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        before = Path(scratch) / "before"
        _whole_tree(spec, "run", before)
        whole = _sizes(before)
        for function in FUNCTIONS:
            out = Path(scratch) / function
            build_asset(function, spec, out, AssetInputs(modules=("agentturn.demo",), sdk_tracing=False))
            now = _sizes(out)
            without_sdk = _sizes(out, skip=RUNTIME_SDK)
            without_bytecode = _sizes(out, bytecode=False)
            rows.append(
                {
                    "function": function,
                    "before_unzipped": whole[0],
                    "before_zipped": whole[1],
                    "unzipped": now[0],
                    "zipped": now[1],
                    "runtime_boto3_unzipped": without_sdk[0],
                    "runtime_boto3_zipped": without_sdk[1],
                    "no_bytecode_unzipped": without_bytecode[0],
                    "no_bytecode_zipped": without_bytecode[1],
                }
            )
    return {"target": f"python{DEPLOY_TARGET.python_version} {DEPLOY_TARGET.architecture}", "rows": rows}


def _mb(value: int) -> str:
    return f"{value / 1_000_000:.1f}"


def table(payload: dict[str, Any]) -> str:
    lines = [
        f"Lambda assets for {payload['target']} (MB; zipped with deflate, as CDK uploads them)",
        "",
        "| function | before: one tree for all, unzipped | zipped | now, unzipped | zipped | × before (zipped) "
        "| without boto3 (the runtime's), unzipped | zipped | without byte code, unzipped | zipped |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in payload["rows"]:
        lines.append(
            f"| {row['function']} | {_mb(row['before_unzipped'])} | {_mb(row['before_zipped'])} "
            f"| {_mb(row['unzipped'])} | {_mb(row['zipped'])} | {row['zipped'] / row['before_zipped']:.2f} "
            f"| {_mb(row['runtime_boto3_unzipped'])} | {_mb(row['runtime_boto3_zipped'])} "
            f"| {_mb(row.get('no_bytecode_unzipped', 0))} | {_mb(row.get('no_bytecode_zipped', 0))} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("bench/results/assets.json"))
    args = parser.parse_args()
    payload = measure()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2))
    print(table(payload))


if __name__ == "__main__":
    main()
