"""Lambda ``worker``: SQS batches of resume messages, with partial batch failures (``ReportBatchItemFailures``)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from agentturn.api.lambdas import SERVICE, LazyServices, metrics_namespace
from agentturn.api.telemetry import PowertoolsTelemetry
from agentturn.api.worker import SqsWorker

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=metrics_namespace(), service=SERVICE)
telemetry = PowertoolsTelemetry(logger, metrics)
services = LazyServices()


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return SqsWorker(services.get(), telemetry).handle(event, context)
