"""Context parsing: JSON types from cdk.json, strings from `-c key=value`, and refusals at synth time."""

from __future__ import annotations

from typing import Any

import pytest
from infra.config import ConfigError, StackConfig


def config(**context: Any) -> StackConfig:
    return StackConfig.from_context(context.get)


def test_defaults() -> None:
    default = config()
    assert default == StackConfig()
    assert default.retain
    assert default.uses_cognito
    assert default.queue_visibility_timeout_seconds == 6 * default.worker_timeout_seconds


def test_command_line_strings_are_parsed() -> None:
    parsed = config(
        removalPolicy="DESTROY",
        logRetentionDays="7",
        tracing="false",
        jwtIssuer="https://issuer.example.com",
        jwtAudience="a, b",
        bedrockModelIds='["amazon.nova-lite-v1:0"]',
    )
    assert parsed.removal == "destroy"
    assert parsed.log_retention_days == 7
    assert parsed.tracing is False
    assert parsed.jwt_audience == ("a", "b")
    assert parsed.bedrock_model_ids == ("amazon.nova-lite-v1:0",)
    assert not parsed.uses_cognito


def test_json_types_from_cdk_json_are_accepted() -> None:
    parsed = config(logRetentionDays=14, tracing=True, jwtIssuer="https://i.example.com", jwtAudience=["x"])
    assert (parsed.log_retention_days, parsed.tracing, parsed.jwt_audience) == (14, True, ("x",))


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"removalPolicy": "snapshot"}, "removalPolicy"),
        ({"jwtIssuer": "https://issuer.example.com"}, "go together"),
        ({"jwtAudience": "client"}, "go together"),
        ({"jwtIssuer": "http://issuer.example.com", "jwtAudience": "c"}, "https://"),
        ({"logRetentionDays": "10"}, "logRetentionDays"),
        ({"logRetentionDays": True}, "integer"),
        ({"workerTimeoutSeconds": "20"}, "workerTimeoutSeconds"),
        ({"workerTimeoutSeconds": "7201"}, "workerTimeoutSeconds"),
        ({"workerBatchSize": "11"}, "workerBatchSize"),
        ({"workerMaxConcurrency": "1"}, "workerMaxConcurrency"),
        ({"lambdaArchitecture": "sparc"}, "lambdaArchitecture"),
        ({"lambdaPython": "3.9"}, "lambdaPython"),
        ({"agents": "not a spec"}, "agents"),
        ({"tracing": "maybe"}, "true or false"),
        ({"corsAllowedOrigins": "console.example.com"}, "origin"),
        ({"alarmEmail": "nobody"}, "alarmEmail"),
        ({"stackName": "1st"}, "stackName"),
    ],
)
def test_bad_context_is_refused_at_synth_time(context: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config(**context)
