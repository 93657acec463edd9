"""What a deployment can tune, read once from CDK context and checked before anything is built.

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
``agents``                       ``module:function`` returning the agents (``AGENTTURN_AGENTS``)
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
``sweepIntervalMinutes``         how often the sweeper runs (default 1)
``expireOverdueWaits``           the sweeper also ends waits whose input timeout has passed
                                 (``AGENTTURN_EXPIRE_OVERDUE``; default true, as in the handlers); it
                                 widens the sweeper's access. Turn it off if no agent sets a timeout.
``terminalTtlDays``              delete terminal turns (DynamoDB TTL) this many days after they end
``snapshotObjectExpirationDays`` expire spilled turn snapshots (``turns/`` prefix) after this many days;
                                 only safe if no turn waits longer than that (default: never)
``apiThrottleRate`` / ``apiThrottleBurst``  HTTP API default-route throttling (default 50 rps / 100)
``corsAllowedOrigins``           comma-separated origins for browser clients (default: no CORS)
``alarmEmail``                   subscribe this address to the alarm topic
``tracing``                      X-Ray active tracing on the functions (default true)
===============================  ===========================================================================
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from agentturn.api.settings import DEFAULT_AGENTS

#: CloudWatch Logs accepts only these retention periods (days).
LOG_RETENTION_DAYS: Final = frozenset(
    {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)
#: The Lambda Python runtimes the bundler can target (wheels are chosen for the same version).
PYTHON_VERSIONS: Final = ("3.11", "3.12", "3.13")
#: An HTTP API integration times out after 30 s, whatever the Lambda's timeout: the run function must
#: answer (200 or 202) before that.
API_INTEGRATION_TIMEOUT_SECONDS: Final = 30
#: SQS and Lambda's guidance: the visibility timeout is at least 6x the consumer's timeout, so a batch
#: that is retried by the event source mapping is not redelivered while it is still being processed.
VISIBILITY_TIMEOUT_FACTOR: Final = 6
#: SQS's largest visibility timeout (12 h).
MAX_VISIBILITY_TIMEOUT_SECONDS: Final = 43_200

Architecture = Literal["x86_64", "arm64"]
RemovalMode = Literal["retain", "destroy"]

_STACK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$")
_MODULE_FUNCTION = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
#: A model or inference profile id ("anthropic.claude-...-v1:0", "us.amazon.nova-lite-v1:0") or an ARN.
_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,2047}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class ConfigError(ValueError):
    """A context value the stack cannot be built with."""


ContextGetter = Callable[[str], Any]


@dataclass(frozen=True)
class StackConfig:
    stack_name: str = "AgentTurn"
    removal: RemovalMode = "retain"
    jwt_issuer: str | None = None
    jwt_audience: tuple[str, ...] = ()
    agents: str = DEFAULT_AGENTS
    default_agent: str | None = None
    bedrock_model_id: str | None = None
    bedrock_model_ids: tuple[str, ...] = ()
    architecture: Architecture = "x86_64"
    python_version: str = "3.12"
    log_retention_days: int = 30
    run_timeout_seconds: int = 29
    submit_timeout_seconds: int = 15
    sweeper_timeout_seconds: int = 60
    worker_timeout_seconds: int = 300
    worker_batch_size: int = 1
    worker_batch_window_seconds: int = 0
    worker_max_concurrency: int = 20
    sweep_interval_minutes: int = 1
    expire_overdue_waits: bool = True
    terminal_ttl_days: int | None = None
    snapshot_object_expiration_days: int | None = None
    api_throttle_rate: int = 50
    api_throttle_burst: int = 100
    cors_allowed_origins: tuple[str, ...] = ()
    alarm_email: str | None = None
    tracing: bool = True

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not _STACK_NAME.match(self.stack_name):
            problems.append(f"stackName {self.stack_name!r} is not a valid CloudFormation stack name")
        if self.removal not in ("retain", "destroy"):
            problems.append(f"removalPolicy must be 'retain' or 'destroy', not {self.removal!r}")
        if (self.jwt_issuer is None) != (not self.jwt_audience):
            problems.append("jwtIssuer and jwtAudience go together: give both (an external provider) or neither")
        if self.jwt_issuer is not None and not self.jwt_issuer.startswith("https://"):
            # API Gateway fetches the issuer's JWKS over HTTPS; anything else is refused at deploy time.
            problems.append(f"jwtIssuer must be an https:// URL, not {self.jwt_issuer!r}")
        if not _MODULE_FUNCTION.match(self.agents):
            problems.append(f"agents must be 'module:function', not {self.agents!r}")
        problems += [
            f"bedrockModelIds: {m!r} is not a model id" for m in self.bedrock_model_ids if not _MODEL_ID.match(m)
        ]
        if self.architecture not in ("x86_64", "arm64"):
            problems.append(f"lambdaArchitecture must be 'x86_64' or 'arm64', not {self.architecture!r}")
        if self.python_version not in PYTHON_VERSIONS:
            problems.append(f"lambdaPython must be one of {PYTHON_VERSIONS}, not {self.python_version!r}")
        if self.log_retention_days not in LOG_RETENTION_DAYS:
            problems.append(
                f"logRetentionDays must be one of {sorted(LOG_RETENTION_DAYS)}, not {self.log_retention_days}"
            )
        if not 1 <= self.run_timeout_seconds < API_INTEGRATION_TIMEOUT_SECONDS:
            problems.append(f"the run timeout must be below the API's {API_INTEGRATION_TIMEOUT_SECONDS} s")
        visibility = self.worker_timeout_seconds * VISIBILITY_TIMEOUT_FACTOR
        if not 30 <= self.worker_timeout_seconds <= 900 or visibility > MAX_VISIBILITY_TIMEOUT_SECONDS:
            problems.append(f"workerTimeoutSeconds must be within 30..900, not {self.worker_timeout_seconds}")
        if not 1 <= self.worker_batch_size <= 10:
            # Above 10 SQS needs a batching window and the records of one invocation wait for each other.
            problems.append(f"workerBatchSize must be within 1..10, not {self.worker_batch_size}")
        if not 0 <= self.worker_batch_window_seconds <= 300:
            problems.append(f"workerBatchWindowSeconds must be within 0..300, not {self.worker_batch_window_seconds}")
        if not 2 <= self.worker_max_concurrency <= 1000:
            problems.append(
                f"workerMaxConcurrency must be within 2..1000 (SQS's limits), not {self.worker_max_concurrency}"
            )
        if not 1 <= self.sweep_interval_minutes <= 60:
            problems.append(f"sweepIntervalMinutes must be within 1..60, not {self.sweep_interval_minutes}")
        for name, days in (
            ("terminalTtlDays", self.terminal_ttl_days),
            ("snapshotObjectExpirationDays", self.snapshot_object_expiration_days),
        ):
            if days is not None and not 1 <= days <= 3650:
                problems.append(f"{name} must be within 1..3650, not {days}")
        if not 1 <= self.api_throttle_rate <= 10_000 or not 1 <= self.api_throttle_burst <= 5_000:
            problems.append("apiThrottleRate must be within 1..10000 and apiThrottleBurst within 1..5000")
        problems += [f"corsAllowedOrigins: {o!r} is not an origin" for o in self.cors_allowed_origins if not _origin(o)]
        if self.alarm_email is not None and not _EMAIL.match(self.alarm_email):
            problems.append(f"alarmEmail {self.alarm_email!r} is not an e-mail address")
        if problems:
            raise ConfigError("invalid CDK context: " + "; ".join(problems))

    @property
    def retain(self) -> bool:
        return self.removal == "retain"

    @property
    def queue_visibility_timeout_seconds(self) -> int:
        return self.worker_timeout_seconds * VISIBILITY_TIMEOUT_FACTOR

    @property
    def invokable_models(self) -> tuple[str, ...]:
        """Every Bedrock model the functions may invoke: the agents' model first, then the extra ones."""
        first = (self.bedrock_model_id,) if self.bedrock_model_id is not None else ()
        return tuple(dict.fromkeys((*first, *self.bedrock_model_ids)))

    @property
    def uses_cognito(self) -> bool:
        return self.jwt_issuer is None

    @classmethod
    def from_context(cls, get: ContextGetter) -> StackConfig:
        """Read every key through ``get`` (``node.try_get_context``); absent keys keep their defaults."""
        d = cls()
        return cls(
            stack_name=_text(get, "stackName") or d.stack_name,
            removal=_choice(get, "removalPolicy", d.removal),  # type: ignore[arg-type]  # checked in __post_init__
            jwt_issuer=_text(get, "jwtIssuer"),
            jwt_audience=_list(get, "jwtAudience"),
            agents=_text(get, "agents") or d.agents,
            default_agent=_text(get, "defaultAgent"),
            bedrock_model_id=_text(get, "bedrockModelId"),
            bedrock_model_ids=_list(get, "bedrockModelIds"),
            architecture=_choice(get, "lambdaArchitecture", d.architecture),  # type: ignore[arg-type]
            python_version=_text(get, "lambdaPython") or d.python_version,
            log_retention_days=_int(get, "logRetentionDays", d.log_retention_days),
            worker_timeout_seconds=_int(get, "workerTimeoutSeconds", d.worker_timeout_seconds),
            worker_batch_size=_int(get, "workerBatchSize", d.worker_batch_size),
            worker_batch_window_seconds=_int(get, "workerBatchWindowSeconds", d.worker_batch_window_seconds),
            worker_max_concurrency=_int(get, "workerMaxConcurrency", d.worker_max_concurrency),
            sweep_interval_minutes=_int(get, "sweepIntervalMinutes", d.sweep_interval_minutes),
            expire_overdue_waits=_bool(get, "expireOverdueWaits", d.expire_overdue_waits),
            terminal_ttl_days=_optional_int(get, "terminalTtlDays"),
            snapshot_object_expiration_days=_optional_int(get, "snapshotObjectExpirationDays"),
            api_throttle_rate=_int(get, "apiThrottleRate", d.api_throttle_rate),
            api_throttle_burst=_int(get, "apiThrottleBurst", d.api_throttle_burst),
            cors_allowed_origins=_list(get, "corsAllowedOrigins"),
            alarm_email=_text(get, "alarmEmail"),
            tracing=_bool(get, "tracing", d.tracing),
        )


def _origin(value: str) -> bool:
    return value == "*" or re.match(r"^https?://[A-Za-z0-9.-]+(:\d+)?$", value) is not None


def _text(get: ContextGetter, key: str) -> str | None:
    value = get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"context {key!r} must be a string, not {value!r}")
    return value.strip() or None


def _choice(get: ContextGetter, key: str, default: str) -> str:
    value = _text(get, key)
    return default if value is None else value.lower()


def _int(get: ContextGetter, key: str, default: int) -> int:
    value = _optional_int(get, key)
    return default if value is None else value


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


def _bool(get: ContextGetter, key: str, default: bool) -> bool:
    value = get(key)
    if value is None:
        return default
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
