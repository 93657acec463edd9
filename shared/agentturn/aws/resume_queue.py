"""SqsResumeQueue: the ResumeQueue port on SQS, and the parser the worker Lambda applies to each record.

The message body is ``ResumeMessage.to_wire()`` as compact JSON: ``{"turnId": "...", "version": 3}``, plus
``"snapshot"`` (the packed snapshot,
:mod:`agentturn.engine.handoff`) when the sender has it.
SQS delivers at least once; the worker makes duplicates harmless (a claim on a turn that is no longer
runnable, or leased, is a no-op; a copy of a message carrying the snapshot has its save refused by the version
condition), so nothing here tries to deduplicate beyond what a FIFO queue offers.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from pydantic import ValidationError

from agentturn.aws._support import sqs_client
from agentturn.aws.translate import translates_errors
from agentturn.engine.handoff import MAX_SNAPSHOT_CHARS
from agentturn.errors import AgentTurnError
from agentturn.ports.queue import ResumeMessage

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

#: A resume message is ~100 bytes plus the snapshot it may carry; anything larger is not ours.
MAX_BODY_BYTES: Final = MAX_SNAPSHOT_CHARS + 4096


class InvalidResumeMessageError(AgentTurnError, ValueError):
    """A queue message that is not a valid resume message. The worker should drop it (it will never parse)."""

    def __init__(self, reason: str, body: str | bytes, errors: list[dict[str, Any]] | None = None) -> None:
        preview = body[:200] if isinstance(body, str) else body[:200].decode("utf-8", "replace")
        super().__init__(f"invalid resume message ({reason}): {preview!r}")
        self.reason = reason
        self.body = body
        self.errors = errors or []


def parse_resume_message(body: str | bytes) -> ResumeMessage:
    """The ResumeMessage in an SQS body; :class:`InvalidResumeMessageError` for anything else.

    Strict: ``turnId`` must be a non-empty string, ``version`` a non-negative integer (not ``"3"``, not
    ``3.5``), and no other keys are allowed.
    """
    size = len(body.encode() if isinstance(body, str) else body)
    if size > MAX_BODY_BYTES:
        raise InvalidResumeMessageError(f"{size} bytes, more than {MAX_BODY_BYTES}", body)
    try:
        decoded = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidResumeMessageError(f"not JSON: {exc}", body) from None
    if not isinstance(decoded, dict):
        raise InvalidResumeMessageError(f"a JSON {type(decoded).__name__}, not an object", body)
    try:
        # strict: no coercion of "3" to 3 or of 3.0 to 3; a producer sending those has a bug worth seeing.
        return ResumeMessage.model_validate(decoded, strict=True)
    except ValidationError as exc:
        errors = [
            {"path": ".".join(str(p) for p in error["loc"]), "message": error["msg"]}
            for error in exc.errors(include_url=False)
        ]
        summary = "; ".join(f"{e['path'] or '$'}: {e['message']}" for e in errors)
        raise InvalidResumeMessageError(summary, body, errors) from None


@translates_errors
class SqsResumeQueue:
    """Hands runnable turns to workers through an SQS queue.

    On a FIFO queue (URL ending ``.fifo``) messages are grouped by turn (one worker at a time per turn)
    and deduplicated by ``turnId:version`` within SQS's five-minute window.
    """

    carries_snapshots = True

    def __init__(self, queue_url: str, client: SQSClient | None = None, *, delay_seconds: int = 0) -> None:
        if not queue_url:
            raise ValueError("queue_url must be non-empty")
        if not 0 <= delay_seconds <= 900:
            raise ValueError(f"delay_seconds must be within 0..900 (an SQS limit), not {delay_seconds!r}")
        self.queue_url = queue_url
        self.client: SQSClient = client if client is not None else sqs_client()
        self.delay_seconds = delay_seconds
        self.fifo = queue_url.endswith(".fifo")

    def enqueue(
        self,
        turn_id: str,
        version: int,
        *,
        delay_seconds: int = 0,
        snapshot: str | None = None,
        seal: str | None = None,
    ) -> None:
        message = ResumeMessage(turn_id=turn_id, version=version, snapshot=snapshot, seal=seal)
        # Defaults left out: a message without a snapshot is the plain {"turnId", "version"}.
        body = message.model_dump_json(by_alias=True, exclude_defaults=True)
        kwargs: dict[str, Any] = {}
        delay = min(900, max(self.delay_seconds, delay_seconds))
        if self.fifo:
            kwargs["MessageGroupId"] = turn_id
            kwargs["MessageDeduplicationId"] = f"{turn_id}:{version}"
        elif delay:
            # FIFO queues refuse per-message delays (there a turn in backoff is left to the sweeper, as the
            # worker acknowledges a message that comes early); standard queues honour them.
            kwargs["DelaySeconds"] = delay
        self.client.send_message(QueueUrl=self.queue_url, MessageBody=body, **kwargs)
