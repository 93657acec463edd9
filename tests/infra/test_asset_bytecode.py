"""Each built asset carries the byte code of the Lambda runtime's Python (:mod:`agentturn.cdk.bytecode`), and the
handler imports from it in a read-only folder without compiling anything; without that interpreter the asset is
built from source with a warning, never with byte code of the wrong version."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentturn.cdk.bundling import (
    DEPLOY_TARGET,
    AssetInputs,
    BundlingError,
    DependencySpec,
    Target,
    asset_hash,
    build_asset,
    ensure_dependencies,
    local_target,
)
from agentturn.cdk.bytecode import INTERPRETER_ENV, BytecodeWarning, cache_tag, compile_asset, target_interpreter
from tests.support.lambda_process import lambda_env
from tests.support.task_root import python_in_asset

#: The flags word of a PEP 552 ``.pyc`` header: bit 0 hash-based, bit 1 check the source. Unchecked hash: 0b01.
UNCHECKED_HASH = 0b01


def _target() -> Target:
    """The deploy target when its interpreter is here (pyenv on the team's machines), else this interpreter's."""
    return DEPLOY_TARGET if target_interpreter(DEPLOY_TARGET.python_version) else local_target()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Target, Path]:
    target = _target()
    try:
        spec = DependencySpec.for_target(target)
    except BundlingError as exc:  # pragma: no cover - the cache is filled by scripts/test
        pytest.fail(f"no cached Lambda dependencies; run `python -m agentturn.cdk prefetch`:\n{exc}")
    asset = tmp_path_factory.mktemp("bytecode") / "retention"
    build_asset("retention", spec, asset, AssetInputs(modules=("agentturn.demo",), sdk_tracing=False))
    return asset, target, ensure_dependencies(spec)


def test_every_source_has_unchecked_byte_code_of_the_target_version(built: tuple[Path, Target, Path]) -> None:
    # GIVEN the retention function's asset, built for the target's Python
    asset, target, _ = built
    tag = cache_tag(target.python_version)
    interpreter = target_interpreter(target.python_version)
    assert interpreter is not None
    magic = subprocess.run(
        [interpreter, "-I", "-c", "import importlib.util, sys; sys.stdout.write(importlib.util.MAGIC_NUMBER.hex())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    sources = sorted(asset.rglob("*.py"))
    assert len(sources) > 100
    # THEN every source has its .pyc of exactly that version, hash-based and unchecked
    missing = [s for s in sources if not (s.parent / "__pycache__" / f"{s.stem}.{tag}.pyc").is_file()]
    assert missing == []
    compiled = list(asset.rglob("*.pyc"))
    assert {p.name.split(".")[-2] for p in compiled} == {tag}
    assert len(compiled) == len(sources)
    for pyc in compiled:
        header = pyc.read_bytes()[:8]
        assert header[:4].hex() == magic, pyc
        assert int.from_bytes(header[4:8], "little") == UNCHECKED_HASH, pyc


def test_the_handler_imports_from_byte_code_in_a_read_only_folder(built: tuple[Path, Target, Path]) -> None:
    # GIVEN the asset mounted read-only (like /var/task) and the target's interpreter, verbose about imports
    asset, target, _ = built
    interpreter = target_interpreter(target.python_version)
    assert interpreter is not None
    env = lambda_env(tracing=False, function_name="agentturn-retention", extra={"LAMBDA_TASK_ROOT": str(asset)})
    # WHEN the handler module is imported with nothing but the asset on the path
    completed = subprocess.run(
        python_in_asset(interpreter, asset, "import app; assert callable(app.handler)", options=("-v",)),
        cwd=asset,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # THEN it imports, every module of the asset from its .pyc, none compiled from source
    assert completed.returncode == 0, completed.stderr[-3000:]
    root = re.escape(str(asset))
    from_source = re.findall(rf"^# code object from {root}/\S+\.py$", completed.stderr, re.MULTILINE)
    from_bytecode = re.findall(rf"^# code object from '{root}/\S+\.pyc'$", completed.stderr, re.MULTILINE)
    assert from_source == []
    loaded = {Path(line.split("'")[1]).relative_to(asset).as_posix() for line in from_bytecode}
    assert f"__pycache__/app.{cache_tag(target.python_version)}.pyc" in loaded
    assert {name.split("/")[0] for name in loaded} >= {"agentturn", "aws_lambda_powertools"}


def test_without_the_target_interpreter_the_asset_is_source_only_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an owner's interpreter setting that names no interpreter
    (tmp_path / "app.py").write_text("handler = None\n")
    monkeypatch.setenv(INTERPRETER_ENV, str(tmp_path / "no-such-python3.12"))
    target_interpreter.cache_clear()
    try:
        # WHEN the asset is compiled for 3.12
        with pytest.warns(BytecodeWarning, match="without byte code"):
            compiled = compile_asset(tmp_path, "3.12")
    finally:
        target_interpreter.cache_clear()
    # THEN nothing is compiled (no other interpreter stands in for it) and the source stays
    assert compiled is False
    assert not (tmp_path / "__pycache__").exists()
    assert (tmp_path / "app.py").is_file()


def test_an_interpreter_of_another_version_is_never_used(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the setting names this machine's interpreter, whose version is not the target's
    other = "3.99"
    monkeypatch.setenv(INTERPRETER_ENV, sys.executable)
    target_interpreter.cache_clear()
    try:
        # THEN no interpreter is found for the target
        assert target_interpreter(other) is None
    finally:
        target_interpreter.cache_clear()


def test_the_asset_hash_changes_with_its_byte_code() -> None:
    # GIVEN the same function, inputs and dependencies, with and without byte code
    spec = DependencySpec(target=local_target(), requirements=(), pins=())
    with_bytecode = asset_hash("sweeper", spec, AssetInputs())
    without = asset_hash("sweeper", spec, AssetInputs(bytecode=False))
    # THEN they are different assets (a deployed function gets the .pyc files when they appear)
    assert with_bytecode != without


def test_the_shared_dependency_tree_is_left_as_pip_wrote_it(built: tuple[Path, Target, Path]) -> None:
    # GIVEN an asset built with byte code from the cached dependency tree
    _, _, tree = built
    # THEN the cached tree itself holds no byte code: other builds (other versions of agentturn) copy it whole
    assert not list(tree.rglob("*.pyc"))
    assert not list(tree.rglob("__pycache__"))
