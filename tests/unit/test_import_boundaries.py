"""Only the adapters (``agentturn.aws``, ``agentturn.local``) know the AWS SDK: read from the source's AST."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "agentturn"
ADAPTERS = ("aws", "local")
SDK = frozenset({"boto3", "botocore"})


def _sdk_imports(path: Path) -> list[str]:
    """``module:line`` of every import of boto3/botocore in ``path`` (also inside functions, also lazy)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found += [f"{name}:{node.lineno}" for name in names if name.split(".")[0] in SDK]
    return found


def _modules_outside_the_adapters() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] not in ADAPTERS]


def test_the_scan_sees_the_package_and_finds_the_adapters_imports() -> None:
    # GIVEN the package's source / WHEN the adapters are scanned / THEN the scan finds their botocore imports
    # (so an empty result below means "none", not "the scan looked nowhere")
    assert len(_modules_outside_the_adapters()) > 50
    assert _sdk_imports(PACKAGE / "aws" / "translate.py")
    assert _sdk_imports(PACKAGE / "aws" / "_support.py")


@pytest.mark.parametrize("path", _modules_outside_the_adapters(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_outside_the_adapters_imports_the_aws_sdk(path: Path) -> None:
    # GIVEN a module of agentturn outside aws/ and local/
    # WHEN its imports are read
    # THEN none is boto3 or botocore (storage errors reach it as agentturn.errors' types)
    assert _sdk_imports(path) == []
