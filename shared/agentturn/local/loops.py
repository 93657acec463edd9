"""What AWS runs around the worker and the sweeper: the SQS event source mapping and the schedule.

:class:`WorkerLoop` long-polls the resume queue, hands each batch to the worker handler as the event
source mapping does (real-shaped records), then deletes exactly the messages the handler did not report
in ``batchItemFailures``; the failed ones become visible again after the visibility timeout and move to
the dead-letter queue after ``maxReceiveCount`` receives, as in AWS. A handler that raises fails the
whole batch (nothing is deleted). :class:`PeriodicTask` plays an EventBridge schedule.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from agentturn.listeners.trace import TracePoint, current
from agentturn.local.events import scheduled_event, sqs_event
from agentturn.local.log import LOGGER_NAME

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

_log = logging.getLogger(LOGGER_NAME)

#: Long-poll wait: short enough that a stop is noticed within it (stop joins are bounded by it).
POLL_WAIT_SECONDS: Final = 1
BATCH_SIZE: Final = 10


class WorkerLoop:
    def __init__(self, sqs: SQSClient, queue_url: str, queue_arn: str, invoke: Callable[[dict[str, Any]], Any]) -> None:
        self.sqs = sqs
        self.queue_url = queue_url
        self.queue_arn = queue_arn
        self.invoke = invoke
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-loop", daemon=True)
        #: Batches handed to the worker, and records deleted / left for redelivery (for tests and logs).
        self.batches = 0
        self.deleted = 0
        self.failed = 0

    def start(self) -> None:
        self._thread.start()

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self, timeout: float) -> bool:
        """Ask the loop to stop and wait at most ``timeout`` (a batch in progress finishes first)."""
        self._stop.set()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception:
                # The emulator going away at shutdown, or a transient error: log, back off, go on.
                if not self._stop.is_set():
                    _log.exception("worker loop: polling the resume queue failed")
                    self._stop.wait(1.0)

    def poll_once(self) -> int:
        """Receive one batch (long poll) and process it; returns how many messages it held."""
        received = self.sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=BATCH_SIZE,
            WaitTimeSeconds=POLL_WAIT_SECONDS,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages = received.get("Messages", [])
        if not messages:
            return 0
        trace = current()
        if trace is not None:
            trace.mark(TracePoint.QUEUE_RECEIVED, {"turns": [_turn_of(m.get("Body", "")) for m in messages]})
        self.batches += 1
        event = sqs_event(messages, self.queue_arn)
        try:
            response = self.invoke(event)
        except Exception:
            # Lambda failing the invocation: every message of the batch comes back after the timeout.
            _log.exception("worker handler raised; the batch of %d will be redelivered", len(messages))
            self.failed += len(messages)
            return len(messages)
        failures = {
            str(item.get("itemIdentifier"))
            for item in (response or {}).get("batchItemFailures", [])
            if isinstance(item, dict)
        }
        done = [m for m in messages if m["MessageId"] not in failures]
        self.failed += len(messages) - len(done)
        if failures:
            _log.warning("worker reported %d failed record(s); SQS will redeliver them", len(failures))
        for start in range(0, len(done), BATCH_SIZE):
            chunk = done[start : start + BATCH_SIZE]
            result = self.sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )
            self.deleted += len(result.get("Successful", []))
            for failed in result.get("Failed", []):
                _log.warning("could not delete a processed message (%s); it will be seen again", failed.get("Message"))
        return len(messages)


def _turn_of(body: str) -> str | None:
    """The turn a resume message names (for the trace only: the worker reads the message itself)."""
    try:
        named = json.loads(body).get("turnId")
    except (ValueError, AttributeError):
        return None
    return named if isinstance(named, str) else None


class PeriodicTask:
    """Calls ``action`` every ``interval`` seconds (first call after one interval) until stopped."""

    def __init__(self, name: str, interval: float, action: Callable[[], Any]) -> None:
        self.name = name
        self.interval = interval
        self.action = action
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self, timeout: float) -> bool:
        self._stop.set()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.action()
            except Exception:
                _log.exception("%s failed; trying again in %.0f s", self.name, self.interval)


def sweeper_action(
    invoke: Callable[[dict[str, Any]], Any], rule_name: str = "agentturn-dev-sweeper"
) -> Callable[[], None]:
    def tick() -> None:
        result = invoke(scheduled_event(rule_name))
        if isinstance(result, dict) and result.get("enqueued"):
            _log.info("sweeper re-enqueued %s runnable turn(s)", result["enqueued"])

    return tick
