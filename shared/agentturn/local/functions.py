"""agentturn's Lambda handlers (``functions/<name>/app.py``), loaded and invoked as Lambda would.

Lambda runs each function in isolated containers, each serving one invocation at a time; concurrent
requests get other containers. A :class:`FunctionPool` does the same with separate imports of the same
``app.py`` (its module state — Powertools resolver, lazily built services — is per container, as in
Lambda), so a handler is never entered by two threads at once, which it does not expect.
"""

from __future__ import annotations

import importlib.util
import logging
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from agentturn._sources import HandlerSourcesNotFoundError, handler_sources
from agentturn.listeners.trace import TracePoint, mark
from agentturn.local.emulator import WORKER_TIMEOUT_SECONDS
from agentturn.local.lambda_context import LocalLambdaContext
from agentturn.local.log import LOGGER_NAME

_log = logging.getLogger(LOGGER_NAME)


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    timeout_ms: int
    #: How many containers may run at once.
    concurrency: int


#: Timeouts as the deployed stack sets them (infra/config.py), but the worker's, which is shorter locally.
FUNCTIONS: Final = {
    "run": FunctionSpec("run", 29_000, 4),
    "submit": FunctionSpec("submit", 15_000, 2),
    "worker": FunctionSpec("worker", WORKER_TIMEOUT_SECONDS * 1000, 1),
    "sweeper": FunctionSpec("sweeper", 60_000, 1),
}


class FunctionsNotFoundError(RuntimeError):
    pass


def find_functions_dir() -> Path:
    """The handler sources the deployed functions are bundled from (a checkout's, or the installed package's)."""
    try:
        return handler_sources()
    except HandlerSourcesNotFoundError as exc:
        raise FunctionsNotFoundError(str(exc)) from exc


def _load(path: Path, module_name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise FunctionsNotFoundError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered like any import, so anything that looks a module up by name (typing, pickling) finds it.
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


Handler = Callable[[Any, Any], Any]
#: Readies a freshly imported container before it serves (the dev server passes one harmless request through it, so
#: that what its handler builds on first use — services, clients, the resolver — is built before a person waits).
Ready = Callable[[ModuleType], None]


class FunctionPool:
    def __init__(self, spec: FunctionSpec, app_path: Path, *, acquire_timeout: float = 60.0) -> None:
        self.spec = spec
        self.app_path = app_path
        self._idle: queue.LifoQueue[ModuleType] = queue.LifoQueue()
        self._created = 0
        #: A spare container is being imported (and readied) in the background (at most one at a time).
        self._warming = False
        self._ready: Ready | None = None
        self._lock = threading.Lock()
        self._acquire_timeout = acquire_timeout

    def _new_container(self) -> ModuleType:
        with self._lock:
            number = self._created
            self._created += 1
        return _load(self.app_path, f"_agentturn_dev_{self.spec.name}_{number}")

    def _acquire(self) -> ModuleType:
        try:
            container = self._idle.get_nowait()
        except queue.Empty:
            pass
        else:
            self._keep_spare()
            return container
        with self._lock:
            can_grow = self._created < self.spec.concurrency and not self._warming
        if can_grow:
            return self._new_container()
        # All containers busy (or a spare is being imported, which comes sooner than a new import): wait for one,
        # as a throttled Lambda would make the caller wait (bounded).
        container = self._idle.get(timeout=self._acquire_timeout)
        self._keep_spare()
        return container

    def _keep_spare(self) -> None:
        """When the last idle container was just taken, import another in the background (while the pool may
        still grow), as provisioned concurrency keeps one ready: a request that arrives while another runs (the
        console's Send while its list loads) then finds a warm container instead of paying an import of the
        handler (0.5 s or more) before its turn starts."""
        if not self._idle.empty():
            return
        with self._lock:
            if self._warming or self._created >= self.spec.concurrency:
                return
            self._warming = True
        self._warm_in_background("warm", lambda: [self._new_container()])

    def warm(self) -> ModuleType:
        """Import one container now (start-up cost and import errors show before the URL is printed)."""
        container = self._acquire()
        self._idle.put(container)
        return container

    def ready_in_background(self, ready: Ready) -> None:
        """Ready the idle containers with ``ready`` in the background, and every container imported from now on
        before it serves; a request arriving meanwhile waits for one (sooner than it would import its own)."""
        with self._lock:
            self._ready = ready
            self._warming = True
        idle: list[ModuleType] = []
        while True:
            try:
                idle.append(self._idle.get_nowait())
            except queue.Empty:
                break
        self._warm_in_background("ready", lambda: idle)

    def _warm_in_background(self, name: str, containers: Callable[[], list[ModuleType]]) -> None:
        """In a thread: get ``containers`` (import new ones, or those taken from the idle queue), ready each, then
        offer them. The caller has set ``_warming``; it is cleared before they are offered, so that whoever takes
        the last one imports a spare ahead."""

        def run() -> None:
            warmed: list[ModuleType] = []
            try:
                warmed = containers()
                for container in warmed:
                    self._readied(container)
            except Exception:
                # The first container imported the same module at start: this only fails if the environment
                # broke since; the request that needs one imports it itself and reports the error.
                _log.exception("importing a spare %s container failed", self.spec.name)
            finally:
                with self._lock:
                    self._warming = False
                for container in warmed:
                    self._idle.put(container)

        threading.Thread(target=run, name=f"{name}-{self.spec.name}", daemon=True).start()

    def _readied(self, container: ModuleType) -> None:
        ready = self._ready
        if ready is None:
            return
        try:
            ready(container)
        except Exception:
            # Only a head start: the first real request builds what this did not, and reports what fails.
            _log.debug("readying a %s container failed", self.spec.name, exc_info=True)
        mark(TracePoint.HANDLER_READIED, function=self.spec.name)

    def invoke(self, event: Any) -> Any:
        container = self._acquire()
        context = LocalLambdaContext(function_name=f"agentturn-{self.spec.name}", timeout_ms=self.spec.timeout_ms)
        started = time.monotonic()
        path = event.get("rawPath") if isinstance(event, dict) else None
        mark(TracePoint.HANDLER_ENTERED, function=self.spec.name, path=path)
        try:
            handler: Handler = container.handler
            return handler(event, context)
        finally:
            mark(TracePoint.HANDLER_RETURNED, function=self.spec.name, path=path)
            self._idle.put(container)
            elapsed_ms = (time.monotonic() - started) * 1000
            if elapsed_ms > self.spec.timeout_ms:
                _log.warning(
                    "%s took %.0f ms: Lambda would have stopped it at %d ms",
                    self.spec.name,
                    elapsed_ms,
                    self.spec.timeout_ms,
                )

    def invoke_stream(self, event: Any) -> Any:
        """The handler module's ``stream_handler`` (a :class:`~agentturn.api.http.StreamedAnswer`); the container
        stays busy until its chunks are read to the end or the reader stops (as a streaming Lambda stays busy)."""
        container = self._acquire()
        context = LocalLambdaContext(function_name=f"agentturn-{self.spec.name}", timeout_ms=self.spec.timeout_ms)
        try:
            answer = container.stream_handler(event, context)
        except BaseException:
            self._idle.put(container)
            raise

        def chunks() -> Iterator[bytes]:
            try:
                yield from answer.chunks
            finally:
                self._idle.put(container)

        return replace(answer, chunks=chunks())


def load_pools(functions_dir: Path) -> dict[str, FunctionPool]:
    pools = {}
    for name, spec in FUNCTIONS.items():
        path = functions_dir / name / "app.py"
        if not path.is_file():
            raise FunctionsNotFoundError(f"missing handler {path}")
        pools[name] = FunctionPool(spec, path)
    return pools
