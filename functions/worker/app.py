"""Lambda ``worker``: SQS batches of resume messages, with partial batch failures (``ReportBatchItemFailures``)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from agentturn.api.lambdas import SERVICE, LazyServices, capture_lambda_handler, metrics_namespace
from agentturn.api.telemetry import PowertoolsTelemetry

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=metrics_namespace(), service=SERVICE)
telemetry = PowertoolsTelemetry(logger, metrics)
services = LazyServices()


@logger.inject_lambda_context(clear_state=True)
@capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Imported by the first batch, with the services it needs: the runtime (its pydantic models, the Runner) and
    # boto3 load once per container either way, and importing the module stays as cheap as its Logger and Metrics.
    from agentturn.api.worker import SqsWorker

    return SqsWorker(services.get(), telemetry).handle(event, context)
