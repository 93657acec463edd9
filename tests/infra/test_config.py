"""Context parsing: JSON types from cdk.json, strings from `-c key=value`, and refusals at synth time.

The app turns context into the construct's keyword arguments (infra/config.py); the construct checks every
value (agentturn.cdk.settings). Both kinds of refusal are a ConfigError before anything is synthesised.
"""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import RemovalPolicy
from infra.app import BUNDLING_STACKS, build, new_app
from infra.config import ConfigError, StackConfig

from agentturn.cdk import ApiProps, BucketProps, CognitoAuth, OidcAuth


def config(**context: Any) -> StackConfig:
    return StackConfig.from_context(context.get)


def test_no_context_leaves_every_default_to_the_construct() -> None:
    # GIVEN no context WHEN it is read THEN the construct gets no arguments (its defaults are the only ones)
    assert config() == StackConfig(stack_name="AgentTurn", props={})


def test_command_line_strings_are_parsed() -> None:
    parsed = config(
        removalPolicy="DESTROY",
        logRetentionDays="7",
        tracing="false",
        sdkTracing="true",
        jwtIssuer="https://issuer.example.com",
        jwtAudience="a, b",
        bedrockModelIds='["amazon.nova-lite-v1:0"]',
        apiThrottleRate="5",
    )
    assert parsed.props["removal_policy"] == RemovalPolicy.DESTROY
    assert parsed.props["log_retention_days"] == 7
    assert parsed.props["tracing"] is False
    assert parsed.props["sdk_tracing"] is True
    assert parsed.props["auth"] == OidcAuth("https://issuer.example.com", ("a", "b"))
    assert parsed.props["bedrock_model_ids"] == ("amazon.nova-lite-v1:0",)
    assert parsed.props["api_props"] == ApiProps(throttle_rate=5)


def test_mfa_and_access_logs_are_context_keys_too() -> None:
    parsed = config(requireMfa="true", snapshotAccessLogs="false", snapshotObjectExpirationDays="400")
    assert parsed.props["auth"] == CognitoAuth(require_mfa=True)
    assert parsed.props["bucket_props"] == BucketProps(snapshot_object_expiration_days=400, server_access_logs=False)
    with pytest.raises(ConfigError, match="requireMfa"):
        config(requireMfa=True, jwtIssuer="https://issuer.example.com", jwtAudience="a")


def test_json_types_from_cdk_json_are_accepted() -> None:
    parsed = config(logRetentionDays=14, tracing=True, jwtIssuer="https://i.example.com", jwtAudience=["x"])
    assert (parsed.props["log_retention_days"], parsed.props["tracing"]) == (14, True)
    assert parsed.props["auth"].audience == ("x",)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"removalPolicy": "snapshot"}, "removalPolicy"),
        ({"jwtIssuer": "https://issuer.example.com"}, "go together"),
        ({"jwtAudience": "client"}, "go together"),
        ({"logRetentionDays": True}, "integer"),
        ({"tracing": "maybe"}, "true or false"),
        ({"stackName": "1st"}, "stackName"),
    ],
)
def test_malformed_context_is_refused_when_read(context: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config(**context)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"jwtIssuer": "http://issuer.example.com", "jwtAudience": "c"}, "https://"),
        ({"logRetentionDays": "10"}, "log_retention_days"),
        ({"workerTimeoutSeconds": "20"}, "worker timeout"),
        ({"workerTimeoutSeconds": "7201"}, "worker timeout"),
        ({"workerBatchSize": "11"}, "worker_batch_size"),
        ({"workerMaxConcurrency": "1"}, "worker_max_concurrency"),
        ({"lambdaArchitecture": "sparc"}, "architecture"),
        ({"lambdaPython": "3.9"}, "python_version"),
        ({"agents": "not a spec"}, "agents"),
        ({"corsAllowedOrigins": "console.example.com"}, "origin"),
        ({"alarmEmail": "nobody"}, "alarm_email"),
        ({"terminalTtlDays": "0"}, "terminal_ttl_days"),
    ],
)
def test_out_of_range_context_is_refused_by_the_construct(context: dict[str, Any], message: str) -> None:
    # GIVEN a well-formed value the construct cannot be built with WHEN the app builds THEN a ConfigError names it
    app = new_app({**context, BUNDLING_STACKS: []})
    with pytest.raises(ConfigError, match=message):
        build(app)
