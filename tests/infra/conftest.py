"""One synthesis of the default stack per test session (and one of a non-default variant), bundling skipped.

jsii starts a Node process on the first synthesis (~3-4 s); every test reads the same template.
"""

from __future__ import annotations

from typing import Any, Final

import pytest

from tests.infra.synth import Synth, synthesise

#: Every non-default knob at once: an external identity provider, a dev (destroy) stack on arm64 with
#: Bedrock models, TTLs, CORS, an alarm e-mail and a sweeper that does not expire overdue waits.
VARIANT_CONTEXT: Final[dict[str, Any]] = {
    "stackName": "AgentTurnDev",
    "removalPolicy": "destroy",
    "jwtIssuer": "https://issuer.example.com/realms/agentturn",
    "jwtAudience": "agentturn-api,agentturn-console",
    "lambdaArchitecture": "arm64",
    "bedrockModelId": "us.anthropic.claude-sonnet-4-20250514-v1:0",
    "bedrockModelIds": "amazon.nova-lite-v1:0",
    "logRetentionDays": "90",
    "workerTimeoutSeconds": "120",
    "workerBatchSize": "4",
    "workerBatchWindowSeconds": "2",
    "terminalTtlDays": "30",
    "snapshotObjectExpirationDays": "400",
    "corsAllowedOrigins": "https://console.example.com",
    "alarmEmail": "oncall@example.com",
    "tracing": "false",
    "expireOverdueWaits": "false",
}


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesise(tmp_path_factory.mktemp("cdk-default"))


@pytest.fixture(scope="session")
def variant(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesise(tmp_path_factory.mktemp("cdk-variant"), VARIANT_CONTEXT)
