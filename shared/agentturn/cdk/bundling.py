"""Lambda code assets built without Docker: ``functions/<name>/`` + the ``agentturn`` package + the team's
code + the wheels of both.

There is no Docker daemon on the machines that synthesise this stack, so each function's asset is built by
a local bundling step (:class:`LocalBundler`, an ``ILocalBundling``):

1. The third-party dependencies (agentturn's ``[project].dependencies`` and its ``aws`` extra, read from
   ``pyproject.toml`` in a checkout and from the installed distribution's metadata otherwise, so there is
   no second list to keep in step; plus the team's ``requirements``, resolved together with them) are
   installed once per synth *for the Lambda runtime*, not for
   this machine: ``pip install --only-binary=:all: --implementation cp --python-version 3.12 --abi cp312
   --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --target ...``. Compiled wheels
   (pydantic_core, rpds-py) therefore match the Lambda's interpreter and architecture.
2. Every package this machine has installed in that dependency closure is pinned to the installed version
   (a constraints file): the Lambdas run the versions the tests ran against, and the asset is
   reproducible on a given development environment. Packages not installed here resolve within the
   ranges of ``pyproject.toml``.
3. The install is cached on disk under ``~/.cache/agentturn/lambda-deps/<key>`` (``$XDG_CACHE_HOME`` or
   ``$AGENTTURN_LAMBDA_DEPS_CACHE`` move it; the key hashes the requirements,
   the pins, the target and this module's format version) and shared by the four functions: the second
   function of a synth, and every later synth, costs a copy (hard links where possible), not a pip run.
   ``python -m agentturn.cdk prefetch`` fills the cache ahead of time, so a synth (and the bundling
   test, which runs without a network) needs no network.
4. The asset is what the function can import (:mod:`agentturn.cdk.closure`): the distributions of the
   dependency tree its handler and the team's code reach (the team's requirements whole), botocore's models
   of the services used only, the ``agentturn`` modules reached, then the team's ``code`` (each folder,
   package or module at the root), then ``functions/<name>/*`` at the root (the handler is
   ``app.handler``). The asset hash is computed from exactly these inputs, so a change to the package or
   the team's code redeploys every function and nothing else does.

The handler sources come from :func:`agentturn._sources.handler_sources` (a checkout's ``functions/``, or
the same files inside an installed distribution).

Why boto3 and Powertools are bundled rather than taken from the runtime and the AWS-managed Powertools
layer: the runtime's boto3 changes under a deployed function without notice, and the managed layer is a
cross-account dependency whose version (and availability, in some partitions and regions) is decided
elsewhere. Bundled, both are the versions the tests pinned, the asset is self-contained (the bundling test
imports a handler with nothing but the asset on ``sys.path``), and the cost is 3.2 MB zipped per function
(``python -m bench.bench_assets``: 11.6 MB with boto3, the models of the services used and the byte code, 8.4 MB
without boto3). Precompiled, the bundled boto3 imports as fast as the runtime's (``python -m bench.bench_imports``).

Byte code is compiled into each asset by the Lambda runtime's Python version (:mod:`agentturn.cdk.bytecode`:
why, how, and what happens without that interpreter); the dependency cache itself holds none.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Final

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name as _canonical

from agentturn._sources import code_layout
from agentturn.cdk.bytecode import cache_tag, compile_asset, compiled_tree, target_interpreter
from agentturn.cdk.checked_forms import checked_digests, write_checked
from agentturn.cdk.closure import AWS_SERVICES, Closure, function_closure, kept_service_model, tree_entries
from agentturn.cdk.settings import Architecture
from agentturn.cdk.staging import build_once, link_or_copy

PACKAGE_DIR: Final = Path(__file__).resolve().parent.parent
#: Where a checkout would hold ``pyproject.toml`` (the package is ``shared/agentturn``).
_CHECKOUT: Final = PACKAGE_DIR.parent.parent
#: Subpackages that never run in a Lambda: the construct itself, ``agentturn dev``, the console, the
#: ``agentturn init`` templates, the conformance kits and the handler sources (which go to the asset root).
RUNTIME_EXCLUDED: Final = ("cdk", "local", "web", "templates", "functions", "testing")
#: Bump when the layout of a cached dependency tree changes, so cached trees are not reused across it.
BUNDLE_FORMAT: Final = "agentturn-lambda-asset/1"
#: Bump when the layout of an asset changes (2: the runtime part of the package, the team's code; 3: only what
#: the function can import, botocore's models of the services it uses; 4: byte code of the target's Python; 5: the
#: digests of the agents' form schemas checked at build, :mod:`agentturn.cdk.checked_forms`).
ASSET_LAYOUT: Final = "5"
#: The handler every function's ``app.py`` defines.
HANDLER: Final = "app.handler"
#: Never shipped: caches, and the console scripts pip writes (they name this machine's interpreter).
_IGNORED: Final = ("__pycache__", "*.pyc", "*.pyo", ".mypy_cache", ".pytest_cache", ".ruff_cache")
#: This project's own distribution: shipped as source from shared/, never installed from an index.
_SELF: Final = "agentturn"
#: The Docker image named in BundlingOptions is never pulled: local bundling always succeeds or raises.
_NO_DOCKER_IMAGE: Final = "agentturn/local-bundling-only"


class BundlingError(RuntimeError):
    """The asset could not be built (typically: no network and nothing cached yet)."""


def functions_dir() -> Path:
    """Where the handler sources are: inside an installed distribution, or the checkout's ``functions/``."""
    for folder in (PACKAGE_DIR / "functions", _CHECKOUT / "functions"):
        if (folder / "run" / "app.py").is_file():
            return folder
    raise BundlingError(
        f"the Lambda handler sources are missing: neither {PACKAGE_DIR}/functions nor {_CHECKOUT}/functions"
    )


def _checkout_pyproject() -> Path | None:
    pyproject = _CHECKOUT / "pyproject.toml"
    if pyproject.is_file() and tomllib.loads(pyproject.read_text()).get("project", {}).get("name") == _SELF:
        return pyproject
    return None


@dataclass(frozen=True)
class Target:
    """The Lambda runtime the wheels are chosen for."""

    python_version: str
    architecture: Architecture

    @property
    def abi(self) -> str:
        return "cp" + self.python_version.replace(".", "")

    @property
    def platforms(self) -> tuple[str, ...]:
        # Lambda's Python 3.12+ runtimes are Amazon Linux 2023 (glibc 2.34): manylinux2014 (glibc 2.17) and
        # manylinux_2_28 wheels both run there. Listing both lets pip pick whichever a project publishes.
        machine = "x86_64" if self.architecture == "x86_64" else "aarch64"
        return (f"manylinux2014_{machine}", f"manylinux_2_28_{machine}")


# ------------------------------------------------------------------------------------------ requirements


def runtime_requirements(pyproject: Path | None = None) -> tuple[str, ...]:
    """What the Lambdas need from an index: agentturn's dependencies plus its ``aws`` extra.

    Normalised (``packaging``'s spelling: sorted specifiers, no markers), so that the same requirements read
    from a checkout's ``pyproject.toml`` or from an installed wheel's metadata give the same cache key.
    """
    pyproject = pyproject or _checkout_pyproject()
    if pyproject is not None:
        project = tomllib.loads(pyproject.read_text())["project"]
        declared = [*project.get("dependencies", []), *project.get("optional-dependencies", {}).get("aws", [])]
        requirements = [Requirement(r) for r in declared]
    else:
        requirements = [
            r
            for r in map(Requirement, metadata.requires(_SELF) or [])
            if r.marker is None or r.marker.evaluate({"extra": "aws"})
        ]
    normalised: list[str] = []
    for requirement in requirements:
        requirement.marker = None
        # "agentturn[...]" self-references (an extra that includes another extra) are shipped as source.
        if _canonical(requirement.name) != _SELF:
            normalised.append(str(requirement))
    return tuple(normalised)


def _name_and_extras(requirement: str) -> tuple[str, set[str]]:
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement as exc:
        raise BundlingError(f"cannot read the requirement {requirement!r}: {exc}") from None
    return parsed.name, {_canonical(extra) for extra in parsed.extras}


def installed_pins(requirements: Iterable[str]) -> dict[str, str]:
    """``{name: version}`` of every installed distribution in the closure of ``requirements``.

    Markers other than ``extra == ...`` are not evaluated (they describe this machine, not the Lambda):
    the closure may be a little larger than what pip installs, which only adds unused pins.
    """
    pins: dict[str, str] = {}
    pending: list[tuple[str, set[str]]] = [_name_and_extras(r) for r in requirements]
    seen: set[tuple[str, frozenset[str]]] = set()
    while pending:
        name, extras = pending.pop()
        key = (_canonical(name), frozenset(extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        pins[_canonical(name)] = distribution.version
        for requirement in distribution.requires or []:
            marker = requirement.split(";", 1)[1] if ";" in requirement else ""
            wanted = {_canonical(e) for e in re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)}
            if wanted and not wanted & extras:
                continue
            pending.append(_name_and_extras(requirement))
    pins.pop(_SELF, None)
    return dict(sorted(pins.items()))


# ----------------------------------------------------------------------------------- dependency cache


@dataclass(frozen=True)
class DependencySpec:
    target: Target
    requirements: tuple[str, ...]
    pins: tuple[tuple[str, str], ...]
    #: How many of ``requirements`` are agentturn's own (the rest are the team's, shipped whole).
    own: int = 0

    @classmethod
    def for_target(cls, target: Target, extra_requirements: Iterable[str] = ()) -> DependencySpec:
        """agentturn's runtime requirements, then the team's (``extra_requirements``), in one resolution."""
        own = runtime_requirements()
        requirements = (*own, *dict.fromkeys(extra_requirements))
        pins = tuple(installed_pins(requirements).items())
        return cls(target=target, requirements=requirements, pins=pins, own=len(own))

    @property
    def team_requirements(self) -> tuple[str, ...]:
        return self.requirements[self.own :]

    @property
    def key(self) -> str:
        document = {
            "format": BUNDLE_FORMAT,
            "python": self.target.python_version,
            "abi": self.target.abi,
            "platforms": self.target.platforms,
            "requirements": self.requirements,
            "pins": self.pins,
        }
        return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:24]


def cache_dir() -> Path:
    """``$AGENTTURN_LAMBDA_DEPS_CACHE``, else ``agentturn/lambda-deps`` in the user's cache directory: one
    cache for every project of the machine (a tree is only ever added under a new key, never changed)."""
    configured = os.environ.get("AGENTTURN_LAMBDA_DEPS_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentturn" / "lambda-deps"


_COMPLETE: Final = ".complete"
_installed_this_process: dict[str, Path] = {}


def ensure_dependencies(spec: DependencySpec) -> Path:
    """The directory holding ``spec``'s installed dependency tree, installing it on a cache miss."""
    key = spec.key
    if key in _installed_this_process:
        return _installed_this_process[key]
    root = cache_dir()
    final = root / key
    if not (final / _COMPLETE).exists():
        root.mkdir(parents=True, exist_ok=True)

        def install(site: Path) -> str:
            _pip_install(spec, site)
            return json.dumps({"requirements": spec.requirements, "pins": spec.pins})

        build_once(final, _COMPLETE, install)
    _installed_this_process[key] = final
    return final


def _pip_install(spec: DependencySpec, target_dir: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="agentturn-reqs-") as work:
        requirements = Path(work, "requirements.txt")
        requirements.write_text("\n".join(spec.requirements) + "\n")
        constraints = Path(work, "constraints.txt")
        constraints.write_text("".join(f"{name}=={version}\n" for name, version in spec.pins))
        command = [
            sys.executable, "-m", "pip", "install",
            "--quiet", "--disable-pip-version-check", "--no-input", "--no-compile",
            "--only-binary=:all:", "--implementation", "cp",
            "--python-version", spec.target.python_version, "--abi", spec.target.abi,
            *(arg for platform in spec.target.platforms for arg in ("--platform", platform)),
            "--target", str(target_dir),
            "-r", str(requirements), "-c", str(constraints),
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise BundlingError(
            f"pip could not install the Lambda dependencies for Python {spec.target.python_version} "
            f"({', '.join(spec.target.platforms)}); with no network, run `python -m agentturn.cdk prefetch` "
            f"where there is one.\n$ {' '.join(command)}\n{result.stdout}{result.stderr}"
        )
    # Console scripts point at this machine's interpreter and are never run in a Lambda.
    shutil.rmtree(target_dir / "bin", ignore_errors=True)
    for cache in target_dir.rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- assets


def _skipped(relative: Path) -> bool:
    return any(part in _CACHE_DIRS for part in relative.parts) or relative.suffix in (".pyc", ".pyo")


_CACHE_DIRS: Final = ("__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache")


def _files(root: Path, *, exclude: tuple[str, ...] = ()) -> Iterator[Path]:
    """Every file under ``root`` (or ``root`` itself, a module), caches and ``exclude``d top folders left out."""
    if root.is_file():
        yield root
        return
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if _skipped(relative) or (relative.parts and relative.parts[0] in exclude):
            continue
        if path.is_file():
            yield path


def tree_digest(root: Path, *, exclude: tuple[str, ...] = ()) -> str:
    digest = hashlib.sha256()
    for path in _files(root, exclude=exclude):
        name = path.name if root.is_file() else path.relative_to(root).as_posix()
        digest.update(name.encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def code_entries(code: Iterable[Path]) -> list[tuple[str, Path]]:
    """``(name at the asset root, source)`` for the team's code.

    :func:`agentturn._sources.code_layout` says how each entry lands (``agentturn dev`` follows it too).
    """
    entries: list[tuple[str, Path]] = []
    for path in code:
        try:
            layout = code_layout(path)
        except FileNotFoundError as exc:
            raise BundlingError(str(exc)) from None
        if layout != "source_root":
            entries.append((path.name, path))
        else:
            entries += [
                (child.name, child)
                for child in sorted(path.iterdir())
                if not _skipped(Path(child.name)) and not child.name.startswith(".")
            ]
    names = [name for name, _ in entries]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise BundlingError(f"code: {duplicates!r} would be bundled twice at the asset root")
    return entries


@dataclass(frozen=True)
class AssetInputs:
    """What one function's asset is made of, besides the dependency tree: the team's code, the agentturn
    modules its settings name (``agents``), and the AWS services whose botocore models it keeps."""

    code: tuple[Path, ...] = ()
    modules: tuple[str, ...] = ()
    aws_services: tuple[str, ...] = ()
    #: Powertools' Tracer is made only with SDK tracing on: without it the X-Ray SDK is never imported.
    sdk_tracing: bool = True
    #: Byte code compiled by the target's Python (:mod:`agentturn.cdk.bytecode`); off only to measure without it.
    bytecode: bool = True
    #: The deployed agents (``package.module:function``): their form schemas are checked once at build
    #: (:mod:`agentturn.cdk.checked_forms`) when the target's Python is here; ``None``: checked at run time.
    agents: str | None = None

    @property
    def services(self) -> tuple[str, ...]:
        return tuple(sorted({*AWS_SERVICES, *self.aws_services}))


def asset_closure(function: str, spec: DependencySpec, inputs: AssetInputs) -> Closure:
    """The agentturn modules and the distributions ``function``'s asset holds (:mod:`agentturn.cdk.closure`)."""
    code = [path for _, path in code_entries(inputs.code)]
    return function_closure(
        [functions_dir() / function, *code],
        PACKAGE_DIR,
        ensure_dependencies(spec),
        modules=inputs.modules,
        requirements=spec.team_requirements,
        declared=[r if inputs.sdk_tracing else _without_extras(r) for r in spec.requirements[: spec.own]],
    )


def _without_extras(requirement: str) -> str:
    parsed = Requirement(requirement)
    parsed.extras = set()
    return str(parsed)


def _package_files(modules: Iterable[str]) -> list[Path]:
    """The source files of ``modules`` (relative to the folder that holds ``agentturn/``), ``py.typed`` too."""
    files = [Path("agentturn", "py.typed")]
    for name in sorted(modules):
        base = Path(*name.split("."))
        package = PACKAGE_DIR.parent / base / "__init__.py"
        files.append(package.relative_to(PACKAGE_DIR.parent) if package.is_file() else base.with_suffix(".py"))
    return files


@jsii.implements(ILocalBundling)
class LocalBundler:
    """Builds one function's asset into the output directory CDK gives it."""

    def __init__(self, function: str, spec: DependencySpec, inputs: AssetInputs) -> None:
        self.function = function
        self.spec = spec
        self.inputs = inputs

    # jsii passes the BundlingOptions as one positional struct; the type stubs declare keyword arguments.
    # Neither is needed: they are the options this module made.
    def try_bundle(self, output_dir: str, *_options: Any, **_keywords: Any) -> bool:
        build_asset(self.function, self.spec, Path(output_dir), self.inputs)
        # Never "False": that would make CDK fall back to Docker, which these machines do not have.
        return True


def _place(source: Path, destination: Path, what: str) -> None:
    if destination.exists():
        raise BundlingError(f"{what} collides with {destination.name!r}, already in the asset")
    if source.is_dir():
        shutil.copytree(source, destination, ignore=shutil.ignore_patterns(*_IGNORED))
    else:
        shutil.copy2(source, destination)


def _copy_dependencies(
    tree: Path, output: Path, closure: Closure, services: tuple[str, ...], *, bytecode: bool, python_version: str
) -> None:
    data = Path("botocore", "data")
    for entry in tree_entries(tree, closure.distributions):
        source = tree / entry
        if source.name == "__pycache__" or source.name.startswith(".bytecode-"):
            continue
        if source.is_file():
            link_or_copy(str(source), str(output / entry))
            compiled = tree / "__pycache__" / f"{source.stem}.{cache_tag(python_version)}.pyc"
            if bytecode and source.suffix == ".py" and compiled.is_file():  # a top-level module's byte code
                (output / "__pycache__").mkdir(exist_ok=True)
                link_or_copy(str(compiled), str(output / "__pycache__" / compiled.name))
            continue

        def ignore(directory: str, names: list[str]) -> set[str]:
            ignored = {"__pycache__"} if not bytecode and "__pycache__" in names else set()
            if Path(directory).relative_to(tree) == data:
                ignored |= {name for name in names if not kept_service_model(name, services)}
            return ignored

        shutil.copytree(source, output / entry, ignore=ignore, copy_function=link_or_copy)


def build_asset(function: str, spec: DependencySpec, output: Path, inputs: AssetInputs | None = None) -> None:
    inputs = inputs or AssetInputs()
    source = functions_dir() / function
    if not (source / "app.py").is_file():
        raise BundlingError(f"{source}/app.py does not exist: every function folder needs its handler module")
    output.mkdir(parents=True, exist_ok=True)
    tree = ensure_dependencies(spec)
    # The shared tree is compiled once per synth (and cached): its byte code then comes with the hard links.
    precompiled = compiled_tree(tree, spec.target.python_version) if inputs.bytecode else None
    if precompiled is not None:
        tree = precompiled
    if (tree / "agentturn").exists():
        raise BundlingError("a third-party wheel installed a top-level 'agentturn' package")
    closure = asset_closure(function, spec, inputs)
    _copy_dependencies(
        tree,
        output,
        closure,
        inputs.services,
        bytecode=precompiled is not None,
        python_version=spec.target.python_version,
    )
    for relative in _package_files(closure.modules):
        (output / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PACKAGE_DIR.parent / relative, output / relative)
    for name, path in code_entries(inputs.code):
        _place(path, output / name, f"the team's code {str(path)!r}")
    for path in sorted(source.iterdir()):
        if path.name in _IGNORED or path.name == "__pycache__":
            continue
        _place(path, output / path.name, f"functions/{function}/{path.name}")
    if inputs.bytecode:
        # What is not from the shared tree (or all of it, if the tree could not be compiled): agentturn, the
        # team's code, the handler.
        own = [entry.name for entry in output.iterdir() if entry.name != "__pycache__"]
        if precompiled is not None:
            from_tree = set(tree_entries(tree, closure.distributions))
            own = [name for name in own if name not in from_tree]
        compile_asset(output, spec.target.python_version, only=sorted(own))
    if inputs.agents is not None:
        _write_checked_forms(output, spec, inputs, inputs.agents)


#: Digests of checked form schemas by the asset inputs they came from: the agents load once per synth, not once
#: per function (every function of one synth has the same agents, package and team code).
_checked_forms: dict[str, list[str]] = {}


def _write_checked_forms(output: Path, spec: DependencySpec, inputs: AssetInputs, agents: str) -> None:
    key = _shared_inputs_digest(spec, inputs)
    digests = _checked_forms.get(key)
    if digests is None:
        # A function whose asset cannot load the agents (its closure may lack a module they import)
        # writes nothing and remembers nothing: the next function's asset may load them.
        digests = checked_digests(output, agents, spec.target.python_version)
        if digests is None:
            return
        _checked_forms[key] = digests
    write_checked(output, digests)


def asset_hash(function: str, spec: DependencySpec, inputs: AssetInputs | None = None) -> str:
    """Exactly the inputs of the asset: the dependency key, the package, the team's code and the function."""
    inputs = inputs or AssetInputs()
    parts = [_shared_inputs_digest(spec, inputs), function, tree_digest(functions_dir() / function)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _shared_inputs_digest(spec: DependencySpec, inputs: AssetInputs) -> str:
    """The inputs every function of one deployment shares: the dependency key, the package, the team's code."""
    parts = [
        BUNDLE_FORMAT,
        ASSET_LAYOUT,
        spec.key,
        tree_digest(PACKAGE_DIR, exclude=RUNTIME_EXCLUDED),
        *(f"{name}={tree_digest(path)}" for name, path in code_entries(inputs.code)),
        f"modules={','.join(inputs.modules)}",
        f"services={','.join(inputs.services)}",
        f"sdk_tracing={inputs.sdk_tracing}",
        f"bytecode={_bytecode_tag(spec.target, inputs)}",
        f"agents={inputs.agents}",
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _bytecode_tag(target: Target, inputs: AssetInputs) -> str:
    """What byte code the asset will hold: it appears (or goes) with the interpreter, and so does a new hash."""
    if inputs.bytecode and target_interpreter(target.python_version) is not None:
        return cache_tag(target.python_version)
    return "none"


def function_code(function: str, spec: DependencySpec, inputs: AssetInputs | None = None) -> lambda_.Code:
    """The asset of ``function``, bundled locally (skipped when the stack is not bundled)."""
    inputs = inputs or AssetInputs()
    return lambda_.Code.from_asset(
        str(functions_dir() / function),
        # A custom hash: CDK neither fingerprints a large tree nor re-bundles an asset it already staged.
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=asset_hash(function, spec, inputs),
        bundling=BundlingOptions(
            image=DockerImage.from_registry(_NO_DOCKER_IMAGE),
            local=LocalBundler(function, spec, inputs),
        ),
    )


# ------------------------------------------------------------------------------------------------- CLI

#: What ``AgentTurn`` bundles for unless told otherwise (its defaults).
DEPLOY_TARGET: Final = Target("3.12", "x86_64")


def local_target() -> Target:
    """This interpreter on this machine: the target whose asset a test can import here."""
    architecture: Architecture = "arm64" if os.uname().machine in ("aarch64", "arm64") else "x86_64"
    return Target(f"{sys.version_info.major}.{sys.version_info.minor}", architecture)


def prefetch(targets: Iterable[Target], extra_requirements: Iterable[str] = ()) -> list[Path]:
    extra = tuple(extra_requirements)
    return [ensure_dependencies(DependencySpec.for_target(target, extra)) for target in dict.fromkeys(targets)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentturn.cdk", description=(__doc__ or "").split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser(
        "prefetch",
        help="install the Lambda dependencies into the cache (needs the network once)",
        description="Fills the dependency cache for the default deploy target (Python 3.12, x86_64) and for "
        "this interpreter's Python version on this machine's architecture (what the bundling tests import).",
    )
    fetch.add_argument("--python", action="append", help="also this Lambda Python version (repeatable)")
    fetch.add_argument("--architecture", choices=("x86_64", "arm64"), default="x86_64", help="for --python")
    fetch.add_argument("-r", "--requirements", help="the team's requirements file, bundled with agentturn's")
    arguments = parser.parse_args(argv)
    from agentturn.cdk.settings import read_requirements

    extra = read_requirements(arguments.requirements)
    targets = [DEPLOY_TARGET, *(Target(v, arguments.architecture) for v in arguments.python or []), local_target()]
    unique = list(dict.fromkeys(targets))
    for target, path in zip(unique, prefetch(unique, extra), strict=True):
        print(f"python {target.python_version} {target.architecture}: {path}")
    return 0
