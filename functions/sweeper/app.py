"""Lambda ``sweeper`` (EventBridge schedule): re-enqueue runnable turns that nobody is working on."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from agentturn.api.lambdas import SERVICE, LazyServices, capture_lambda_handler, metrics_namespace
from agentturn.api.sweeper import sweep
from agentturn.api.telemetry import PowertoolsTelemetry

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=metrics_namespace(), service=SERVICE)
telemetry = PowertoolsTelemetry(logger, metrics)
services = LazyServices()


@logger.inject_lambda_context(clear_state=True)
@capture_lambda_handler()
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    return sweep(services.get(), telemetry).to_dict()
