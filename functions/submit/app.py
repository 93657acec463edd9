"""Lambda ``submit``: answers to waiting turns — ``POST /turns/{turnId}/actions/{actionId}/submit``,
``/approve``, ``/reject`` — and ``POST /turns/{turnId}/cancel``; each idempotent on ``Idempotency-Key``."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from agentturn.api.http import HttpApi
from agentturn.api.lambdas import SERVICE, capture_lambda_handler, metrics_namespace
from agentturn.api.routes import SUBMIT_LAMBDA_GROUPS
from agentturn.api.telemetry import PowertoolsTelemetry

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=metrics_namespace(), service=SERVICE)
api = HttpApi(SUBMIT_LAMBDA_GROUPS, telemetry=PowertoolsTelemetry(logger, metrics))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return api.handle(event, context)
