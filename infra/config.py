"""This repository's app reads what a deployment can tune from CDK context, as keyword arguments of
:class:`agentturn.cdk.AgentTurn` (which checks every value: :mod:`agentturn.cdk.settings`).

Context comes from ``cdk.json``, from ``-c key=value`` on the command line (always a string there) or from
``App(context=...)`` in tests, so every reader below accepts both the JSON type and its string form.
A wrong value is a :class:`ConfigError` at synth time, never a stack that deploys and then misbehaves.

Context keys (all optional):

===============================  ===========================================================================
``stackName``                    CloudFormation stack name (default ``AgentTurn``)
``removalPolicy``                ``retain`` (default: tables, bucket, user pool and logs survive a stack
                                 delete, with deletion protection on) or ``destroy`` (dev stacks)
``jwtIssuer`` / ``jwtAudience``  use an existing identity provider instead of the Cognito user pool the
                                 stack creates by default; both or neither (audience: comma-separated)
``agents``                       ``module:function`` returning the agents (``AGENTTURN_AGENTS``); the
                                 module must be importable from the bundle: this app bundles only
                                 agentturn (a team's own code goes through the construct's ``code``)
``defaultAgent``                 agent id used when a request names none
``bedrockModelId``               run the agents on this Bedrock model or inference profile
                                 (``AGENTTURN_MODEL=bedrock``); default: the deterministic demo model
``bedrockModelIds``              further comma-separated model / profile ids the agents call (a custom
                                 ``agents`` module); the run and worker functions may invoke exactly
                                 ``bedrockModelId`` and these, nothing else
``lambdaArchitecture``           ``x86_64`` (default) or ``arm64``; the wheels are bundled to match
``lambdaPython``                 ``3.12`` (default), ``3.13`` or ``3.11``; the runtime and wheels match it
``logRetentionDays``             CloudWatch Logs retention of every log group (default 30)
``workerTimeoutSeconds``         worker Lambda timeout (default 300); the queue's visibility timeout is 6x
``workerBatchSize``              SQS records per worker invocation (default 1: see the stack)
``workerBatchWindowSeconds``     how long SQS may wait to fill a batch (default 0: no added latency)
``workerMaxConcurrency``         most concurrent worker invocations (default 20; protects the model quota)
``workerReservedConcurrency``    the worker's reserved concurrency (default: workerMaxConcurrency, so runs
                                 cannot starve resumes; at least workerMaxConcurrency)
``sweepIntervalMinutes``         how often the sweeper runs (default 1)
``expireOverdueWaits``           the sweeper also ends waits whose input timeout has passed
                                 (``AGENTTURN_EXPIRE_OVERDUE``; default true, as in the handlers)
``terminalTtlDays``              delete terminal turns (DynamoDB TTL) this many days after they end
``snapshotObjectExpirationDays`` expire spilled turn snapshots (``turns/`` prefix) after this many days;
                                 only safe if no turn waits longer than that (default: never)
``snapshotAccessLogs``           S3 server access logs of the snapshot bucket, in a bucket of their own
                                 (default true)
``requireMfa``                   every sign-in to the created Cognito user pool needs a TOTP code (default
                                 false: optional); not with ``jwtIssuer`` (that provider decides)
``apiThrottleRate`` / ``apiThrottleBurst``  HTTP API default-route throttling (default 50 rps / 100)
``corsAllowedOrigins``           comma-separated origins for browser clients (default: no CORS)
``alarmEmail``                   subscribe this address to the alarm topic
``tracing``                      X-Ray active tracing on the functions (default true)
``sdkTracing``                   Powertools' Tracer too: a subsegment per AWS call, ~0.25 s more cold start
                                 (default false)
===============================  ===========================================================================
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from aws_cdk import RemovalPolicy

from agentturn.cdk.settings import ApiProps, BucketProps, CognitoAuth, ConfigError, FunctionProps, OidcAuth

__all__ = ["ConfigError", "ContextGetter", "StackConfig"]

_STACK_NAME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$")

ContextGetter = Callable[[str], Any]


@dataclass(frozen=True)
class StackConfig:
    """The stack's name and the construct's keyword arguments, as the context gave them."""

    stack_name: str = "AgentTurn"
    props: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_context(cls, get: ContextGetter) -> StackConfig:
        """Read every key through ``get`` (``node.try_get_context``); absent keys keep the construct's defaults."""
        stack_name = _text(get, "stackName") or cls.stack_name
        if not _STACK_NAME.match(stack_name):
            raise ConfigError(f"stackName {stack_name!r} is not a valid CloudFormation stack name")
        removal = _optional_choice(get, "removalPolicy")
        if removal not in (None, "retain", "destroy"):
            raise ConfigError(f"removalPolicy must be 'retain' or 'destroy', not {removal!r}")
        issuer, audience = _text(get, "jwtIssuer"), _list(get, "jwtAudience")
        if (issuer is None) != (not audience):
            raise ConfigError("jwtIssuer and jwtAudience go together: give both (an external provider) or neither")
        require_mfa = _optional_bool(get, "requireMfa")
        if require_mfa is not None and issuer is not None:
            raise ConfigError("requireMfa applies to the user pool the stack creates, not to an external jwtIssuer")
        props: dict[str, Any] = {
            "agents": _text(get, "agents"),
            "default_agent": _text(get, "defaultAgent"),
            "bedrock_model_id": _text(get, "bedrockModelId"),
            "bedrock_model_ids": _list(get, "bedrockModelIds"),
            "architecture": _optional_choice(get, "lambdaArchitecture"),
            "python_version": _text(get, "lambdaPython"),
            "removal_policy": {None: None, "destroy": RemovalPolicy.DESTROY, "retain": RemovalPolicy.RETAIN}[removal],
            "auth": OidcAuth(issuer, audience)
            if issuer is not None
            else CognitoAuth(require_mfa=require_mfa)
            if require_mfa is not None
            else None,
            "log_retention_days": _optional_int(get, "logRetentionDays"),
            "worker_timeout_seconds": _optional_int(get, "workerTimeoutSeconds"),
            "worker_batch_size": _optional_int(get, "workerBatchSize"),
            "worker_batch_window_seconds": _optional_int(get, "workerBatchWindowSeconds"),
            "worker_max_concurrency": _optional_int(get, "workerMaxConcurrency"),
            "sweep_interval_minutes": _optional_int(get, "sweepIntervalMinutes"),
            "expire_overdue_waits": _optional_bool(get, "expireOverdueWaits"),
            "terminal_ttl_days": _optional_int(get, "terminalTtlDays"),
            "alarm_email": _text(get, "alarmEmail"),
            "tracing": _optional_bool(get, "tracing"),
            "sdk_tracing": _optional_bool(get, "sdkTracing"),
        }
        days, access_logs = (
            _optional_int(get, "snapshotObjectExpirationDays"),
            _optional_bool(get, "snapshotAccessLogs"),
        )
        if days is not None or access_logs is not None:
            props["bucket_props"] = BucketProps(
                snapshot_object_expiration_days=days,
                server_access_logs=BucketProps().server_access_logs if access_logs is None else access_logs,
            )
        rate, burst, origins = (
            _optional_int(get, "apiThrottleRate"),
            _optional_int(get, "apiThrottleBurst"),
            _list(get, "corsAllowedOrigins"),
        )
        if rate is not None or burst is not None or origins:
            default = ApiProps()
            props["api_props"] = ApiProps(
                throttle_rate=default.throttle_rate if rate is None else rate,
                throttle_burst=default.throttle_burst if burst is None else burst,
                cors_allowed_origins=origins,
            )
        reserved = _optional_int(get, "workerReservedConcurrency")
        if reserved is not None:
            props["function_props"] = {"worker": FunctionProps(reserved_concurrent_executions=reserved)}
        # Absent keys are left out, so the construct's own defaults apply (one place for each default).
        return cls(stack_name=stack_name, props={k: v for k, v in props.items() if v is not None and v != ()})


def _text(get: ContextGetter, key: str) -> str | None:
    value = get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"context {key!r} must be a string, not {value!r}")
    return value.strip() or None


def _optional_choice(get: ContextGetter, key: str) -> str | None:
    value = _text(get, key)
    return None if value is None else value.lower()


def _optional_int(get: ContextGetter, key: str) -> int | None:
    value = get(key)
    if value is None or value == "":
        return None
    if isinstance(value, bool):  # bool is an int in Python; true is not a number of days
        raise ConfigError(f"context {key!r} must be an integer, not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    raise ConfigError(f"context {key!r} must be an integer, not {value!r}")


def _optional_bool(get: ContextGetter, key: str) -> bool | None:
    value = get(key)
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigError(f"context {key!r} must be true or false, not {value!r}")


def _list(get: ContextGetter, key: str) -> tuple[str, ...]:
    """A JSON list, or a string: comma-separated, or a JSON list in a string (``-c 'k=["a","b"]'``)."""
    value = get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"context {key!r} is not a JSON list: {exc}") from None
        else:
            return tuple(part.strip() for part in text.split(",") if part.strip())
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(item.strip() for item in value if item.strip())
    raise ConfigError(f"context {key!r} must be a list of strings, not {value!r}")
