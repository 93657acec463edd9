"""What a built distribution of agentturn holds: every package (the list in pyproject.toml is explicit, so a
new subpackage must be added there), the handler sources, the console and the project templates."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]


def _declared() -> tuple[set[str], dict[str, str]]:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(setuptools["packages"]), setuptools["package-dir"]


def _packages_under(folder: Path, name: str) -> set[str]:
    return {
        ".".join((name, *init.parent.relative_to(folder).parts))
        for init in folder.rglob("__init__.py")
        if "__pycache__" not in init.parts
    }


def test_every_package_of_the_source_tree_is_declared() -> None:
    # GIVEN the packages on disk WHEN compared with pyproject's list THEN none is missing and none is stale
    declared, package_dir = _declared()
    on_disk = _packages_under(ROOT / "shared" / "agentturn", "agentturn") | _packages_under(
        ROOT / "functions", "agentturn.functions"
    )
    assert declared == on_disk
    assert package_dir == {"": "shared", "agentturn.functions": "functions"}


def test_every_lambda_handler_folder_is_a_package() -> None:
    # A handler folder without __init__.py would be left out of the wheel, and a team's deploy would lack it.
    for handler in (ROOT / "functions").glob("*/app.py"):
        assert (handler.parent / "__init__.py").is_file(), handler.parent


def test_package_data_covers_the_console_and_the_templates() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["agentturn"]
    assert {"web/*", "web/**/*", "templates/**/*"} <= set(data)
    assert list((ROOT / "shared" / "agentturn" / "templates" / "project").rglob("*.tmpl"))
