"""Everything a deployment of :class:`~agentturn.cdk.AgentTurn` can tune, checked before anything is built.

The construct's keyword arguments become one :class:`Settings` (plus the option groups below); every rule
about what a value may be lives here, once, whether the value came from Python (a team's ``app.py``) or
from CDK context (this repository's ``infra/config.py``). A wrong value is a :class:`ConfigError` at synth
time, never a stack that deploys and then misbehaves.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, get_args

from agentturn.api.settings import DEFAULT_AGENTS
from agentturn.listeners.notifications import TurnNotices

if TYPE_CHECKING:
    from aws_cdk import Duration
    from aws_cdk import aws_ec2 as ec2

    from agentturn.cdk.bundling import AssetInputs

#: CloudWatch Logs accepts only these retention periods (days).
LOG_RETENTION_DAYS: Final = frozenset(
    {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)
#: The Lambda Python runtimes the bundler can target (wheels are chosen for the same version).
PythonVersion = Literal["3.11", "3.12", "3.13"]
PYTHON_VERSIONS: Final = get_args(PythonVersion)
Architecture = Literal["x86_64", "arm64"]
FunctionName = Literal["run", "submit", "worker", "sweeper", "retention", "agui"]
FUNCTION_NAMES: Final[tuple[FunctionName, ...]] = get_args(FunctionName)
#: An HTTP API integration times out after 30 s, whatever the Lambda's timeout: the run function must
#: answer (200 or 202) before that.
API_INTEGRATION_TIMEOUT_SECONDS: Final = 30
#: SQS and Lambda's guidance: the visibility timeout is at least 6x the consumer's timeout, so a batch
#: that is retried by the event source mapping is not redelivered while it is still being processed.
VISIBILITY_TIMEOUT_FACTOR: Final = 6
#: SQS's largest visibility timeout (12 h).
MAX_VISIBILITY_TIMEOUT_SECONDS: Final = 43_200

_MODULE_FUNCTION = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
#: A model or inference profile id ("anthropic.claude-...-v1:0", "us.amazon.nova-lite-v1:0") or an ARN.
_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,2047}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_LAYER_ARN = re.compile(r"^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:layer:[A-Za-z0-9_-]+:\d+$")
_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.-]+(:\d+)?$")


class ConfigError(ValueError):
    """A setting the system cannot be built with."""


# ---------------------------------------------------------------------------------------------- options


@dataclass(frozen=True)
class CognitoAuth:
    """A Cognito user pool made with the system (the default): accounts are created by an operator.

    ``require_mfa``: every sign-in needs a one-time code from an authenticator app (TOTP; SMS is never
    offered). Off by default: MFA is then optional, each user may turn it on.
    """

    require_mfa: bool = False


@dataclass(frozen=True)
class OidcAuth:
    """An existing OpenID Connect provider: API Gateway checks its tokens' ``iss`` and ``aud``/``client_id``."""

    issuer: str
    audience: tuple[str, ...]

    def __init__(self, issuer: str, audience: str | Sequence[str]) -> None:
        object.__setattr__(self, "issuer", issuer)
        object.__setattr__(self, "audience", (audience,) if isinstance(audience, str) else tuple(audience))


Auth = CognitoAuth | OidcAuth


@dataclass(frozen=True)
class FunctionProps:
    """Overrides for one function (or, passed alone, for all four). ``None`` keeps agentturn's default."""

    memory_size: int | None = None
    timeout: Duration | None = None
    #: Reserved concurrency: both a guaranteed share of the account's concurrency and a cap.
    reserved_concurrent_executions: int | None = None
    #: Added to the environment agentturn sets; a key agentturn sets itself cannot be overridden here.
    environment: Mapping[str, str] = field(default_factory=dict)
    vpc: ec2.IVpc | None = None
    vpc_subnets: ec2.SubnetSelection | None = None
    security_groups: Sequence[ec2.ISecurityGroup] = ()


@dataclass(frozen=True)
class ApiProps:
    #: Steady-state requests per second and burst of the ``$default`` stage (every route).
    throttle_rate: int = 50
    throttle_burst: int = 100
    #: Browser origins allowed by CORS (``()``: no CORS; ``("*",)``: any).
    cors_allowed_origins: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableProps:
    """For a table the construct creates (not for an existing one)."""

    point_in_time_recovery: bool = True
    #: ``None``: on when the removal policy retains the table.
    deletion_protection: bool | None = None


@dataclass(frozen=True)
class QueueProps:
    """For the resume queue and its dead-letter queue, when the construct creates them."""

    max_receive_count: int = 5
    retention_days: int = 4
    dead_letter_retention_days: int = 14


@dataclass(frozen=True)
class BucketProps:
    """For the snapshot bucket, when the construct creates it."""

    #: Expire spilled turn snapshots (``turns/`` prefix) after this many days; only safe if no turn waits
    #: longer than that (default: never).
    snapshot_object_expiration_days: int | None = None
    #: S3 server access logs of the snapshot bucket, delivered to a bucket of their own (``access_log_bucket``),
    #: kept ``access_log_retention_days``: who read or wrote which snapshot, for an investigation.
    server_access_logs: bool = True
    access_log_retention_days: int = 365


#: AWS's published Lambda Web Adapter layer (awslabs/aws-lambda-web-adapter, "Zip Packages"): its version, the
#: account that publishes it in the commercial regions, and the accounts of the China regions (x86_64 only there).
WEB_ADAPTER_LAYER_VERSION: Final = 26
WEB_ADAPTER_ACCOUNT: Final = "753240598075"
WEB_ADAPTER_CHINA_ACCOUNTS: Final = {"cn-north-1": "041581134020", "cn-northwest-1": "069767869989"}


def web_adapter_layer_arn(architecture: Architecture, region: str, partition: str = "aws") -> str:
    """The published Lambda Web Adapter layer for ``architecture`` in ``region`` (a CloudFormation token works too:
    then the commercial regions' account is assumed)."""
    name = "LambdaAdapterLayerArm64" if architecture == "arm64" else "LambdaAdapterLayerX86"
    china = WEB_ADAPTER_CHINA_ACCOUNTS.get(region)
    if china is not None:
        return f"arn:aws-cn:lambda:{region}:{china}:layer:{name}:{WEB_ADAPTER_LAYER_VERSION}"
    return f"arn:{partition}:lambda:{region}:{WEB_ADAPTER_ACCOUNT}:layer:{name}:{WEB_ADAPTER_LAYER_VERSION}"


@dataclass(frozen=True)
class AgUiStreamingProps:
    """The streamed AG-UI function: the AG-UI routes behind a Lambda function URL in ``RESPONSE_STREAM`` mode, run by
    the Lambda Web Adapter (LWA) layer, so server-sent events reach the client while the model writes."""

    #: ``False``: no such function (AG-UI runs are then answered whole, through the HTTP API).
    enabled: bool = True
    #: The LWA layer's ARN. ``None``: AWS's published layer (:data:`WEB_ADAPTER_LAYER_VERSION`) for the function's
    #: architecture in the stack's region (:func:`web_adapter_layer_arn`). Set it for GovCloud, for a copy of the
    #: layer in your own account, or to move to another version.
    web_adapter_layer_arn: str | None = None


# --------------------------------------------------------------------------------------------- settings


#: How boto3 names a service (``boto3.client("bedrock-runtime")``): its folder in botocore's data.
_SERVICE_NAME: Final = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def notice_kinds(notices: TurnNotices | bool | str) -> TurnNotices:
    """The construct's ``notices`` as :class:`TurnNotices`. It was a bool before it named kinds: True sent every
    notice and False none, so an app written then keeps what it asked for (True must not quietly become the
    PEOPLE default's fewer notices)."""
    if isinstance(notices, bool):
        return TurnNotices.ALL if notices else TurnNotices.NONE
    try:
        return TurnNotices(notices)
    except ValueError:
        kinds = ", ".join(repr(kind.value) for kind in TurnNotices)
        raise ConfigError(f"notices must be a TurnNotices ({kinds}) or a bool, not {notices!r}") from None


@dataclass(frozen=True)
class Settings:
    agents: str = DEFAULT_AGENTS
    default_agent: str | None = None
    #: Folders, packages or modules of the team's own code, bundled at the root of every function.
    code: tuple[Path, ...] = ()
    #: The team's third-party requirements, bundled with agentturn's own in one resolution.
    requirements: tuple[str, ...] = ()
    #: AWS services the team's code makes boto3 clients for, beyond agentturn's own: their botocore models
    #: are kept in the assets (the others are left out).
    aws_services: tuple[str, ...] = ()
    bedrock_model_id: str | None = None
    bedrock_model_ids: tuple[str, ...] = ()
    architecture: Architecture = "x86_64"
    python_version: PythonVersion = "3.12"
    retain: bool = True
    auth: Auth = field(default_factory=CognitoAuth)
    log_retention_days: int = 30
    run_timeout_seconds: int = 29
    submit_timeout_seconds: int = 15
    #: The streamed AG-UI function: no API Gateway in front, so only Lambda's own limit; a run still out of time
    #: hands its turn to the worker queue (RUN_ERROR ``agentturn:continuing``).
    agui_timeout_seconds: int = 120
    sweeper_timeout_seconds: int = 60
    retention_timeout_seconds: int = 300
    worker_timeout_seconds: int = 300
    worker_batch_size: int = 1
    worker_batch_window_seconds: int = 0
    worker_max_concurrency: int = 20
    #: Reserved concurrency of the worker (``None``: none). By default as much as the queue may use, so a
    #: burst of runs (or the account's other functions) cannot take the capacity resumes need.
    worker_reserved_concurrency: int | None = 20
    sweep_interval_minutes: int = 1
    expire_overdue_waits: bool = True
    terminal_ttl_days: int | None = None
    alarm_email: str | None = None
    #: X-Ray active tracing of every invocation (Lambda records it; nothing is imported for it).
    tracing: bool = True
    #: Powertools' Tracer as well: a subsegment per AWS call, but the X-Ray SDK costs each cold start about
    #: 0.25 s of imports (1.5–2× a bare ``import boto3``), so it is opt-in.
    sdk_tracing: bool = False
    #: Which turn notices go on the EventBridge bus ($1 per million events). PEOPLE (the default): only
    #: reminders and escalations, which a wait asks for itself; ALL: also every wait for a person and every end
    #: (two per form cycle, $2 per million cycles); NONE: nothing. The bus is made either way; only the
    #: functions that send what is wanted are told of it and may put on it.
    notices: TurnNotices = TurnNotices.PEOPLE
    api: ApiProps = field(default_factory=ApiProps)
    tables: TableProps = field(default_factory=TableProps)
    queue: QueueProps = field(default_factory=QueueProps)
    bucket: BucketProps = field(default_factory=BucketProps)
    ag_ui_streaming: AgUiStreamingProps = field(default_factory=AgUiStreamingProps)

    def asset_inputs(self) -> AssetInputs:
        """What each function's asset is made of besides the dependency tree (:mod:`agentturn.cdk.bundling`)."""
        from agentturn.cdk.bundling import AssetInputs

        agents_module = self.agents.split(":", 1)[0]
        return AssetInputs(
            code=self.code,
            modules=(agents_module,) if agents_module.startswith("agentturn.") else (),
            aws_services=self.aws_services,
            sdk_tracing=self.sdk_tracing,
            agents=self.agents,
        )

    def __post_init__(self) -> None:
        problems = [
            *self._agent_problems(),
            *self._runtime_problems(),
            *self._timing_problems(),
            *self._edge_problems(),
        ]
        if problems:
            raise ConfigError("invalid agentturn settings: " + "; ".join(problems))

    def _agent_problems(self) -> list[str]:
        problems: list[str] = []
        if not _MODULE_FUNCTION.match(self.agents):
            problems.append(f"agents must be 'module:function', not {self.agents!r}")
        problems += [f"code: {path} does not exist" for path in self.code if not path.exists()]
        problems += [
            f"aws_services: {name!r} is not a boto3 service name"
            for name in self.aws_services
            if not _SERVICE_NAME.match(name)
        ]
        problems += [
            f"bedrock_model_ids: {m!r} is not a model id" for m in self.bedrock_model_ids if not _MODEL_ID.match(m)
        ]
        if self.bedrock_model_id is not None and not _MODEL_ID.match(self.bedrock_model_id):
            problems.append(f"bedrock_model_id: {self.bedrock_model_id!r} is not a model id")
        return problems

    def _runtime_problems(self) -> list[str]:
        problems: list[str] = []
        if self.architecture not in get_args(Architecture):
            problems.append(f"architecture must be 'x86_64' or 'arm64', not {self.architecture!r}")
        if self.python_version not in PYTHON_VERSIONS:
            problems.append(f"python_version must be one of {PYTHON_VERSIONS}, not {self.python_version!r}")
        if self.log_retention_days not in LOG_RETENTION_DAYS:
            problems.append(
                f"log_retention_days must be one of {sorted(LOG_RETENTION_DAYS)}, not {self.log_retention_days}"
            )
        return problems

    def _timing_problems(self) -> list[str]:
        problems: list[str] = []
        if not 1 <= self.run_timeout_seconds < API_INTEGRATION_TIMEOUT_SECONDS:
            problems.append(f"the run timeout must be below the API's {API_INTEGRATION_TIMEOUT_SECONDS} s")
        if not 1 <= self.submit_timeout_seconds < API_INTEGRATION_TIMEOUT_SECONDS:
            problems.append(f"the submit timeout must be below the API's {API_INTEGRATION_TIMEOUT_SECONDS} s")
        if not 30 <= self.agui_timeout_seconds <= 900:
            # Below 30 s a run has no time left once the yield margin (10 s) is kept for its last step.
            problems.append(f"the agui timeout must be within 30..900 s, not {self.agui_timeout_seconds}")
        if not 10 <= self.sweeper_timeout_seconds <= 900:
            problems.append(f"the sweeper timeout must be within 10..900 s, not {self.sweeper_timeout_seconds}")
        visibility = self.worker_timeout_seconds * VISIBILITY_TIMEOUT_FACTOR
        if not 30 <= self.worker_timeout_seconds <= 900 or visibility > MAX_VISIBILITY_TIMEOUT_SECONDS:
            problems.append(f"the worker timeout must be within 30..900 s, not {self.worker_timeout_seconds}")
        if not 1 <= self.worker_batch_size <= 10:
            # Above 10 SQS needs a batching window and the records of one invocation wait for each other.
            problems.append(f"worker_batch_size must be within 1..10, not {self.worker_batch_size}")
        if not 0 <= self.worker_batch_window_seconds <= 300:
            problems.append(
                f"worker_batch_window_seconds must be within 0..300, not {self.worker_batch_window_seconds}"
            )
        if not 2 <= self.worker_max_concurrency <= 1000:
            problems.append(
                f"worker_max_concurrency must be within 2..1000 (SQS's limits), not {self.worker_max_concurrency}"
            )
        reserved = self.worker_reserved_concurrency
        if reserved is not None and reserved < self.worker_max_concurrency:
            # The event source would run more workers than Lambda lets run: throttled records, retried late.
            problems.append(
                f"the worker's reserved concurrency ({reserved}) must be at least worker_max_concurrency "
                f"({self.worker_max_concurrency})"
            )
        if not 10 <= self.retention_timeout_seconds <= 900:
            problems.append(f"the retention timeout must be within 10..900 s, not {self.retention_timeout_seconds}")
        if not 1 <= self.sweep_interval_minutes <= 60:
            problems.append(f"sweep_interval_minutes must be within 1..60, not {self.sweep_interval_minutes}")
        for name, days in (
            ("terminal_ttl_days", self.terminal_ttl_days),
            ("snapshot_object_expiration_days", self.bucket.snapshot_object_expiration_days),
            ("access_log_retention_days", self.bucket.access_log_retention_days),
        ):
            if days is not None and not 1 <= days <= 3650:
                problems.append(f"{name} must be within 1..3650, not {days}")
        if not 1 <= self.queue.max_receive_count <= 1000:
            problems.append(f"max_receive_count must be within 1..1000, not {self.queue.max_receive_count}")
        for name, days in (
            ("retention_days", self.queue.retention_days),
            ("dead_letter_retention_days", self.queue.dead_letter_retention_days),
        ):
            if not 1 <= days <= 14:  # SQS keeps a message at most 14 days
                problems.append(f"queue {name} must be within 1..14, not {days}")
        return problems

    def _edge_problems(self) -> list[str]:
        problems: list[str] = []
        if isinstance(self.auth, OidcAuth):
            if not self.auth.issuer.startswith("https://"):
                # API Gateway fetches the issuer's JWKS over HTTPS; anything else is refused at deploy time.
                problems.append(f"the OIDC issuer must be an https:// URL, not {self.auth.issuer!r}")
            if not self.auth.audience or not all(self.auth.audience):
                problems.append("the OIDC audience must name at least one client id")
        elif not isinstance(self.auth, CognitoAuth):
            problems.append(f"auth must be CognitoAuth() or OidcAuth(issuer, audience), not {self.auth!r}")
        api = self.api
        if not 1 <= api.throttle_rate <= 10_000 or not 1 <= api.throttle_burst <= 5_000:
            problems.append("the API throttle rate must be within 1..10000 and its burst within 1..5000")
        problems += [
            f"cors_allowed_origins: {o!r} is not an origin"
            for o in api.cors_allowed_origins
            if o != "*" and not _ORIGIN.match(o)
        ]
        layer = self.ag_ui_streaming.web_adapter_layer_arn
        if layer is not None and not _LAYER_ARN.match(layer):
            problems.append(f"web_adapter_layer_arn: {layer!r} is not a Lambda layer version ARN")
        if self.alarm_email is not None and not _EMAIL.match(self.alarm_email):
            problems.append(f"alarm_email {self.alarm_email!r} is not an e-mail address")
        return problems

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
        return isinstance(self.auth, CognitoAuth)


def read_requirements(
    requirements: str | os.PathLike[str] | Sequence[str] | None, *, base: Path | None = None
) -> tuple[str, ...]:
    """The requirement lines of ``requirements``: a file (``requirements.txt``) or a list of specifiers.

    Comments and blank lines are dropped. pip options (``-r``, ``--index-url``, ``-e``) are refused: the
    bundle installs wheels for the Lambda's platform from the same index as agentturn's own dependencies,
    and an option would silently change what the cache key describes.
    """
    if requirements is None:
        return ()
    if isinstance(requirements, str | os.PathLike):
        path = Path(requirements)
        if base is not None and not path.is_absolute():
            path = base / path
        if not path.is_file():
            raise ConfigError(f"requirements: {path} is not a file")
        lines = path.read_text().splitlines()
    else:
        lines = list(requirements)
    result: list[str] = []
    for raw in lines:
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            raise ConfigError(f"requirements: pip options are not supported in a bundled requirement: {line!r}")
        result.append(line)
    return tuple(result)
