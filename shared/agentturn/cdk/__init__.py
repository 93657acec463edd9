"""agentturn on AWS as one CDK construct (``pip install 'agentturn[cdk]'``).

>>> from agentturn.cdk import AgentTurn                                        # doctest: +SKIP
>>> AgentTurn(stack, "AgentTurn", agents="support_desk.agents:build", code=["support_desk"])  # doctest: +SKIP
"""

from __future__ import annotations

# First: it must run before aws_cdk (loaded by the modules below) starts jsii.
from agentturn.cdk._node_warnings import NODE_WARNINGS_SILENCED
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
from agentturn.listeners.notifications import TurnNotices

__all__ = [
    "NODE_WARNINGS_SILENCED",
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
    "TurnNotices",
]
