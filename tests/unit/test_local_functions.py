"""The dev server's function pools: containers as Lambda keeps them, with one spare imported ahead."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentturn.local.functions import FunctionPool, FunctionSpec

#: Held invocations wait on this; each container is its own import of the app, and finds it under this name in
#: ``sys.modules`` (whatever name pytest imported this test module under).
GATE = threading.Event()
GATE_MODULE = "_agentturn_test_pool_gate"

#: A handler that answers with its container's module name, and waits for GATE when asked to hold.
APP = f"""
import sys

def handler(event, context):
    if event.get("hold"):
        sys.modules[{GATE_MODULE!r}].gate.wait(10)
    return {{"container": __name__}}
"""


def _wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        threading.Event().wait(0.01)


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    GATE.clear()
    monkeypatch.setitem(sys.modules, GATE_MODULE, SimpleNamespace(gate=GATE))  # type: ignore[arg-type]
    path = tmp_path / "app.py"
    path.write_text(APP)
    return path


def test_a_spare_container_is_imported_when_the_last_idle_one_is_taken(app: Path) -> None:
    # GIVEN a pool of two containers, one imported at start
    pool = FunctionPool(FunctionSpec("spare", 10_000, 2), app)
    first = pool.warm().__name__

    # WHEN a long invocation takes the only idle container
    held: dict[str, str] = {}
    runner = threading.Thread(target=lambda: held.update(pool.invoke({"hold": True})))
    runner.start()
    try:
        # THEN a second container is imported in the background, without any request asking for it
        _wait_until(lambda: not pool._idle.empty())
        assert pool._created == 2

        # AND a request arriving meanwhile runs in that spare, importing nothing itself
        assert pool.invoke({})["container"] != first
        assert pool._created == 2
    finally:
        GATE.set()
        runner.join(10)
    assert held["container"] == first


def test_no_spare_beyond_the_pools_concurrency(app: Path) -> None:
    # GIVEN a pool of one container (the worker's)
    pool = FunctionPool(FunctionSpec("single", 10_000, 1), app)
    pool.warm()

    # WHEN it is invoked several times, THEN it never imported a second container
    for _ in range(3):
        pool.invoke({})
    assert pool._created == 1


def test_containers_are_readied_before_they_serve(app: Path) -> None:
    # GIVEN a pool of two containers, one imported at start, readied in the background by a recording callback
    pool = FunctionPool(FunctionSpec("ready", 10_000, 2), app)
    first = pool.warm()
    readied: list[str] = []
    pool.ready_in_background(lambda container: readied.append(container.__name__))

    # WHEN a request comes (it waits for the readied container rather than importing its own)
    answer = pool.invoke({})

    # THEN it ran in the container readied first, and the spare imported ahead was readied before it is offered
    assert answer["container"] == first.__name__
    assert readied[0] == first.__name__
    _wait_until(lambda: not pool._idle.empty() and len(readied) == 2)
    assert pool._created == 2


def test_a_readiness_request_that_fails_leaves_the_container_serving(app: Path) -> None:
    # GIVEN a pool whose readiness request raises
    pool = FunctionPool(FunctionSpec("failing", 10_000, 1), app)
    pool.warm()

    def refuse(container: object) -> None:
        raise RuntimeError("no emulator yet")

    pool.ready_in_background(refuse)

    # WHEN a request comes, THEN it is served all the same
    assert pool.invoke({})["container"].startswith("_agentturn_dev_failing_")
