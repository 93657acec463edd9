"""agentturn on AWS as one CDK construct (``pip install 'agentturn[cdk]'``).

>>> from agentturn.cdk import AgentTurn                                        # doctest: +SKIP
>>> AgentTurn(stack, "AgentTurn", agents="support_desk.agents:build", code=["support_desk"])  # doctest: +SKIP
"""

from __future__ import annotations

from agentturn.cdk.construct import TOOL_FUNCTIONS, AgentTurn
from agentturn.cdk.settings import (
    AgUiStreamingProps,
    ApiProps,
    BucketProps,
    CognitoAuth,
    ConfigError,
    FunctionProps,
    OidcAuth,
    QueueProps,
    TableProps,
)

__all__ = [
    "TOOL_FUNCTIONS",
    "AgUiStreamingProps",
    "AgentTurn",
    "ApiProps",
    "BucketProps",
    "CognitoAuth",
    "ConfigError",
    "FunctionProps",
    "OidcAuth",
    "QueueProps",
    "TableProps",
]
