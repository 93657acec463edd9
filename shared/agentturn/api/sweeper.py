"""The sweeper: re-enqueue runnable turns nobody is working on, finish unfinished cancels of blocked turns
(and, when enabled, expire overdue waits).

Re-enqueueing covers a crash between "snapshot saved" and "message sent", a message lost after its retries, and a
worker that died holding a lease (once the lease has expired). Duplicates this creates are harmless: the
worker acknowledges a message for a turn that is already moving.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from agentturn.api.services import Services
from agentturn.api.telemetry import Telemetry, metrics_listener
from agentturn.errors import StorageError

_log = logging.getLogger("agentturn.api.sweeper")


@dataclass(frozen=True)
class SweepResult:
    found: int
    enqueued: int
    failed: int
    expired: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"found": self.found, "enqueued": self.enqueued, "failed": self.failed, "expired": self.expired}


def _enqueue_all(services: Services, turns: list[tuple[str, int]]) -> tuple[int, int]:
    enqueued = failed = 0
    for turn_id, version in turns:
        try:
            services.queue.enqueue(turn_id, version)
        except StorageError:
            # One failed send must not strand the rest; this turn is found again by the next sweep.
            failed += 1
            _log.exception("could not enqueue turn %r", turn_id)
            continue
        enqueued += 1
        _log.info("enqueued turn %r at version %d", turn_id, version)
    return enqueued, failed


def sweep(services: Services, telemetry: Telemetry) -> SweepResult:
    settings = services.settings
    runnable = services.store.find_runnable(idle_seconds=settings.sweep_idle_seconds, limit=settings.sweep_limit)
    enqueued, failed = _enqueue_all(services, [(t.turn_id, t.version) for t in runnable])
    if len(runnable) >= settings.sweep_limit:
        _log.warning("sweep hit its limit of %d turns: more may be waiting for the next sweep", settings.sweep_limit)
    # Due blocked turns: a cancel whose process died before it finished is finished (always: a person asked
    # for it, and the turn holds its conversation); an expired wait is answered "expired" and saved runnable
    # (when enabled), and handed to a worker now.
    runner = services.runner(listeners=[metrics_listener(telemetry)], worker_id="sweeper")
    now_runnable = runner.expire_overdue(limit=settings.sweep_limit, expire_waits=settings.expire_overdue)
    expired = len(now_runnable)
    more, more_failed = _enqueue_all(services, [(t.id, t.version) for t in now_runnable])
    enqueued, failed = enqueued + more, failed + more_failed
    if settings.expire_overdue:
        telemetry.count("WaitsExpired", expired)
    telemetry.count("SweptTurns", len(runnable))
    if failed:
        telemetry.count("SweepEnqueueFailures", failed)
    return SweepResult(found=len(runnable), enqueued=enqueued, failed=failed, expired=expired)
