"""Run a command against a built Lambda asset the way the Lambda runs it: from a read-only folder (``/var/task``
is read-only, so nothing an import compiles is ever kept) with nothing but the asset on the path."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: ``python -I -S``: no user site, no PYTHONPATH, no site-packages of this machine's interpreter, and ``-B``:
#: no byte code written even where the mount could not be made read-only.
ISOLATED = ("-I", "-S", "-B")

_MOUNT_READ_ONLY = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" && shift && exec "$@"'


@functools.cache
def can_mount_read_only() -> bool:
    """Whether this process may bind-mount a folder read-only in a private mount namespace (root, unshare)."""
    if shutil.which("unshare") is None:
        return False
    with tempfile.TemporaryDirectory(prefix="agentturn-ro-") as folder:
        probe = subprocess.run(
            ["unshare", "-m", "sh", "-c", _MOUNT_READ_ONLY, "sh", folder, "sh", "-c", f"! touch {folder}/written"],
            capture_output=True,
            check=False,
            timeout=30,
        )
    return probe.returncode == 0


def read_only(folder: Path, command: Sequence[str]) -> list[str]:
    """``command``, run with ``folder`` mounted read-only over itself when this machine allows it (else as is:
    ``-B`` in :data:`ISOLATED` still keeps the interpreter from writing byte code)."""
    if not can_mount_read_only():
        return list(command)
    return ["unshare", "-m", "sh", "-c", _MOUNT_READ_ONLY, "sh", str(folder), *command]


def python_in_asset(
    interpreter: str, asset: Path, code: str, *arguments: str, options: Sequence[str] = ()
) -> list[str]:
    """``interpreter`` running ``code`` (``-c``) read-only, with ``asset`` as the only code besides the standard
    library."""
    bootstrap = f"import sys; sys.path.insert(0, {str(asset)!r})\n"
    return read_only(asset, [interpreter, *ISOLATED, *options, "-c", bootstrap + code, *arguments])


def last_json_line(command: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 120) -> Any:
    """Run ``command`` (a fresh interpreter that prints what it found as JSON, last) and return that last line,
    parsed; a failed run fails the test with the end of its stderr."""
    completed = subprocess.run(
        list(command), cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout, check=False
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])
