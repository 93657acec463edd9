"""The environment a handler module sees in a fresh Lambda process, for the tests and benchmarks that start one
(import time is cold-start time, so what is measured or asserted there depends on these variables)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from agentturn.api.lambdas import DEPLOYED_ENVIRONMENT

ROOT: Final = Path(__file__).resolve().parents[2]
#: Settings of the calling shell that would change what a handler does at import (Powertools', or those a
#: Lambda, SAM or Chalice runtime sets): none of them reaches the fresh interpreter.
_NOT_INHERITED: Final = ("POWERTOOLS_", "AWS_LAMBDA_", "LAMBDA_", "AWS_SAM_", "AWS_CHALICE_")


def lambda_env(*, tracing: bool, function_name: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """What the Lambda runtime sets (tracing is then on unless switched off), what the construct sets in every
    function (:data:`~agentturn.api.lambdas.DEPLOYED_ENVIRONMENT`), the repository on the path, and ``extra``
    last."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(_NOT_INHERITED)}
    env.update(
        PYTHONPATH=os.pathsep.join((str(ROOT / "shared"), str(ROOT))),
        LAMBDA_TASK_ROOT=str(ROOT),
        AWS_LAMBDA_FUNCTION_NAME=function_name,
        AWS_REGION="us-east-1",
        POWERTOOLS_SERVICE_NAME="agentturn",
    )
    env.update(DEPLOYED_ENVIRONMENT)
    if not tracing:
        env["POWERTOOLS_TRACE_DISABLED"] = "true"
    env.update(extra or {})
    return env
