"""What one Lambda function can import: the closure of its ``app.py`` over ``agentturn`` and the wheels.

Each function's asset holds only this (:func:`agentturn.cdk.bundling.build_asset`), not the same tree for
all five. The closure is read from the source, not from a run, so a path no test exercised is still
shipped:

* **agentturn modules**: every ``import`` and ``from … import`` anywhere in a module (inside functions too:
  the handlers import lazily), except under ``if TYPE_CHECKING:``; a name imported from a package that is a
  submodule counts as that submodule; every string constant that names an existing ``agentturn`` module
  counts as an import of it (the lazy public API in ``agentturn/__init__.py`` and the registry's defaults
  name modules by string). A package's ``__init__`` comes with any of its modules.
* **wheels**: the top-level names the closure imports that are not ``agentturn`` nor the standard library,
  mapped to their distribution in the dependency tree, then that distribution's own requirements, read from
  the tree's ``*.dist-info/METADATA`` (extras followed only where asked for). The team's requirements are
  always shipped whole: the team's code is not read.
* **botocore's service models**: only :data:`AWS_SERVICES` (what ``agentturn`` creates clients for, and the
  credential providers' own services) plus the team's ``aws_services``. They are 26 of botocore's 28 MB.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name as _canonical

#: The services ``agentturn`` makes boto3 clients for (``agentturn.aws``), and those botocore's credential
#: chain may call (web identity, SSO): the only service models an asset keeps unless the team adds more.
AWS_SERVICES: Final = (
    "bedrock-runtime",
    "dynamodb",
    "events",
    "s3",
    "secretsmanager",
    "sqs",
    "ssm",
    "sso",
    "sso-oidc",
    "sts",
)
_PACKAGE: Final = "agentturn"
#: A string naming an agentturn module, alone or as ``module:attribute`` (how agents are named in settings).
_MODULE_NAME: Final = re.compile(r"^(agentturn(?:\.[a-z_][a-z0-9_]*)+)(?::[A-Za-z_][A-Za-z0-9_.]*)?$")


@dataclass(frozen=True)
class Closure:
    """What one function's asset holds: ``agentturn`` modules (dotted names) and distributions (canonical)."""

    modules: frozenset[str]
    distributions: frozenset[str]


def _module_file(package_dir: Path, name: str) -> Path | None:
    """The source of ``agentturn.x.y`` under ``package_dir`` (the ``agentturn`` folder), if it exists."""
    parts = name.split(".")[1:]
    base = package_dir.joinpath(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Dotted names ``tree`` imports (``from a import b`` yields ``a`` and ``a.b``: ``b`` may be a module)."""
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = _MODULE_NAME.match(node.value)
            if named:
                yield named.group(1)
        pending.extend(ast.iter_child_nodes(node))


def _sources(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_file() and path.suffix == ".py":
            yield path
        elif path.is_dir():
            yield from (p for p in sorted(path.rglob("*.py")) if "__pycache__" not in p.parts)


def package_closure(
    entries: Iterable[Path], package_dir: Path, modules: Iterable[str] = ()
) -> tuple[frozenset[str], frozenset[str]]:
    """(``agentturn`` modules, other top-level names) reachable from the Python files in ``entries`` (files or
    folders: the handler, the team's code) and from the ``agentturn`` ``modules`` named in settings."""
    found: set[str] = set()
    foreign: set[str] = set()
    pending: list[tuple[str, Path]] = [("app", path) for path in _sources(entries)]
    seen_files: set[Path] = set()

    def reach(imported: str) -> None:
        parts = imported.split(".")
        # "import agentturn.a.b" runs agentturn/__init__, agentturn/a/__init__, then b.
        for end in range(1, len(parts) + 1):
            dotted = ".".join(parts[:end])
            source = _module_file(package_dir, dotted)
            if source is not None and dotted not in found:
                found.add(dotted)
                pending.append((dotted, source))

    for name in modules:
        reach(name)
    while pending:
        name, path = pending.pop()
        if path in seen_files:
            continue
        seen_files.add(path)
        tree = ast.parse(path.read_text(), filename=str(path))
        for imported in _imports(tree, name, path.name == "__init__.py"):
            top = imported.split(".")[0]
            if top == _PACKAGE:
                reach(imported)
            elif top and top not in sys.stdlib_module_names:
                foreign.add(top)
    return frozenset(found), frozenset(foreign)


@dataclass(frozen=True)
class _Distribution:
    name: str
    top_level: frozenset[str]
    requires: tuple[Requirement, ...]


def _read_tree(tree: Path) -> dict[str, _Distribution]:
    """Every distribution installed in ``tree`` (a ``pip install --target`` folder), by canonical name."""
    found: dict[str, _Distribution] = {}
    for info in tree.glob("*.dist-info"):
        metadata = (info / "METADATA").read_text(encoding="utf-8", errors="replace")
        name = ""
        requires: list[Requirement] = []
        for line in metadata.split("\n\n", 1)[0].splitlines():
            if line.startswith("Name:"):
                name = _canonical(line.split(":", 1)[1].strip())
            elif line.startswith("Requires-Dist:"):
                try:
                    requires.append(Requirement(line.split(":", 1)[1].strip()))
                except InvalidRequirement:
                    continue
        top: set[str] = set()
        record = info / "RECORD"
        for row in record.read_text().splitlines() if record.is_file() else ():
            first = row.split(",", 1)[0].split("/", 1)[0]
            if first and not first.endswith((".dist-info", ".data")) and first != "..":
                top.add(first.removesuffix(".py"))
        found[name] = _Distribution(name, frozenset(top), tuple(requires))
    return found


def _wanted(requirement: Requirement, extras: frozenset[str]) -> bool:
    if requirement.marker is None:
        return True
    marker = str(requirement.marker)
    named = {_canonical(e) for e in re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)}
    if named:
        return bool(named & extras)
    # Other markers describe an interpreter: evaluated for the Lambda's (Linux, CPython), not this machine's.
    return requirement.marker.evaluate({"sys_platform": "linux", "platform_system": "Linux", "extra": ""})


def distribution_closure(
    tree: Path, top_level: Iterable[str], requirements: Iterable[str] = (), declared: Iterable[str] = ()
) -> frozenset[str]:
    """Canonical names of the distributions in ``tree`` that provide ``top_level`` names or are ``requirements``
    (with their extras), and of everything those require. A distribution reached through an import gets the
    extras ``declared`` (agentturn's own requirements) asks for: ``aws-lambda-powertools[tracer]`` brings the
    X-Ray SDK that its Tracer imports when tracing is on."""
    installed = _read_tree(tree)
    by_top = {top: dist.name for dist in installed.values() for top in dist.top_level}
    extras_of: dict[str, frozenset[str]] = {}
    for line in declared:
        parsed = Requirement(line)
        extras_of[_canonical(parsed.name)] = frozenset(_canonical(e) for e in parsed.extras)
    pending: list[tuple[str, frozenset[str]]] = [
        (by_top[t], extras_of.get(by_top[t], frozenset())) for t in top_level if t in by_top
    ]
    for line in requirements:
        parsed = Requirement(line)
        pending.append((_canonical(parsed.name), frozenset(_canonical(e) for e in parsed.extras)))
    chosen: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    while pending:
        name, extras = pending.pop()
        if (name, extras) in seen or name not in installed:
            continue
        seen.add((name, extras))
        chosen.add(name)
        for requirement in installed[name].requires:
            if _wanted(requirement, extras):
                pending.append((_canonical(requirement.name), frozenset(_canonical(e) for e in requirement.extras)))
    return frozenset(chosen)


def tree_entries(tree: Path, distributions: Iterable[str]) -> list[str]:
    """The top-level files and folders of ``tree`` that belong to ``distributions`` (their dist-info included)."""
    installed = _read_tree(tree)
    entries: set[str] = set()
    for info in tree.glob("*.dist-info"):
        name = _canonical(info.name.removesuffix(".dist-info").rsplit("-", 1)[0])
        if name in distributions and name in installed:
            entries.add(info.name)
            for top in installed[name].top_level:
                for candidate in (top, f"{top}.py"):
                    if (tree / candidate).exists():
                        entries.add(candidate)
    return sorted(entries)


def function_closure(
    entries: Iterable[Path],
    package_dir: Path,
    tree: Path,
    *,
    modules: Iterable[str] = (),
    requirements: Iterable[str] = (),
    declared: Iterable[str] = (),
) -> Closure:
    """The ``agentturn`` modules and the distributions of ``tree`` that the handler and the team's code in
    ``entries``, and the agentturn ``modules`` settings name, may import (``requirements``: the team's,
    shipped whole; ``declared``: agentturn's own, for their extras)."""
    modules, foreign = package_closure(entries, package_dir, modules)
    return Closure(modules=modules, distributions=distribution_closure(tree, foreign, requirements, declared))


def kept_service_model(name: str, services: Iterable[str]) -> bool:
    """Whether the entry ``name`` of ``botocore/data`` stays in an asset: the shared files (endpoints,
    partitions, retry rules) and the folders of the listed services."""
    return name.endswith(".json") or name in set(services)
