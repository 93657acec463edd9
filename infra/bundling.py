"""Lambda code assets built without Docker: ``functions/<name>/`` + the ``agentturn`` package + its wheels.

There is no Docker daemon on the machines that synthesise this stack, so each function's asset is built by
a local bundling step (:class:`LocalBundler`, an ``ILocalBundling``):

1. The third-party dependencies (``[project].dependencies`` and the ``aws`` extra of ``pyproject.toml``, so
   there is no second list to keep in step) are installed once per synth *for the Lambda runtime*, not for
   this machine: ``pip install --only-binary=:all: --implementation cp --python-version 3.12 --abi cp312
   --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --target ...``. Compiled wheels
   (pydantic_core, rpds-py) therefore match the Lambda's interpreter and architecture.
2. Every package this machine has installed in that dependency closure is pinned to the installed version
   (a constraints file): the Lambdas run the versions the tests ran against, and the asset is
   reproducible on a given development environment. Packages not installed here resolve within the
   ranges of ``pyproject.toml``.
3. The install is cached on disk under ``.artifacts/lambda-deps/<key>`` (the key hashes the requirements,
   the pins, the target and this module's format version) and shared by the four functions: the second
   function of a synth, and every later synth, costs a copy (hard links where possible), not a pip run.
   ``python -m infra.bundling prefetch`` fills the cache ahead of time, so a synth (and the bundling test,
   which runs without a network) needs no network.
4. The asset is the dependency tree, then ``agentturn/`` from ``shared/``, then ``functions/<name>/*`` at
   the root (the handler is ``app.handler``). The asset hash is computed from exactly these inputs, so a
   change to the package redeploys every function and nothing else does.

Why boto3 and Powertools are bundled rather than taken from the runtime and the AWS-managed Powertools
layer: the runtime's boto3 changes under a deployed function without notice, and the managed layer is a
cross-account dependency whose version (and availability, in some partitions and regions) is decided
elsewhere. Bundled, both are the versions the tests pinned, the asset is self-contained (the bundling test
imports a handler with nothing but the asset on ``sys.path``), and the cost is a larger asset (~46 MB
unzipped, ~20 MB zipped, over half of it botocore's service models; Lambda allows 250 MB unzipped).

No ``.pyc`` files are written: they would be compiled by this machine's interpreter, not the Lambda's.
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

from infra.config import Architecture, StackConfig

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
FUNCTIONS_DIR: Final = REPO_ROOT / "functions"
PACKAGE_DIR: Final = REPO_ROOT / "shared" / "agentturn"
PYPROJECT: Final = REPO_ROOT / "pyproject.toml"
#: Where installed dependency trees are cached (``AGENTTURN_LAMBDA_DEPS_CACHE`` overrides it).
DEFAULT_CACHE_DIR: Final = REPO_ROOT / ".artifacts" / "lambda-deps"
#: Bump when the layout of an asset changes, so cached trees and asset hashes are not reused across it.
BUNDLE_FORMAT: Final = "agentturn-lambda-asset/1"
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

    @classmethod
    def of(cls, config: StackConfig) -> Target:
        return cls(python_version=config.python_version, architecture=config.architecture)


# ------------------------------------------------------------------------------------------ requirements


def runtime_requirements(pyproject: Path = PYPROJECT) -> tuple[str, ...]:
    """What the Lambdas need from an index: the project's dependencies plus its ``aws`` extra."""
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = [*project.get("dependencies", []), *project.get("optional-dependencies", {}).get("aws", [])]
    # "agentturn[...]" self-references (an extra that includes another extra) are shipped as source.
    return tuple(r for r in requirements if _canonical(_requirement_name(r)) != _SELF)


def _requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if match is None:
        raise BundlingError(f"cannot read the requirement {requirement!r}")
    return match.group(1)


def _requirement_extras(requirement: str) -> set[str]:
    head = requirement.split(";", 1)[0]
    match = re.search(r"\[([^\]]*)\]", head)
    return {_canonical(e) for e in match.group(1).split(",") if e.strip()} if match else set()


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_pins(requirements: Iterable[str]) -> dict[str, str]:
    """``{name: version}`` of every installed distribution in the closure of ``requirements``.

    Markers other than ``extra == ...`` are not evaluated (they describe this machine, not the Lambda):
    the closure may be a little larger than what pip installs, which only adds unused pins.
    """
    pins: dict[str, str] = {}
    pending: list[tuple[str, set[str]]] = [(_requirement_name(r), _requirement_extras(r)) for r in requirements]
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
            pending.append((_requirement_name(requirement), _requirement_extras(requirement)))
    pins.pop(_SELF, None)
    return dict(sorted(pins.items()))


# ----------------------------------------------------------------------------------- dependency cache


@dataclass(frozen=True)
class DependencySpec:
    target: Target
    requirements: tuple[str, ...]
    pins: tuple[tuple[str, str], ...]

    @classmethod
    def for_target(cls, target: Target) -> DependencySpec:
        requirements = runtime_requirements()
        return cls(target=target, requirements=requirements, pins=tuple(installed_pins(requirements).items()))

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
    configured = os.environ.get("AGENTTURN_LAMBDA_DEPS_CACHE")
    return Path(configured) if configured else DEFAULT_CACHE_DIR


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
        # Install into a private directory and rename: a concurrent synth never sees half a tree.
        scratch = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=root))
        try:
            _pip_install(spec, scratch / "site")
            (scratch / "site" / _COMPLETE).write_text(
                json.dumps({"requirements": spec.requirements, "pins": spec.pins})
            )
            try:
                os.replace(scratch / "site", final)
            except OSError:
                if not (final / _COMPLETE).exists():  # not a concurrent winner: a real failure
                    raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
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
            f"({', '.join(spec.target.platforms)}); with no network, run `python -m infra.bundling prefetch` "
            f"where there is one.\n$ {' '.join(command)}\n{result.stdout}{result.stderr}"
        )
    # Console scripts point at this machine's interpreter and are never run in a Lambda.
    shutil.rmtree(target_dir / "bin", ignore_errors=True)
    for cache in target_dir.rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- assets


def _files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part in ("__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache") for part in relative.parts):
            continue
        if path.is_file() and path.suffix not in (".pyc", ".pyo"):
            yield path


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in _files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _link_or_copy(source: str, destination: str) -> None:
    # The cache and cdk.out are on the same file system in a checkout: hard links make the copy of a
    # ~25 MB tree nearly free. Nothing writes to an asset once staged, so sharing inodes is safe.
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


@jsii.implements(ILocalBundling)
class LocalBundler:
    """Builds one function's asset into the output directory CDK gives it."""

    def __init__(self, function: str, spec: DependencySpec) -> None:
        self.function = function
        self.spec = spec

    # jsii passes the BundlingOptions as one positional struct; the type stubs declare keyword arguments.
    # Neither is needed: they are the options this module made.
    def try_bundle(self, output_dir: str, *_options: Any, **_keywords: Any) -> bool:
        build_asset(self.function, self.spec, Path(output_dir))
        # Never "False": that would make CDK fall back to Docker, which these machines do not have.
        return True


def build_asset(function: str, spec: DependencySpec, output: Path) -> None:
    source = FUNCTIONS_DIR / function
    if not (source / "app.py").is_file():
        raise BundlingError(f"{source}/app.py does not exist: every function folder needs its handler module")
    output.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ensure_dependencies(spec), output, dirs_exist_ok=True, copy_function=_link_or_copy)
    (output / _COMPLETE).unlink(missing_ok=True)
    package = output / "agentturn"
    if package.exists():
        raise BundlingError("a third-party wheel installed a top-level 'agentturn' package")
    shutil.copytree(PACKAGE_DIR, package, ignore=shutil.ignore_patterns(*_IGNORED))
    for path in sorted(source.iterdir()):
        if path.name in _IGNORED or path.name == "__pycache__":
            continue
        destination = output / path.name
        if destination.exists():
            raise BundlingError(f"functions/{function}/{path.name} collides with a bundled dependency")
        if path.is_dir():
            shutil.copytree(path, destination, ignore=shutil.ignore_patterns(*_IGNORED))
        else:
            shutil.copy2(path, destination)


def asset_hash(function: str, spec: DependencySpec) -> str:
    """Exactly the inputs of the asset: the dependency key, the package and the function folder."""
    parts = [BUNDLE_FORMAT, spec.key, tree_digest(PACKAGE_DIR), function, tree_digest(FUNCTIONS_DIR / function)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def function_code(function: str, spec: DependencySpec) -> lambda_.Code:
    """The asset of ``functions/<function>``, bundled locally (skipped when the stack is not bundled)."""
    return lambda_.Code.from_asset(
        str(FUNCTIONS_DIR / function),
        # A custom hash: CDK neither fingerprints a large tree nor re-bundles an asset it already staged.
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=asset_hash(function, spec),
        bundling=BundlingOptions(
            image=DockerImage.from_registry(_NO_DOCKER_IMAGE),
            local=LocalBundler(function, spec),
        ),
    )


# ------------------------------------------------------------------------------------------------- CLI


def _deploy_target() -> Target:
    """The target ``cdk.json``'s context describes (what ``npx cdk synth`` will bundle for)."""
    context = json.loads((REPO_ROOT / "cdk.json").read_text()).get("context", {})
    return Target.of(StackConfig.from_context(context.get))


def local_target() -> Target:
    """This interpreter on this machine: the target whose asset a test can import here."""
    architecture: Architecture = "arm64" if os.uname().machine in ("aarch64", "arm64") else "x86_64"
    return Target(f"{sys.version_info.major}.{sys.version_info.minor}", architecture)


def prefetch(targets: Iterable[Target]) -> list[Path]:
    return [ensure_dependencies(DependencySpec.for_target(target)) for target in dict.fromkeys(targets)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.bundling", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser(
        "prefetch",
        help="install the Lambda dependencies into the cache (needs the network once)",
        description="Fills the dependency cache for cdk.json's target and, for the bundling test, for "
        "this interpreter's Python version on this machine's architecture.",
    )
    fetch.add_argument("--python", action="append", help="also this Lambda Python version (repeatable)")
    arguments = parser.parse_args(argv)
    deploy = _deploy_target()
    extra = [Target(version, deploy.architecture) for version in arguments.python or []]
    targets = [deploy, *extra, local_target()]
    for target, path in zip(dict.fromkeys(targets), prefetch(targets), strict=True):
        print(f"python {target.python_version} {target.architecture}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
