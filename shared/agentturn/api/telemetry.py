"""Metrics and log correlation behind one small interface, so the handlers' logic does not import Powertools.

The Lambda modules pass :class:`PowertoolsTelemetry` (EMF metrics, structured logs); tests and the local
server may pass :class:`NullTelemetry` or their own recorder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Protocol

from agentturn.engine.events import Event, EventType

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger, Metrics

#: What the runtime's lifecycle events count as (INPUT_SUBMITTED fires for every accepted answer; the worker
#: counts TurnsResumed itself, when it advances a turn).
EVENT_METRICS: Final = {
    EventType.TURN_STARTED: "TurnsStarted",
    EventType.TURN_SUSPENDED: "TurnsSuspended",
    EventType.INPUT_SUBMITTED: "TurnsSubmitted",
    EventType.TURN_COMPLETED: "TurnsCompleted",
    EventType.TURN_FAILED: "TurnsFailed",
    EventType.TURN_CANCELLED: "TurnsCancelled",
    EventType.MODEL_FAILED: "ModelCallsFailed",
    EventType.RETRY_SCHEDULED: "TurnRetriesScheduled",
}
#: Failed turns counted once more by why they failed: the ones an operator must look at (alarmed on).
FAILURE_METRICS: Final = {
    "agent_unavailable": "TurnsUnrunnable",
    "cannot_run": "TurnsUnrunnable",
    "snapshot_unreadable": "TurnsUnrunnable",
    "model_retries_exhausted": "ModelRetriesExhausted",
    "model_error": "ModelErrorsFatal",
}


class Telemetry(Protocol):
    def count(self, name: str, value: float = 1) -> None: ...

    def milliseconds(self, name: str, value: float) -> None: ...

    def bind(self, **keys: str) -> None:
        """Add keys to every following log line of this invocation (turnId, conversationId, ...)."""
        ...

    def unbind(self, *keys: str) -> None: ...


class NullTelemetry:
    def count(self, name: str, value: float = 1) -> None:
        return None

    def milliseconds(self, name: str, value: float) -> None:
        return None

    def bind(self, **keys: str) -> None:
        return None

    def unbind(self, *keys: str) -> None:
        return None


class PowertoolsTelemetry:
    def __init__(self, logger: Logger, metrics: Metrics) -> None:
        self.logger = logger
        self.metrics = metrics

    def count(self, name: str, value: float = 1) -> None:
        from aws_lambda_powertools.metrics import MetricUnit

        self.metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)

    def milliseconds(self, name: str, value: float) -> None:
        from aws_lambda_powertools.metrics import MetricUnit

        self.metrics.add_metric(name=name, unit=MetricUnit.Milliseconds, value=value)

    def bind(self, **keys: str) -> None:
        self.logger.append_keys(**keys)

    def unbind(self, *keys: str) -> None:
        self.logger.remove_keys(list(keys))


def metrics_listener(telemetry: Telemetry) -> Callable[[Event], None]:
    """A Runner listener counting lifecycle events (a listener that raises never breaks a turn)."""

    def listen(event: Event) -> None:
        name = EVENT_METRICS.get(event.type)
        if name is not None:
            telemetry.count(name)
        if event.type is EventType.TURN_FAILED:
            reason = FAILURE_METRICS.get(str(event.data.get("error")))
            if reason is not None:
                telemetry.count(reason)

    return listen
