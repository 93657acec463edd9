"""What the four Lambda modules share: Powertools objects named once, and lazily built services.

Each ``functions/<name>/app.py`` creates its Logger, Tracer and Metrics at module level (so that they are
reused across invocations) and decorates its handler; everything else is built on first use.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from agentturn.api.services import Services

SERVICE: Final = "agentturn"

# A read request records no metric; Powertools would warn about that on every one of them.
warnings.filterwarnings("ignore", message="No application metrics to publish", category=UserWarning)


def metrics_namespace() -> str:
    return os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "agentturn"


class LazyServices:
    """Services built on first use (from the environment unless :meth:`use` set others, e.g. in tests)."""

    def __init__(self, factory: Callable[[], Services] | None = None) -> None:
        self._factory = factory
        self._services: Services | None = None
        self._lock = threading.Lock()

    def use(self, services: Services | None) -> None:
        with self._lock:
            self._services = services

    def get(self) -> Services:
        with self._lock:
            if self._services is None:
                factory = self._factory
                if factory is None:
                    from agentturn.api.wiring import services_from_env

                    factory = services_from_env
                self._services = factory()
            return self._services
