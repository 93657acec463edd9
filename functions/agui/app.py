"""Lambda ``agui``: the AG-UI routes (``POST /ag-ui[/{agentId}]``, ``GET /ag-ui[/{agentId}]/capabilities``) streamed
behind a function URL in ``RESPONSE_STREAM`` mode.

The Lambda Web Adapter layer (``AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap``) starts ``run.sh``, which runs this module:
an HTTP server on ``AWS_LWA_PORT`` that LWA forwards every invocation to and streams the answer of
(:mod:`agentturn.api.web_adapter`). The bearer token is verified here as the HTTP API's JWT authorizer does.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics

from agentturn.api.http import HttpApi
from agentturn.api.lambdas import SERVICE, metrics_namespace
from agentturn.api.telemetry import PowertoolsTelemetry
from agentturn.api.web_adapter import GROUPS, WebAdapterApp, port_from_env, serve, verifier_from_env

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=metrics_namespace(), service=SERVICE)
api = HttpApi(GROUPS, telemetry=PowertoolsTelemetry(logger, metrics))


def finished() -> None:
    """After each request: its metrics out (EMF on stdout, as a handler's decorator would), its log keys gone."""
    metrics.flush_metrics()
    logger.clear_state()


def main() -> None:
    server = serve(WebAdapterApp(api, verifier_from_env()), port_from_env(), finished=finished)
    logger.info("AG-UI entry listening", extra={"port": server.server_address[1]})
    server.serve_forever()


if __name__ == "__main__":
    main()
