"""Where the Lambda handler sources (``functions/<name>/app.py``) are, for the bundler and ``agentturn dev``.

A checkout keeps them in ``functions/`` beside ``shared/``; a built distribution carries the same files as
``agentturn/functions/`` (``pyproject.toml`` maps them), so a team that installed agentturn from a wheel
runs and bundles exactly the handlers this repository tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

_PACKAGE = Path(__file__).resolve().parent


class HandlerSourcesNotFoundError(RuntimeError):
    """Neither an installed ``agentturn/functions`` nor a checkout's ``functions/`` holds the handlers."""


def handler_sources() -> Path:
    candidates = (_PACKAGE / "functions", _PACKAGE.parent.parent / "functions")
    for folder in candidates:
        if (folder / "run" / "app.py").is_file():
            return folder
    raise HandlerSourcesNotFoundError(
        "the Lambda handler sources are missing: none of " + ", ".join(str(c) for c in candidates) + " holds run/app.py"
    )


CodeLayout = Literal["package", "module", "source_root"]


def code_layout(path: Path) -> CodeLayout:
    """How a team's ``code`` entry lands at the root of a Lambda bundle (and on ``agentturn dev``'s path).

    A package (a folder with ``__init__.py``) or a module (a ``.py`` file) keeps its name; any other folder
    is a source root (``src/``) whose entries each land at the root.
    """
    if path.is_file():
        return "module"
    if (path / "__init__.py").is_file():
        return "package"
    if path.is_dir():
        return "source_root"
    raise FileNotFoundError(f"code: {path} is neither a folder nor a file")


def import_root(path: Path) -> Path:
    """The folder to put on ``sys.path`` so that ``path`` imports as it would from the bundle's root."""
    return path if code_layout(path) == "source_root" else path.parent
