"""The SQS worker: one resume message per record, partial batch failures reported.

Per record: parse the message (a payload that is not ours fails the record, so SQS retries it and then
moves it to the dead-letter queue) → :meth:`agentturn.Worker.process` (claim the lease, run until blocked,
terminal or out of time, release) → if the run stopped for time, enqueue the turn again. A duplicate
delivery, a turn that is not runnable any more, a lease another worker holds, or a turn that does not
exist is acknowledged: the message has nothing left to do. Anything else fails only that record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

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
from agentturn.worker import Worker, WorkOutcome, WorkResult

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
            receipt = message.version if message.projected else None
            result = worker.process(message.turn_id, should_yield=should_yield, projected_version=receipt)
        except Exception:
            # Logged here with the record's ids, then re-raised for the batch processor to report only
            # this record: SQS redelivers it (the run released its lease; what it saved before stays).
            _log.exception("turn %r failed in the worker; the record will be retried", message.turn_id)
            raise
        self._observe(result, message.version, picked_up)
        if result.needs_more_work and result.turn is not None:
            self.services.queue.enqueue(result.turn.id, result.turn.version)
            _log.info("turn %r still runnable after the time budget; re-enqueued", result.turn.id)
        return result.outcome.value

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
