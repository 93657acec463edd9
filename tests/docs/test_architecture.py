"""ARCHITECTURE.md stays true: every module, file and folder it names exists, and every core module is named."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]
DOC: Final = ROOT / "ARCHITECTURE.md"
#: The core's subpackages (no AWS SDK): every module of them is named in ARCHITECTURE.md.
CORE: Final = ("agents", "cli", "engine", "forms", "listeners", "ports", "state", "timeline")


def _named(text: str) -> set[str]:
    """Dotted module names (``agentturn.x.y``) and repository paths (``shared/...``) in code spans."""
    return set(re.findall(r"`((?:agentturn(?:\.\w+)+)|(?:(?:shared|functions|infra|tests|bench)/[\w./-]+))`", text))


def _exists(name: str) -> bool:
    if "/" in name:
        return (ROOT / name.rstrip("/")).exists()
    parts = name.split(".")
    if parts[:2] == ["agentturn", "functions"]:  # pyproject maps functions/ into the package
        return (ROOT / "functions" / Path(*parts[2:])).exists()
    base = ROOT / "shared" / Path(*parts)
    # A module, a package, or an attribute of a module (``agentturn.engine.runner.Runner``).
    if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
        return True
    parent = ROOT / "shared" / Path(*parts[:-1])
    return (
        parent.with_suffix(".py").is_file()
        and re.search(
            rf"^(class|def) {re.escape(parts[-1])}\b|^{re.escape(parts[-1])}\b",
            parent.with_suffix(".py").read_text(),
            re.M,
        )
        is not None
    )


def test_everything_the_architecture_names_exists() -> None:
    names = _named(DOC.read_text())
    assert len(names) >= 20, "ARCHITECTURE.md should name the modules it describes"
    missing = sorted(name for name in names if not _exists(name))
    assert missing == [], f"ARCHITECTURE.md names what does not exist: {missing}"


def test_every_core_module_is_placed_in_a_layer() -> None:
    # The core is small on purpose: a new module of the core's subpackages must be placed in the architecture.
    named = _named(DOC.read_text())
    package = ROOT / "shared" / "agentturn"
    core = {
        "agentturn." + ".".join(path.relative_to(package).with_suffix("").parts)
        for folder in CORE
        for path in (package / folder).glob("*.py")
        if path.stem not in {"__init__", "__main__"}
    }
    assert len(core) > 40
    assert sorted(core - named) == []
