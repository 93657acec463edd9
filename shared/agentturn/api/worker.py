"""The SQS worker: one resume message per record, partial batch failures reported.

Per record: parse the message (a payload that is not ours fails the record, so SQS retries it and then
moves it to the dead-letter queue) → :meth:`agentturn.Worker.process` (claim the lease, run until blocked,
terminal or out of time, release) → if the run stopped with the turn still runnable (out of time, or a
failed attempt to retry after a backoff), enqueue the turn again with the backoff as the message's delay.
A duplicate delivery, a turn that is not runnable any more or not due yet, a lease another worker holds,
or a turn that does not exist is acknowledged: the message has nothing left to do. A transient AWS error
(throttling, 5xx, a lost connection) fails only that record, for SQS to retry; any other error is counted
as a failed attempt in the turn's snapshot (``Runner.record_failure``), so a turn that cannot run ends
FAILED after a bounded number of attempts instead of cycling between the queue and the sweeper. A snapshot
that cannot even be read is counted the same way, on the stored item (``Runner.record_unreadable``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

# Before anything that imports pydantic, on purpose: Powertools' batch types import its parser's pydantic models
# (≈ 0.1-0.2 s of a cold start, never used here) only when pydantic is already loaded.
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)

from agentturn.api.ownership import public_conversation_id
from agentturn.api.services import Services
from agentturn.api.telemetry import Telemetry, metrics_listener
from agentturn.aws.resume_queue import InvalidResumeMessageError, parse_resume_message
from agentturn.engine.handoff import serializer_of, unpack_snapshot
from agentturn.engine.retry import MAX_QUEUE_DELAY_SECONDS, handoff_delay
from agentturn.engine.worker import Worker, WorkOutcome, WorkResult
from agentturn.errors import SnapshotUnreadableError, StorageError
from agentturn.ports.queue import ResumeMessage
from agentturn.state.turn import Turn

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

_log = logging.getLogger("agentturn.api.worker")

#: Without a Lambda context (a local loop), the run never stops for time.
_NO_DEADLINE: Final = 1 << 62


def _remaining_ms(context: Any) -> int:
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    return int(remaining()) if callable(remaining) else _NO_DEADLINE


def _epoch(iso_text: str) -> float | None:
    try:
        return datetime.fromisoformat(iso_text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _receive_count(record: SQSRecord) -> int:
    """How often SQS has handed this message out, this time included (1 when it does not say)."""
    try:
        return int(record.attributes.approximate_receive_count)
    except (KeyError, TypeError, ValueError):
        return 1


def _processor(event: Mapping[str, Any]) -> BatchProcessor:
    records = event.get("Records") or []
    source = str(records[0].get("eventSourceARN", "")) if records and isinstance(records[0], Mapping) else ""
    if source.endswith(".fifo"):
        # A FIFO queue groups messages by turn: a failed record must hold back the rest of its group (its
        # turn) and nothing else.
        return SqsFifoPartialProcessor(skip_group_on_error=True)
    # Not raising when every record failed: the response lists them all, which retries exactly the same
    # records; the RecordsFailed metric (not the Lambda's Errors) is what alarms.
    return BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


class SqsWorker:
    def __init__(self, services: Services, telemetry: Telemetry) -> None:
        self.services = services
        self.telemetry = telemetry

    def handle(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        processor = _processor(event)
        request_id = str(getattr(context, "aws_request_id", "") or "local")
        runner = self.services.runner(listeners=[metrics_listener(self.telemetry)], worker_id=f"worker-{request_id}")
        worker = Worker(runner)
        margin = self.services.settings.yield_margin_ms

        def should_yield() -> bool:
            return _remaining_ms(context) < margin

        def record_handler(record: SQSRecord) -> str:
            return self._process(record, worker, should_yield)

        response = process_partial_response(
            event=dict(event), record_handler=record_handler, processor=processor, context=context
        )
        failures = len(response.get("batchItemFailures", []))
        if failures:
            self.telemetry.count("RecordsFailed", failures)
        return dict(response)

    def _process(self, record: SQSRecord, worker: Worker, should_yield: Callable[[], bool]) -> str:
        # Keys of the previous record of the batch must not label this one's log lines.
        self.telemetry.unbind("turnId", "conversationId")
        self.telemetry.bind(messageId=record.message_id)
        try:
            message = parse_resume_message(record.body)
        except InvalidResumeMessageError as exc:
            # Never parses: fail it so that it reaches the dead-letter queue after the retries.
            _log.error("record %r is not a resume message (%s); failing it", record.message_id, exc.reason)
            raise
        self.telemetry.bind(turnId=message.turn_id)
        picked_up = self.services.clock()
        try:
            snapshot = self._carried(message, record)
            result = worker.process(message.turn_id, should_yield=should_yield, snapshot=snapshot)
        except SnapshotUnreadableError as exc:
            return self._count_unreadable(worker, exc)
        except StorageError as exc:
            # Retryable: a lost connection, a timeout, throttling or a 5xx; nothing about the turn itself is
            # wrong, so the record is retried by SQS as it is.
            if not exc.retryable:
                return self._count_failure(worker, message.turn_id, exc)
            # Logged here with the record's ids, then re-raised for the batch processor to report only
            # this record: SQS redelivers it (the run released its lease; what it saved before stays).
            _log.exception("turn %r failed in the worker; the record will be retried", message.turn_id)
            raise
        except Exception as exc:
            return self._count_failure(worker, message.turn_id, exc)
        self._observe(result, message.version, picked_up)
        if result.needs_more_work and result.turn is not None:
            self._hand_on(result.turn)
        return result.outcome.value

    def _carried(self, message: ResumeMessage, record: SQSRecord) -> Turn | None:
        """The snapshot the message carries, if it has one that decodes and this is its first delivery (else the
        worker claims and reads the turn).

        A message received before was given to a worker that failed or ran out of time with it: the turn has
        likely moved on since its snapshot, and a claim finds that out for one conditional write, where a run
        from the stale snapshot would call the model before its save is refused.
        """
        if message.snapshot is None or _receive_count(record) > 1:
            return None
        return unpack_snapshot(
            message.snapshot,
            message.seal,
            message.turn_id,
            message.version,
            serializer_of(self.services.store),
            self.services.handoff_key(),
        )

    def _hand_on(self, turn: Turn) -> None:
        delay = handoff_delay(turn, self.services.clock())
        self.services.queue.enqueue(turn.id, turn.version, delay_seconds=delay)
        _log.info("turn %r still runnable; re-enqueued (delay %d s)", turn.id, delay)

    def _count_failure(self, worker: Worker, turn_id: str, exc: Exception) -> str:
        """A run that raised what no retry of the record would cure by itself (a bug, a snapshot too large to
        save, ...): counted as a failed attempt in the snapshot, so the turn is tried a bounded number of
        times and then ends FAILED (``cannot_run``) instead of being redelivered and re-swept forever.

        If even that cannot be written, the record fails as before (SQS retries it, then the DLQ has it).
        """
        _log.exception("turn %r failed in the worker; counting the attempt", turn_id)
        self.telemetry.count("RunErrors")
        turn = worker.runner.record_failure(turn_id, exc)
        if turn.status.is_runnable:
            self._hand_on(turn)
        return "FAILED_ATTEMPT"

    def _count_unreadable(self, worker: Worker, error: SnapshotUnreadableError) -> str:
        """A turn whose snapshot cannot be read: one attempt counted on its item; handed on with the backoff,
        or, after the last attempt, ended FAILED (``snapshot_unreadable``) and never swept again. If even the
        count cannot be written (a transient error), the record fails for SQS to retry."""
        self.telemetry.count("RunErrors")
        attempt = worker.runner.record_unreadable(error)
        if attempt.counted and not attempt.failed:
            delay = min(MAX_QUEUE_DELAY_SECONDS, math.ceil(attempt.retry_in))
            self.services.queue.enqueue(error.turn_id, error.version, delay_seconds=delay)
        return "UNREADABLE"

    def _observe(self, result: WorkResult, message_version: int, picked_up: float) -> None:
        turn = result.turn
        if turn is not None:
            self.telemetry.bind(conversationId=public_conversation_id(turn))
        _log.info(
            "turn %r: %s (status %s)",
            turn.id if turn else None,
            result.outcome.value,
            turn.status.value if turn else None,
        )
        if result.outcome is not WorkOutcome.ADVANCED or turn is None:
            return
        self.telemetry.count("TurnsResumed")
        # Submit-to-pickup latency: the submission's acceptance time is stored with the version it produced.
        accepted = next((a for a in turn.accepted_requests.values() if a.version == message_version), None)
        accepted_at = _epoch(accepted.accepted_at) if accepted is not None else None
        if accepted_at is not None:
            self.telemetry.milliseconds("ResumeLatency", max(0.0, (picked_up - accepted_at) * 1000))
