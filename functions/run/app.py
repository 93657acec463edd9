"""Lambda ``run``: start a turn (``POST /conversations/{conversationId}/turns``), AG-UI runs (``POST /ag-ui``),
and the read routes (``GET /turns/{turnId}``, ``GET /conversations/{conversationId}/messages``,
``GET /openapi.json``)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from agentturn.api.http import HttpApi, StreamedAnswer
from agentturn.api.lambdas import SERVICE, capture_lambda_handler, metrics_namespace
from agentturn.api.routes import RUN_LAMBDA_GROUPS
from agentturn.api.telemetry import PowertoolsTelemetry

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=metrics_namespace(), service=SERVICE)
api = HttpApi(RUN_LAMBDA_GROUPS, telemetry=PowertoolsTelemetry(logger, metrics))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@capture_lambda_handler(capture_response=False)  # responses hold people's form data
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return api.handle(event, context)


def stream_handler(event: dict[str, Any], context: LambdaContext) -> StreamedAnswer:
    """The same API for an integration that streams (``agentturn dev``'s gateway): AG-UI runs arrive as they
    happen instead of whole at their end."""
    return api.stream(event, context)
