"""Byte code compiled into each Lambda asset, by the Lambda runtime's own Python version.

Why: a Lambda's ``/var/task`` is read-only, so an asset without ``.pyc`` files is compiled from source in every
cold process and the result is thrown away (``python -m bench.bench_imports``: about two thirds of the first
answered request). Compiling at synth moves that work out of every cold start.

How, and why so:

* **By the target's interpreter** (the construct's ``python_version``, e.g. ``python3.12``): a ``.pyc`` is
  named and read only by the interpreter whose version made it (``__pycache__/app.cpython-312.pyc``); this
  machine's Python would write files the Lambda ignores. The interpreter is ``$AGENTTURN_LAMBDA_PYTHON`` when
  set, else ``python3.X`` on the ``PATH``, else pyenv's ``~/.pyenv/versions/3.X.*``, else this interpreter if
  its version matches; each candidate is asked its version before it is used.
* **``--invalidation-mode unchecked-hash``**: CDK's zips normalise every file's timestamp, so a timestamp-
  checked ``.pyc`` (the default) would not match its source's mtime in the Lambda and would be recompiled
  every time; a *checked* hash would be used but costs reading and hashing every source at import. The asset
  never changes once built (a changed source is a new asset with new ``.pyc`` files), so nothing is gained by
  checking: unchecked.
* **``co_filename`` under ``/var/task``** (``-s`` and ``-p``): tracebacks name the path the Lambda runs from,
  and the same inputs compile to the same bytes wherever they were built (the staging folder's name is not in
  them).

* **The shared dependency tree once** (:func:`compiled_tree`): a hard-linked copy of the cached tree the
  functions' assets link from is compiled once, beside it, and its ``.pyc`` files come with the hard links; only
  agentturn, the team's code and the handler are compiled per asset. The bytes are the same as compiling the
  asset whole (``co_filename`` is relative to the asset's root either way).

Without that interpreter the asset is shipped without byte code, as before, and a :class:`BytecodeWarning`
says so and what it costs: never a broken asset, and never one with ``.pyc`` files of the wrong version.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from agentturn.cdk.staging import build_once, link_or_copy

#: Where a Python Lambda's code is unpacked: what ``co_filename`` names.
TASK_ROOT: Final = "/var/task"
#: The environment variable that names the interpreter to compile with (its version must be the target's).
INTERPRETER_ENV: Final = "AGENTTURN_LAMBDA_PYTHON"
_VERSION: Final = re.compile(r"^3\.\d+$")


class BytecodeWarning(UserWarning):
    """The asset is built without byte code (no interpreter of the target's version), or without part of it."""


def cache_tag(python_version: str) -> str:
    """``cpython-312`` for ``3.12``: the infix of the ``.pyc`` files that version reads."""
    return "cpython-" + python_version.replace(".", "")


def _version_of(executable: str) -> str | None:
    try:
        completed = subprocess.run(
            [executable, "-I", "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return completed.stdout.strip() if completed.returncode == 0 else None


def _candidates(python_version: str) -> list[str]:
    configured = os.environ.get(INTERPRETER_ENV)
    if configured:
        return [configured]  # the owner's choice: never silently replaced by another interpreter
    found = [shutil.which(f"python{python_version}") or ""]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if pyenv.is_dir():
        found += [str(p) for p in sorted(pyenv.glob(f"{python_version}.*/bin/python{python_version}"), reverse=True)]
    if f"{sys.version_info.major}.{sys.version_info.minor}" == python_version:
        found.append(sys.executable)
    return [c for c in dict.fromkeys(found) if c]


@functools.cache
def target_interpreter(python_version: str) -> str | None:
    """An interpreter of ``python_version`` (``3.12``) on this machine, or ``None``."""
    if not _VERSION.match(python_version):
        raise ValueError(f"python_version must look like '3.12', not {python_version!r}")
    for candidate in _candidates(python_version):
        if _version_of(candidate) == python_version:
            return candidate
    return None


def compile_asset(output: Path, python_version: str, *, only: Sequence[str] | None = None) -> bool:
    """Write ``__pycache__/*.cpython-3XX.pyc`` beside every ``.py`` under ``output`` (or under its entries named in
    ``only``); ``False`` when it could not (a :class:`BytecodeWarning` says why; the asset then runs from source,
    as it did before)."""
    interpreter = target_interpreter(python_version)
    if interpreter is None:
        warnings.warn(
            f"no Python {python_version} interpreter here (set ${INTERPRETER_ENV}, or put python{python_version} "
            f"on the PATH): {output.name!r} is bundled without byte code, so every cold start compiles it",
            BytecodeWarning,
            stacklevel=2,
        )
        return False
    targets = [str(output)] if only is None else [str(output / name) for name in only if (output / name).exists()]
    if not targets:
        return True
    command = [
        interpreter, "-I", "-m", "compileall", "-q", "-j", "0",
        "--invalidation-mode", "unchecked-hash",
        "-s", str(output), "-p", TASK_ROOT,
        *targets,
    ]  # fmt: skip
    completed = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    if completed.returncode != 0:
        # A source that does not compile would not import from source either: the rest keeps its byte code.
        warnings.warn(
            f"{output.name!r}: some files did not compile with {interpreter}:\n{completed.stdout}{completed.stderr}",
            BytecodeWarning,
            stacklevel=2,
        )
    return True


def compiled_tree(tree: Path, python_version: str) -> Path | None:
    """A copy of the installed dependency tree ``tree`` (hard links) with its byte code, made once beside it
    (``<tree>.cpython-312``) and reused: every asset then takes its ``.pyc`` files by hard link instead of
    compiling them again. ``tree`` itself is never written (builds of other versions of agentturn share it and
    expect it as pip left it). The tree's entries land at the asset's root, so the ``co_filename`` under
    :data:`TASK_ROOT` is the same as if the asset had been compiled whole. ``None`` without the interpreter."""
    if target_interpreter(python_version) is None:
        return None
    final = tree.with_name(f"{tree.name}.{cache_tag(python_version)}")
    if (final / _COMPILED).exists():
        return final

    def compiled(copy: Path) -> str | None:
        shutil.copytree(tree, copy, copy_function=link_or_copy)
        return "unchecked-hash\n" if compile_asset(copy, python_version) else None

    return final if build_once(final, _COMPILED, compiled) else None


#: The file that marks a compiled tree complete.
_COMPILED: Final = ".bytecode-complete"
