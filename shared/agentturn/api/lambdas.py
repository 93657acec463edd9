"""What the Lambda modules share: Powertools objects named once, the tracer when tracing is on, and lazily
built services.

Each ``functions/<name>/app.py`` creates its Logger and Metrics at module level (so that they are reused
across invocations) and decorates its handler with :func:`capture_lambda_handler`; everything else is built on
first use. Import time is cold-start time: nothing here imports more than the standard library.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:
    from agentturn.api.services import Services

SERVICE: Final = "agentturn"

#: Set in every deployed function's environment (the construct) and wherever a handler is measured as deployed
#: (``bench``): pydantic's plugin loader otherwise reads every installed distribution's entry points when the
#: first model is built; no plugin ships in an asset, so the scan finds nothing at a cold start's expense.
#: ``function_props`` may set it to ``""`` for a team that bundles a pydantic plugin (logfire, for one).
DEPLOYED_ENVIRONMENT: Final[Mapping[str, str]] = {"PYDANTIC_DISABLE_PLUGINS": "__all__"}

Handler = TypeVar("Handler", bound=Callable[..., Any])

_TRUTHY: Final = frozenset({"1", "true", "yes", "on", "y", "t"})

# A read request records no metric; Powertools would warn about that on every one of them.
warnings.filterwarnings("ignore", message="No application metrics to publish", category=UserWarning)


def metrics_namespace() -> str:
    return os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "agentturn"


def tracing_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Powertools' own rule: off when ``POWERTOOLS_TRACE_DISABLED`` is truthy, and off outside Lambda
    (no ``LAMBDA_TASK_ROOT``) or under SAM / Chalice local, where no X-Ray daemon listens."""
    env = os.environ if environ is None else environ
    if env.get("POWERTOOLS_TRACE_DISABLED", "false").strip().lower() in _TRUTHY:
        return False
    if env.get("AWS_SAM_LOCAL") or env.get("AWS_CHALICE_CLI_MODE"):
        return False
    return bool(env.get("LAMBDA_TASK_ROOT"))


def capture_lambda_handler(*, capture_response: bool = True) -> Callable[[Handler], Handler]:
    """Powertools' ``Tracer.capture_lambda_handler`` when tracing is on, the handler unchanged when it is off.

    Powertools imports the X-Ray SDK (≈ 0.2 s, a third of a handler's cold import) as soon as a ``Tracer``
    exists, even a disabled one, so the Tracer is only created when it will record something.
    """
    if not tracing_enabled():
        return _unchanged
    from aws_lambda_powertools import Tracer

    return Tracer(service=SERVICE).capture_lambda_handler(capture_response=capture_response)


def _unchanged(handler: Handler) -> Handler:
    return handler


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
