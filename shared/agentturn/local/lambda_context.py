"""A Lambda context object for local invocations: what Powertools and the handlers read from it."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from agentturn.local.events import ACCOUNT_ID, REGION


@dataclass
class LocalLambdaContext:
    """One invocation's context. ``get_remaining_time_in_millis`` counts down from ``timeout_ms`` for real,
    so a handler that watches its deadline (the run Lambda handing a long turn to the worker) behaves
    locally as it does in Lambda."""

    function_name: str
    timeout_ms: int
    memory_limit_in_mb: int = 1024
    function_version: str = "$LATEST"
    region: str = REGION
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _started: float = field(default_factory=time.monotonic, repr=False)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{ACCOUNT_ID}:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return f"{time.strftime('%Y/%m/%d')}/[$LATEST]{self.aws_request_id.replace('-', '')}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self.timeout_ms - int((time.monotonic() - self._started) * 1000))
