"""Lambda ``retention`` (the turns table's stream, TTL removals only): a removed turn's timeline and S3
objects leave with it. Partial batch failures (``ReportBatchItemFailures``) retry only what failed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from agentturn.api.lambdas import SERVICE, capture_lambda_handler, metrics_namespace

if TYPE_CHECKING:
    from agentturn.aws.retention import RetentionCleaner

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=metrics_namespace(), service=SERVICE)
_cleaner: list[RetentionCleaner] = []


def cleaner() -> RetentionCleaner:
    """Built on the first invocation (from the environment), reused by the next ones."""
    if not _cleaner:
        from agentturn.aws.retention import cleaner_from_env

        _cleaner.append(cleaner_from_env())
    return _cleaner[0]


@logger.inject_lambda_context(clear_state=True)
@capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Imported by the first batch, as the cleaner's boto3 clients are created then.
    from agentturn.aws.retention import handle_stream_event

    return handle_stream_event(event, context, cleaner())
