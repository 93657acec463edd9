"""Lambda ``retention`` (the turns table's stream, TTL removals only): a removed turn's timeline and S3
objects leave with it. Partial batch failures (``ReportBatchItemFailures``) retry only what failed."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from agentturn.api.lambdas import SERVICE, metrics_namespace
from agentturn.aws.retention import RetentionCleaner, cleaner_from_env, handle_stream_event

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=metrics_namespace(), service=SERVICE)
_cleaner: list[RetentionCleaner] = []


def cleaner() -> RetentionCleaner:
    """Built on the first invocation (from the environment), reused by the next ones."""
    if not _cleaner:
        _cleaner.append(cleaner_from_env())
    return _cleaner[0]


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_stream_event(event, context, cleaner())
