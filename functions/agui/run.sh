#!/bin/sh
# Started by the Lambda Web Adapter's /opt/bootstrap (AWS_LAMBDA_EXEC_WRAPPER) as the function's "handler": the
# AG-UI entry's HTTP server, with the bundle (this folder) first on the module path.
cd "${LAMBDA_TASK_ROOT:-$(dirname "$0")}" || exit 1
exec python3 -m app
