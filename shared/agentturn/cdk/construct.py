"""The whole agentturn system as one CDK construct: tables, snapshot bucket, resume queue, four Lambdas,
HTTP API, identity and alarms — for a team's own agents, tools and forms.

One statement deploys it::

    AgentTurn(stack, "AgentTurn", agents="support_desk.agents:build", code=["support_desk"])

Everything it creates is an attribute (``api``, ``turns_table``, ``queue``, ``worker_function``, ...);
existing tables, queue and bucket can be passed in instead (``existing_*``), and the functions that run
tools get the team's own permissions through :meth:`AgentTurn.grant_tools`.

Everything a handler reads from its environment is set here from the names the handlers' code defines
(:mod:`agentturn.aws.tables` for resources, :mod:`agentturn.api.settings` for tuning), and every
permission is the list in :mod:`agentturn.cdk.permissions`. Nothing is granted through CDK's broad
``grant*`` helpers, which include calls the functions never make (Scan, BatchGetItem, DescribeTable, ...).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from aws_cdk import Acknowledgment, Aws, Duration, RemovalPolicy, Stack, Tags, Validations
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from agentturn.api.lambdas import DEPLOYED_ENVIRONMENT, SERVICE
from agentturn.api.routes import RUN_LAMBDA_GROUPS, SUBMIT_LAMBDA_GROUPS, RouteGroup
from agentturn.api.settings import DEFAULT_AGENTS
from agentturn.aws import tables
from agentturn.cdk import permissions
from agentturn.cdk.api import AgentTurnApi
from agentturn.cdk.bundling import HANDLER, DependencySpec, Target, function_code
from agentturn.cdk.live import LiveTimeline, Notices
from agentturn.cdk.monitoring import Alarms
from agentturn.cdk.settings import (
    FUNCTION_NAMES,
    AgUiStreamingProps,
    ApiProps,
    Architecture,
    Auth,
    BucketProps,
    CognitoAuth,
    ConfigError,
    FunctionName,
    FunctionProps,
    OidcAuth,
    PythonVersion,
    QueueProps,
    Settings,
    TableProps,
    notice_kinds,
    read_requirements,
    web_adapter_layer_arn,
)
from agentturn.cdk.storage import build_table, index_arns
from agentturn.listeners.notifications import TurnNotices
from agentturn.models import select

#: Powertools metrics namespace (the handlers' default, set explicitly so the alarms and the code agree).
METRICS_NAMESPACE: Final = "agentturn"
#: Resume messages older than this mean the worker is failing or behind (normal pickup: seconds).
OLDEST_MESSAGE_ALARM: Final = Duration.minutes(5)
#: Geographic prefixes of Bedrock cross-region inference profiles ("us.anthropic.claude-...").
_INFERENCE_PROFILE_PREFIXES: Final = ("us.", "eu.", "apac.", "us-gov.", "jp.", "au.", "ca.", "global.")
#: The functions that run the team's tools (run: synchronous turns; worker: resumed ones; agui: AG-UI runs, resumed
#: in the request). submit and the sweeper apply answers and expire waits but never call a tool.
TOOL_FUNCTIONS: Final[tuple[FunctionName, ...]] = ("run", "worker", "agui")
#: The streamed AG-UI function's "handler": the start-up script the Lambda Web Adapter's wrapper runs.
WEB_ADAPTER_HANDLER: Final = "run.sh"
#: Where the Lambda Web Adapter forwards invocations (its default port, set explicitly).
WEB_ADAPTER_PORT: Final = 8080
#: Context keys that choose the Lambda runtime when the props do not (``cdk synth -c agentturn:lambdaPython=3.13``).
PYTHON_CONTEXT: Final = "agentturn:lambdaPython"
ARCHITECTURE_CONTEXT: Final = "agentturn:lambdaArchitecture"


@dataclass(frozen=True)
class _FunctionDefaults:
    name: FunctionName
    description: str
    memory_mb: int


_FUNCTIONS: Final = (
    _FunctionDefaults("run", "Starts turns (synchronously, handing off when out of time) and serves reads", 1024),
    _FunctionDefaults("submit", "Accepts form submissions, approvals, rejections and cancellations", 1024),
    _FunctionDefaults("worker", "Advances runnable turns from the resume queue", 1024),
    _FunctionDefaults("sweeper", "Re-enqueues runnable turns nobody is working on", 256),
    _FunctionDefaults("retention", "Deletes the timeline entries and objects of turns the table's TTL removed", 256),
    _FunctionDefaults("agui", "Streams AG-UI runs as server-sent events (function URL, Lambda Web Adapter)", 1024),
)


class AgentTurn(Construct):
    """agentturn's serverless system for the agents that ``agents`` (``"module:function"``) returns.

    Every keyword has a default: ``AgentTurn(stack, "AgentTurn")`` deploys the demo agents. ``code`` lists
    the team's folders, packages or modules, bundled at the root of every function beside ``agentturn``;
    ``requirements`` (a requirements file or a list) their third-party dependencies, installed as wheels
    for the Lambda's Python and architecture without Docker, in one resolution with agentturn's own.
    Each function's asset holds only what its handler and the team's code can import, and botocore's models
    of the services agentturn calls: ``aws_services`` names any other the team's code makes clients for
    (``["ses"]``).
    Relative paths are resolved against the current folder (where ``cdk synth`` runs the app).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        agents: str = DEFAULT_AGENTS,
        default_agent: str | None = None,
        code: Sequence[str | os.PathLike[str]] = (),
        requirements: str | os.PathLike[str] | Sequence[str] | None = None,
        aws_services: Sequence[str] = (),
        bedrock_model_id: str | None = None,
        bedrock_model_ids: Sequence[str] = (),
        architecture: Architecture | None = None,
        python_version: PythonVersion | None = None,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        alarm_email: str | None = None,
        auth: Auth | None = None,
        existing_turns_table: dynamodb.ITable | None = None,
        existing_conversations_table: dynamodb.ITable | None = None,
        existing_queue: sqs.IQueue | None = None,
        existing_bucket: s3.IBucket | None = None,
        table_props: TableProps | None = None,
        queue_props: QueueProps | None = None,
        bucket_props: BucketProps | None = None,
        function_props: FunctionProps | Mapping[FunctionName, FunctionProps] | None = None,
        api_props: ApiProps | None = None,
        ag_ui_streaming: AgUiStreamingProps | None = None,
        log_retention_days: int = 30,
        worker_timeout_seconds: int = 300,
        worker_batch_size: int = 1,
        worker_batch_window_seconds: int = 0,
        worker_max_concurrency: int = 20,
        reserve_worker_concurrency: bool = True,
        sweep_interval_minutes: int = 1,
        expire_overdue_waits: bool = True,
        terminal_ttl_days: int | None = None,
        tracing: bool = True,
        sdk_tracing: bool = False,
        notices: TurnNotices | bool = TurnNotices.PEOPLE,
    ) -> None:
        super().__init__(scope, construct_id)
        _refuse_existing_with_props(
            ("existing_turns_table and existing_conversations_table", existing_turns_table is not None
             and existing_conversations_table is not None, "table_props", table_props),
            ("existing_queue", existing_queue is not None, "queue_props", queue_props),
            ("existing_bucket", existing_bucket is not None, "bucket_props", bucket_props),
        )  # fmt: skip
        overrides = _function_overrides(function_props)
        # Relative paths are the app's: `cdk synth` runs it from the folder that holds cdk.json.
        base = Path.cwd()
        self.settings = Settings(
            agents=agents,
            default_agent=default_agent,
            code=tuple((base / Path(path)).resolve() for path in code),
            requirements=read_requirements(requirements, base=base),
            aws_services=tuple(aws_services),
            bedrock_model_id=bedrock_model_id,
            bedrock_model_ids=tuple(bedrock_model_ids),
            architecture=architecture or self.node.try_get_context(ARCHITECTURE_CONTEXT) or "x86_64",
            python_version=python_version or self.node.try_get_context(PYTHON_CONTEXT) or "3.12",
            retain=removal_policy != RemovalPolicy.DESTROY,
            auth=auth or CognitoAuth(),
            log_retention_days=log_retention_days,
            worker_timeout_seconds=_seconds(overrides.get("worker"), worker_timeout_seconds),
            run_timeout_seconds=_seconds(overrides.get("run"), Settings.run_timeout_seconds),
            submit_timeout_seconds=_seconds(overrides.get("submit"), Settings.submit_timeout_seconds),
            agui_timeout_seconds=_seconds(overrides.get("agui"), Settings.agui_timeout_seconds),
            sweeper_timeout_seconds=_seconds(overrides.get("sweeper"), Settings.sweeper_timeout_seconds),
            retention_timeout_seconds=_seconds(overrides.get("retention"), Settings.retention_timeout_seconds),
            worker_batch_size=worker_batch_size,
            worker_batch_window_seconds=worker_batch_window_seconds,
            worker_max_concurrency=worker_max_concurrency,
            worker_reserved_concurrency=_worker_reservation(
                reserve_worker_concurrency, overrides.get("worker"), worker_max_concurrency
            ),
            sweep_interval_minutes=sweep_interval_minutes,
            expire_overdue_waits=expire_overdue_waits,
            terminal_ttl_days=terminal_ttl_days,
            alarm_email=alarm_email,
            tracing=tracing,
            sdk_tracing=sdk_tracing,
            notices=notice_kinds(notices),
            api=api_props or ApiProps(),
            tables=table_props or TableProps(),
            queue=queue_props or QueueProps(),
            bucket=bucket_props or BucketProps(),
            ag_ui_streaming=ag_ui_streaming or AgUiStreamingProps(),
        )
        settings = self.settings
        removal = RemovalPolicy.RETAIN if settings.retain else RemovalPolicy.DESTROY
        retention = retention_days(settings.log_retention_days)
        Tags.of(self).add("project", "agentturn")

        # ---------------------------------------------------------------------------------- data
        # The stream carries TTL removals to the retention function (a turn's timeline and objects leave
        # with it); the old image is all it reads.
        self.turns_table: dynamodb.ITable = existing_turns_table or build_table(
            self,
            tables.TURNS_TABLE,
            retain=settings.retain,
            props=settings.tables,
            stream=dynamodb.StreamViewType.OLD_IMAGE,
        )
        self.conversations_table: dynamodb.ITable = existing_conversations_table or build_table(
            self, tables.CONVERSATIONS_TABLE, retain=settings.retain, props=settings.tables
        )
        # No idempotency table: no handler uses one. An Idempotency-Key's record lives in the turn snapshot,
        # written by the same conditional write that applies the answer (no extra request, no window).
        #: Where S3 delivers the snapshot bucket's server access logs (``None``: an existing bucket, or logs off).
        self.access_log_bucket: s3.Bucket | None = None
        self.bucket: s3.IBucket = existing_bucket or self._bucket(removal)

        # --------------------------------------------------------------------------------- queue
        self.dead_letter_queue: sqs.IQueue | None
        if existing_queue is not None:
            self.queue: sqs.IQueue = existing_queue
            # A queue made in the same app knows its dead-letter queue; an imported one does not (then the
            # dead-letter alarm is the owner's to set).
            known = getattr(existing_queue, "dead_letter_queue", None)
            self.dead_letter_queue = known.queue if isinstance(known, sqs.DeadLetterQueue) else None
        else:
            self.dead_letter_queue, self.queue = self._queues(settings.queue)
        # The key that seals the snapshot a submit hands the worker in its message (agentturn.engine.handoff):
        # only submit and worker may read it, so a message written by anyone else who may send to the queue is
        # at worst a wake-up. Generated here; never in the template or the functions' environment.
        self.handoff_secret = secretsmanager.Secret(
            self,
            "HandoffKey",
            description="Seals the turn snapshot a resume message carries (agentturn)",
            generate_secret_string=secretsmanager.SecretStringGenerator(password_length=64, exclude_punctuation=True),
            removal_policy=RemovalPolicy.DESTROY,
        )
        _acknowledge(
            self.handoff_secret,
            "AwsSolutions-SMG4",
            "No rotation schedule: the key only seals snapshots that ride in queue messages for minutes, and a message "
            "whose seal no longer checks is a wake-up (the worker claims and reads the stored turn), so rotating "
            "loses nothing; an owner may add one (handoff_secret.add_rotation_schedule).",
        )

        # ----------------------------------------------------------------------------- functions
        spec = DependencySpec.for_target(Target(settings.python_version, settings.architecture), settings.requirements)
        self.functions: dict[FunctionName, lambda_.Function] = {}
        self.log_groups: dict[FunctionName, logs.LogGroup] = {}
        timeouts: dict[FunctionName, int] = {
            "run": settings.run_timeout_seconds,
            "submit": settings.submit_timeout_seconds,
            "worker": settings.worker_timeout_seconds,
            "sweeper": settings.sweeper_timeout_seconds,
            "retention": settings.retention_timeout_seconds,
            "agui": settings.agui_timeout_seconds,
        }
        # An existing turns table without a known stream cannot feed the retention function: then its TTL
        # removes turn items only, and the owner keeps (or purges) their timeline and objects.
        with_retention = self.turns_table.table_stream_arn is not None
        for defaults in _FUNCTIONS:
            if defaults.name == "retention" and not with_retention:
                continue
            if defaults.name == "agui" and not settings.ag_ui_streaming.enabled:
                continue
            props = overrides.get(defaults.name, FunctionProps())
            if defaults.name == "worker":
                props = replace(props, reserved_concurrent_executions=settings.worker_reserved_concurrency)
            self._function(defaults, props, timeouts[defaults.name], spec, retention=retention, removal=removal)
        self.run_function = self.functions["run"]
        self.submit_function = self.functions["submit"]
        self.worker_function = self.functions["worker"]
        self.sweeper_function = self.functions["sweeper"]
        self.retention_function: lambda_.Function | None = self.functions.get("retention")
        #: The streamed AG-UI function (``None`` with ``AgUiStreamingProps(enabled=False)``).
        self.agui_function: lambda_.Function | None = self.functions.get("agui")
        self.retention_dead_letter_queue: sqs.Queue | None = None
        if self.retention_function is not None:
            self.retention_dead_letter_queue = self._retention_source(self.retention_function)
        self.worker_function.add_event_source(
            event_sources.SqsEventSource(
                self.queue,
                # One record per invocation: records of a batch run one after the other, so a batch would
                # make later turns wait for the model calls of earlier ones (head-of-line blocking).
                # Partial batch responses still matter with larger batches, and keep a failed record from
                # counting as a Lambda error either way.
                batch_size=settings.worker_batch_size,
                max_batching_window=(
                    Duration.seconds(settings.worker_batch_window_seconds)
                    if settings.worker_batch_window_seconds
                    else None
                ),
                report_batch_item_failures=True,
                # Caps the model calls in flight (Bedrock quotas) and the DynamoDB write rate of workers.
                max_concurrency=settings.worker_max_concurrency,
            )
        )
        self._grant_all()
        self._acknowledge_function_findings()

        # The sweeper: a fixed-rate rule; a missed tick is harmless (the next one finds the same turns).
        self.sweep_schedule = events.Rule(
            self,
            "SweepSchedule",
            description="Re-enqueue runnable turns whose lease expired or that were never enqueued",
            schedule=events.Schedule.rate(Duration.minutes(settings.sweep_interval_minutes)),
            targets=[targets.LambdaFunction(self.sweeper_function, retry_attempts=0)],
        )
        _acknowledge(
            self.sweep_schedule,
            "Serverless-EventBusDLQ",
            "A sweep that was not delivered needs no replay: the next tick finds the same turns (and the sweeper's "
            "errors alarm).",
        )

        # ---------------------------------------------------------------------------------- auth
        self.user_pool: cognito.UserPool | None = None
        self.user_pool_client: cognito.UserPoolClient | None = None
        if isinstance(settings.auth, OidcAuth):
            self.jwt_issuer, audience = settings.auth.issuer, list(settings.auth.audience)
        else:
            self.jwt_issuer, audience = self._cognito(settings.auth, removal, settings.retain)

        # ----------------------------------------------------------------------------------- api
        handlers: dict[RouteGroup, lambda_.IFunction] = {}
        for group in RUN_LAMBDA_GROUPS:
            handlers[group] = self.run_function
        for group in SUBMIT_LAMBDA_GROUPS:
            handlers[group] = self.submit_function
        self.http_api = AgentTurnApi(
            self,
            "Api",
            handlers=handlers,
            jwt_issuer=self.jwt_issuer,
            jwt_audience=audience,
            throttle_rate=settings.api.throttle_rate,
            throttle_burst=settings.api.throttle_burst,
            cors_allowed_origins=settings.api.cors_allowed_origins,
            log_retention=retention,
            removal_policy=removal,
        )
        self.api = self.http_api.http_api
        self.api_url = self.http_api.url
        #: The streamed AG-UI route's base URL (``{ag_ui_url}ag-ui/{agentId}``); ``None`` without the function.
        self.ag_ui_function_url: lambda_.FunctionUrl | None = None
        self.ag_ui_url: str | None = None
        if self.agui_function is not None:
            self._stream_ag_ui(self.agui_function, audience)

        # ------------------------------------------------------------------ live timeline, notices
        self.live = LiveTimeline(self, "Live", auth=settings.auth, user_pool=self.user_pool)
        self.notices = Notices(self, "Notices")
        self.event_bus: events.IEventBus = self.notices.bus
        for name, fn in self.functions.items():
            if permissions.access(name).live:
                self.live.allow_publish(fn)
            # Each notice is an EventBridge event ($1 per million): only the functions that send what is wanted.
            if permissions.puts_notices(name, settings.notices):
                self.notices.allow_put(fn, settings.notices)

        # ------------------------------------------------------------------------------- alarms
        self.alarms = Alarms(
            self,
            "Alarms",
            queue=self.queue,
            dead_letter_queue=self.dead_letter_queue,
            retention_dead_letter_queue=self.retention_dead_letter_queue,
            functions=self.functions,
            http_api=self.api,
            oldest_message_threshold=OLDEST_MESSAGE_ALARM,
            alarm_email=settings.alarm_email,
            metrics_namespace=METRICS_NAMESPACE,
            service=SERVICE,
        )
        self.alarm_topic: sns.ITopic = self.alarms.topic

    # ------------------------------------------------------------------------------------ public

    @property
    def tool_functions(self) -> tuple[lambda_.Function, ...]:
        """The functions in which the team's tools run (for ``table.grant_read_data(fn)`` and the like)."""
        return tuple(self.functions[name] for name in TOOL_FUNCTIONS if name in self.functions)

    def grant_tools(self, *statements: iam.PolicyStatement) -> None:
        """Allow the team's tools exactly ``statements``, in exactly the functions that run tools."""
        for function in self.tool_functions:
            for statement in statements:
                function.add_to_role_policy(statement)

    # ------------------------------------------------------------------------------------ parts

    def _stream_ag_ui(self, function: lambda_.Function, audience: list[str]) -> None:
        """The AG-UI routes streamed over HTTPS: a function URL in ``RESPONSE_STREAM`` mode in front of the Lambda Web
        Adapter, which runs the function's HTTP entry (``agentturn.api.web_adapter``).

        ``AuthType NONE``: a browser holding a Cognito/OIDC token cannot sign an IAM request, so the function verifies
        the bearer token itself, against the same issuer and audience as the HTTP API's JWT authorizer."""
        function.add_environment("AGENTTURN_JWT_ISSUER", self.jwt_issuer)
        function.add_environment("AGENTTURN_JWT_AUDIENCE", ",".join(audience))
        origins = list(self.settings.api.cors_allowed_origins)
        cors = (
            lambda_.FunctionUrlCorsOptions(
                allowed_origins=origins,
                allowed_methods=[lambda_.HttpMethod.GET, lambda_.HttpMethod.POST],
                allowed_headers=["Authorization", "Content-Type"],
                max_age=Duration.hours(1),
            )
            if origins
            else None
        )
        self.ag_ui_function_url = function.add_function_url(
            auth_type=lambda_.FunctionUrlAuthType.NONE,
            invoke_mode=lambda_.InvokeMode.RESPONSE_STREAM,
            cors=cors,
        )
        self.ag_ui_url = self.ag_ui_function_url.url

    def _web_adapter_layer(self) -> lambda_.ILayerVersion:
        stack = Stack.of(self)
        arn = self.settings.ag_ui_streaming.web_adapter_layer_arn or web_adapter_layer_arn(
            self.settings.architecture, stack.region, stack.partition
        )
        return lambda_.LayerVersion.from_layer_version_arn(self, "WebAdapterLayer", arn)

    def _retention_source(self, function: lambda_.Function) -> sqs.Queue:
        """TTL removals of turn items, and only those, reach the retention function (a filter on the source)."""
        failures = sqs.Queue(
            self,
            "RetentionDeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        for rule in ("AwsSolutions-SQS3", "Serverless-SQSRedrivePolicy"):
            _acknowledge(
                failures,
                rule,
                "This is a dead-letter queue: the retention stream's on-failure destination (a record that kept "
                "failing, alarmed, for an operator to replay).",
            )
        function.add_event_source(
            event_sources.DynamoEventSource(
                self.turns_table,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=25,
                bisect_batch_on_error=True,
                report_batch_item_failures=True,
                # A record that keeps failing goes to the dead-letter queue (alarmed) instead of blocking its
                # shard; the stream keeps records 24 h, so the retries stay well within that.
                retry_attempts=8,
                on_failure=event_sources.SqsDlq(failures),
                filters=[
                    lambda_.FilterCriteria.filter(
                        {
                            "eventName": lambda_.FilterRule.is_equal("REMOVE"),
                            "userIdentity": {
                                "type": lambda_.FilterRule.is_equal("Service"),
                                "principalId": lambda_.FilterRule.is_equal("dynamodb.amazonaws.com"),
                            },
                        }
                    )
                ],
            )
        )
        return failures

    def _access_log_bucket(self, removal: RemovalPolicy) -> s3.Bucket:
        days = self.settings.bucket.access_log_retention_days
        logs_bucket = s3.Bucket(
            self,
            "SnapshotAccessLogs",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            # S3 delivers server access logs only to a bucket encrypted with S3-managed keys.
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(days))],
            removal_policy=removal,
            auto_delete_objects=not self.settings.retain,
        )
        _acknowledge(
            logs_bucket,
            "AwsSolutions-S1",
            "This is the access-log bucket of the snapshot bucket: logging its own access would log the log "
            "deliveries, and nothing but S3's log delivery writes to it.",
        )
        return logs_bucket

    @staticmethod
    def _deliver_access_logs(bucket: s3.Bucket, logs_bucket: s3.Bucket) -> None:
        """Who read or wrote which snapshot (the bodies hold what people submitted): S3 server access logs.

        Delivered under a bucket policy (S3's logging service, from this bucket and account only), not the
        ``LogDeliveryWrite`` ACL the L2 option falls back to without the app's feature flag: ACLs stay disabled."""
        cfn = bucket.node.default_child
        assert isinstance(cfn, s3.CfnBucket)
        cfn.logging_configuration = s3.CfnBucket.LoggingConfigurationProperty(
            destination_bucket_name=logs_bucket.bucket_name, log_file_prefix=ACCESS_LOG_PREFIX
        )
        logs_bucket.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("logging.s3.amazonaws.com")],
                actions=["s3:PutObject"],
                resources=[logs_bucket.arn_for_objects(f"{ACCESS_LOG_PREFIX}*")],
                conditions={
                    "ArnLike": {"aws:SourceArn": bucket.bucket_arn},
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                },
            )
        )

    def _bucket(self, removal: RemovalPolicy) -> s3.Bucket:
        if self.settings.bucket.server_access_logs:
            self.access_log_bucket = self._access_log_bucket(removal)
        bucket = s3.Bucket(
            self,
            "Snapshots",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            # Versioned: an object the store replaced or deleted stays recoverable as long as the tables'
            # point-in-time recovery window (35 days), so a table restored to an earlier time still finds
            # the bodies its items point to.
            versioned=True,
            lifecycle_rules=self._lifecycle_rules(),
            removal_policy=removal,
            auto_delete_objects=not self.settings.retain,
        )
        if self.access_log_bucket is not None:
            self._deliver_access_logs(bucket, self.access_log_bucket)
        else:
            _acknowledge(
                bucket,
                "AwsSolutions-S1",
                "Server access logs turned off by the owner: BucketProps(server_access_logs=False).",
            )
        return bucket

    def _queues(self, props: QueueProps) -> tuple[sqs.Queue, sqs.Queue]:
        dead_letter_queue = sqs.Queue(
            self,
            "ResumeDeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            # The longest SQS allows by default: time to look at a failure and redrive it.
            retention_period=Duration.days(props.dead_letter_retention_days),
        )
        _acknowledge(
            dead_letter_queue,
            "Serverless-SQSRedrivePolicy",
            "This is the resume queue's dead-letter queue: a message ends here, alarmed, and is redriven by hand.",
        )
        queue = sqs.Queue(
            self,
            "ResumeQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(self.settings.queue_visibility_timeout_seconds),
            # A lost message is not a lost turn (the sweeper re-enqueues runnable turns), so a few days
            # suffice; the dead-letter queue keeps failures longer.
            retention_period=Duration.days(props.retention_days),
            dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letter_queue, max_receive_count=props.max_receive_count),
        )
        return dead_letter_queue, queue

    def _lifecycle_rules(self) -> list[s3.LifecycleRule]:
        rules = [
            s3.LifecycleRule(
                id="expire-replaced-versions",
                # Matches DynamoDB's point-in-time recovery window (see the bucket's comment).
                noncurrent_version_expiration=Duration.days(35),
                abort_incomplete_multipart_upload_after=Duration.days(1),
            ),
            # Delete markers whose versions have all expired are clutter that slows listing.
            s3.LifecycleRule(id="remove-expired-delete-markers", expired_object_delete_marker=True),
        ]
        days = self.settings.bucket.snapshot_object_expiration_days
        if days is not None:
            # Opt-in: a spilled snapshot is rewritten on every save, so its age is the time since the turn's
            # last change. Only safe if no turn waits (for a person) longer than this.
            rules.append(
                s3.LifecycleRule(id="expire-old-turn-snapshots", prefix="turns/", expiration=Duration.days(days))
            )
        return rules

    def _environment(self, name: str) -> dict[str, str]:
        settings = self.settings
        env = {
            tables.ENV_TURNS_TABLE: self.turns_table.table_name,
            tables.ENV_CONVERSATIONS_TABLE: self.conversations_table.table_name,
            tables.ENV_RESUME_QUEUE_URL: self.queue.queue_url,
            "AGENTTURN_AGENTS": settings.agents,
            "POWERTOOLS_SERVICE_NAME": SERVICE,
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            "POWERTOOLS_TRACE_DISABLED": "false" if settings.tracing and settings.sdk_tracing else "true",
            **DEPLOYED_ENVIRONMENT,
        }
        access = permissions.access(name)
        if access.blobs or access.purge:
            # Only functions that read or delete bodies get the bucket (the others make no S3 client).
            env[tables.ENV_SNAPSHOT_BUCKET] = self.bucket.bucket_name
        if name == "sweeper":
            # Said either way: the deployment decides, not the handlers' own default.
            env["AGENTTURN_EXPIRE_OVERDUE"] = "true" if settings.expire_overdue_waits else "false"
        if settings.default_agent is not None:
            env["AGENTTURN_DEFAULT_AGENT"] = settings.default_agent
        if settings.bedrock_model_id is not None:
            # What agentturn.models.select reads; every function that may load the agents sees the same
            # model (only run and worker call it, and only they may invoke it).
            env[select.MODEL_VAR] = "bedrock"
            env[select.BEDROCK_MODEL_ID_VAR] = settings.bedrock_model_id
        if settings.terminal_ttl_days is not None:
            env["AGENTTURN_TERMINAL_TTL_SECONDS"] = str(settings.terminal_ttl_days * 86_400)
        if access.handoff_key:
            env[tables.ENV_HANDOFF_SECRET_ARN] = self.handoff_secret.secret_arn
        if name == "agui":
            # The Lambda Web Adapter: its wrapper starts run.sh, forwards each invocation to the entry's port and
            # streams the answer (the function URL's invoke mode says the same); ready once the port accepts.
            env["AWS_LAMBDA_EXEC_WRAPPER"] = "/opt/bootstrap"
            env["AWS_LWA_INVOKE_MODE"] = "response_stream"
            env["AWS_LWA_PORT"] = str(WEB_ADAPTER_PORT)
            env["AWS_LWA_READINESS_CHECK_PROTOCOL"] = "tcp"
        return env

    def _function(
        self,
        defaults: _FunctionDefaults,
        props: FunctionProps,
        timeout_seconds: int,
        spec: DependencySpec,
        *,
        retention: logs.RetentionDays,
        removal: RemovalPolicy,
    ) -> None:
        name = defaults.name
        title = name.capitalize()
        # An explicit log group: its retention and removal are part of the stack (the implicit one Lambda
        # creates lives forever), and the role may write to it and nothing else.
        log_group = logs.LogGroup(self, f"{title}Logs", retention=retention, removal_policy=removal)
        # An explicit role without AWSLambdaBasicExecutionRole, whose logs:* statements cover every log
        # group of the account.
        role = iam.Role(
            self,
            f"{title}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"agentturn {name} function",
        )
        role.add_to_policy(iam.PolicyStatement(actions=list(permissions.LOGS), resources=[log_group.log_group_arn]))
        if props.vpc is not None:
            # ENI management for a function in a VPC: AWS's managed policy is the minimal set Lambda needs.
            role.add_managed_policy(
                iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AWSLambdaVPCAccessExecutionRole")
            )
        environment = self._environment(name)
        # DEPLOYED_ENVIRONMENT is a default a team may change (a pydantic plugin of its own); the rest is agentturn's.
        clashes = sorted(set(props.environment) & (set(environment) - set(DEPLOYED_ENVIRONMENT)))
        if clashes:
            raise ConfigError(f"function_props for {name!r}: agentturn sets {clashes!r} itself")
        fn = lambda_.Function(
            self,
            f"{title}Function",
            description=f"agentturn {name}: {defaults.description}",
            runtime=lambda_.Runtime(f"python{self.settings.python_version}", lambda_.RuntimeFamily.PYTHON),
            architecture=lambda_.Architecture.ARM_64
            if self.settings.architecture == "arm64"
            else lambda_.Architecture.X86_64,
            handler=WEB_ADAPTER_HANDLER if name == "agui" else HANDLER,
            layers=[self._web_adapter_layer()] if name == "agui" else None,
            code=function_code(name, spec, self.settings.asset_inputs()),
            memory_size=props.memory_size or defaults.memory_mb,
            timeout=Duration.seconds(timeout_seconds),
            environment={**environment, **props.environment},
            role=role,
            log_group=log_group,
            tracing=lambda_.Tracing.ACTIVE if self.settings.tracing else lambda_.Tracing.DISABLED,
            # The sweeper runs again at the next tick: Lambda's own async retries would only overlap it.
            retry_attempts=0 if name == "sweeper" else None,
            reserved_concurrent_executions=props.reserved_concurrent_executions,
            vpc=props.vpc,
            vpc_subnets=props.vpc_subnets,
            security_groups=list(props.security_groups) or None,
        )
        self.functions[name] = fn
        self.log_groups[name] = log_group

    def _acknowledge_function_findings(self) -> None:
        """cdk-nag's findings on the functions and their roles that are by design (tests/infra/test_nag.py runs
        the AWS Solutions and Serverless packs): each acknowledged here, with why."""
        for name, fn in self.functions.items():
            for rule in ("AwsSolutions-L1", "Serverless-LambdaLatestVersion"):
                _acknowledge(
                    fn,
                    rule,
                    f"The runtime is the owner's choice (python_version, now {self.settings.python_version}): the "
                    "bundled wheels are built for it, so it moves only when the owner moves it.",
                )
            _acknowledge(fn, "Serverless-LambdaDLQ", _NO_DLQ[name])
            role = fn.role
            if not isinstance(role, iam.Role):  # pragma: no cover - every function gets its own role in _function
                continue
            _acknowledge(
                role,
                "AwsSolutions-IAM5[Resource::*]",
                "Only actions that support no resource-level permission: X-Ray's PutTraceSegments and "
                "PutTelemetryRecords, and (retention) dynamodb:ListStreams; every data action names its resource.",
            )
            for prefix in permissions.BLOB_PREFIXES:
                _acknowledge(
                    role,
                    f"AwsSolutions-IAM5[Resource::{self._nag_resource(self.bucket.arn_for_objects(prefix + '*'))}]",
                    f"The objects under {prefix!r} of the system's own bucket: one object per body, named by turn or "
                    "entry at run time, so a prefix is the narrowest resource (the actions are listed, never s3:*).",
                )
        _acknowledge(
            self.worker_function,
            "Serverless-LambdaEventSourceMappingDestination",
            "An SQS event source has no on-failure destination: the resume queue's redrive policy is its "
            "dead-letter queue (after max_receive_count receives, alarmed).",
        )
        _acknowledge(
            self.sweeper_function,
            "Serverless-LambdaAsyncFailureDestination",
            "A failed sweep is not replayed (retry_attempts=0): the next scheduled tick does the same work, and the "
            "function's errors alarm.",
        )

    def _nag_resource(self, value: str) -> str:
        """A resource as cdk-nag names it in a finding's id: a token of this stack as ``<LogicalId.Attribute>``."""
        resolved = Stack.of(self).resolve(value)
        if isinstance(resolved, str):
            return resolved
        parts: list[str] = []
        for part in resolved.get("Fn::Join", ["", [resolved]])[1]:
            if isinstance(part, str):
                parts.append(part)
            elif "Fn::GetAtt" in part:
                parts.append(f"<{part['Fn::GetAtt'][0]}.{part['Fn::GetAtt'][1]}>")
            elif "Ref" in part:
                parts.append(f"<{part['Ref']}>")
        return "".join(parts)

    def _grant_all(self) -> None:
        turns_definition = tables.TURNS_TABLE
        conversations_definition = tables.CONVERSATIONS_TABLE
        conversation_indexes = index_arns(
            self.conversations_table,
            conversations_definition,
            *(index.name for index in conversations_definition.local_indexes),
        )
        turn_objects = self.bucket.arn_for_objects(f"{permissions.TURN_BLOB_PREFIX}*")
        timeline_objects = self.bucket.arn_for_objects(f"{permissions.TIMELINE_BLOB_PREFIX}*")
        for name, fn in self.functions.items():
            access = permissions.access(name)
            statements: list[iam.PolicyStatement] = []
            if access.turn_actions:
                statements.append(
                    iam.PolicyStatement(actions=list(access.turn_actions), resources=[self.turns_table.table_arn])
                )
            if access.turn_indexes:
                statements.append(
                    iam.PolicyStatement(
                        actions=list(permissions.INDEX_QUERY),
                        resources=index_arns(self.turns_table, turns_definition, *access.turn_indexes),
                    )
                )
            if access.timeline:
                statements.append(
                    iam.PolicyStatement(
                        actions=list(permissions.TIMELINE),
                        resources=[self.conversations_table.table_arn, *conversation_indexes],
                    )
                )
            if access.list_conversations:
                statements.append(
                    iam.PolicyStatement(
                        actions=list(permissions.INDEX_QUERY),
                        resources=index_arns(
                            self.conversations_table, conversations_definition, tables.OWNER_INDEX, tables.INBOX_INDEX
                        ),
                    )
                )
            if access.blobs:
                statements.append(iam.PolicyStatement(actions=list(permissions.TURN_BLOBS), resources=[turn_objects]))
                statements.append(
                    iam.PolicyStatement(actions=list(permissions.TIMELINE_BLOBS), resources=[timeline_objects])
                )
            if access.send:
                statements.append(iam.PolicyStatement(actions=list(permissions.SEND), resources=[self.queue.queue_arn]))
            if access.purge:
                statements += self._purge_statements(conversation_indexes, turn_objects, timeline_objects)
            if access.handoff_key:
                statements.append(
                    iam.PolicyStatement(
                        actions=list(permissions.READ_SECRET), resources=[self.handoff_secret.secret_arn]
                    )
                )
            if access.invoke_model and self.settings.invokable_models:
                statements.append(
                    iam.PolicyStatement(actions=list(permissions.INVOKE_MODEL), resources=self._model_arns())
                )
            for statement in statements:
                fn.add_to_role_policy(statement)
            # access.consume: the SqsEventSource granted exactly permissions.CONSUME on the queue.

    def _purge_statements(
        self, conversation_indexes: list[str], turn_objects: str, timeline_objects: str
    ) -> list[iam.PolicyStatement]:
        return [
            iam.PolicyStatement(
                actions=list(permissions.PURGE_TIMELINE),
                resources=[self.conversations_table.table_arn, *conversation_indexes],
            ),
            iam.PolicyStatement(actions=list(permissions.PURGE_BLOBS), resources=[turn_objects, timeline_objects]),
            # The removed turn's body (its timeline's prefix is read from it); timeline bodies are never read.
            iam.PolicyStatement(actions=list(permissions.PURGE_READ_BLOBS), resources=[turn_objects]),
            # Listing is how a turn's objects are found; only under the prefixes the adapters write.
            iam.PolicyStatement(
                actions=list(permissions.LIST_BLOBS),
                resources=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}*" for prefix in permissions.BLOB_PREFIXES]}},
            ),
        ]

    def _model_arns(self) -> list[str]:
        arns: list[str] = []
        for model_id in self.settings.invokable_models:
            if model_id.startswith("arn:"):
                arns.append(model_id)
            elif model_id.startswith(_INFERENCE_PROFILE_PREFIXES):
                # A cross-region profile routes to the model in any of its regions: the profile in this
                # account, and the foundation model wherever the profile sends the request.
                base = model_id.split(".", 1)[1]
                arns.append(f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}:{Aws.ACCOUNT_ID}:inference-profile/{model_id}")
                arns.append(f"arn:{Aws.PARTITION}:bedrock:*::foundation-model/{base}")
            else:
                arns.append(f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}::foundation-model/{model_id}")
        return arns

    def _cognito(self, auth: CognitoAuth, removal: RemovalPolicy, retain: bool) -> tuple[str, list[str]]:
        pool = cognito.UserPool(
            self,
            "UserPool",
            # Accounts are made by an operator (README: admin-create-user); nobody signs themselves up.
            self_sign_up_enabled=False,
            sign_in_aliases=cognito.SignInAliases(email=True),
            auto_verify=cognito.AutoVerifiedAttrs(email=True),
            password_policy=cognito.PasswordPolicy(
                min_length=12, require_digits=True, require_lowercase=True, require_uppercase=True,
                require_symbols=True, temp_password_validity=Duration.days(3),
            ),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            mfa=cognito.Mfa.REQUIRED if auth.require_mfa else cognito.Mfa.OPTIONAL,
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
            deletion_protection=retain,
            removal_policy=removal,
        )  # fmt: skip
        client = pool.add_client(
            "ApiClient",
            # A public client (CLI, browser): no secret; password sign-in over SRP or, for curl, the plain
            # USER_PASSWORD_AUTH flow (TLS only, like every Cognito endpoint).
            generate_secret=False,
            auth_flows=cognito.AuthFlow(user_srp=True, user_password=True),
            disable_o_auth=True,
            prevent_user_existence_errors=True,
            enable_token_revocation=True,
            access_token_validity=Duration.hours(1),
            id_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.days(30),
        )
        self.user_pool, self.user_pool_client = pool, client
        if not auth.require_mfa:
            _acknowledge(
                pool,
                "AwsSolutions-COG2",
                "MFA is optional unless the owner requires it (CognitoAuth(require_mfa=True)): accounts are made by "
                "an operator, and each user may turn TOTP on.",
            )
        _acknowledge(
            pool,
            "AwsSolutions-COG8",
            "The Essentials feature plan: the Plus plan's threat protection is billed per active user, an owner's "
            "choice (set it on user_pool's L1 resource).",
        )
        # Cognito's access tokens carry the app client in "client_id", its ID tokens in "aud": API Gateway
        # checks either against the audience, so both kinds work, and tokens of another client do not.
        return pool.user_pool_provider_url, [client.user_pool_client_id]


#: Where the snapshot bucket's server access logs go in the access-log bucket.
ACCESS_LOG_PREFIX: Final = "snapshots/"


def _acknowledge(construct: Construct, rule: str, reason: str) -> None:
    """A cdk-nag finding on ``construct`` (and what it contains) that is by design, with the reason."""
    Validations.of(construct).acknowledge(Acknowledgment(id=rule, reason=reason))


#: Why no function has a Lambda dead-letter queue (Serverless-LambdaDLQ): none is invoked asynchronously with an
#: event that would be lost, except the sweeper, whose event carries nothing.
_NO_DLQ: Final[dict[str, str]] = {
    "run": "Invoked synchronously by API Gateway: a failure is the caller's answer, there is no event to keep.",
    "submit": "Invoked synchronously by API Gateway: a failure is the caller's answer, there is no event to keep.",
    "worker": "Invoked by the SQS event source: a message that keeps failing goes to the resume queue's "
    "dead-letter queue (its redrive policy), not to a function DLQ.",
    "sweeper": "Invoked by the schedule with an event that carries nothing: a failed sweep is redone by the next "
    "tick, and the function's errors alarm.",
    "retention": "Invoked by the DynamoDB stream's event source: a record that keeps failing goes to its on-failure "
    "destination, the retention dead-letter queue.",
    "agui": "Invoked synchronously through its function URL: a failure is the caller's answer (a RUN_ERROR or a "
    "problem), there is no event to keep.",
}


_RETENTION: Final = {
    1: logs.RetentionDays.ONE_DAY, 3: logs.RetentionDays.THREE_DAYS, 5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK, 14: logs.RetentionDays.TWO_WEEKS, 30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS, 90: logs.RetentionDays.THREE_MONTHS, 120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS, 180: logs.RetentionDays.SIX_MONTHS, 365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS, 545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS, 1096: logs.RetentionDays.THREE_YEARS, 1827: logs.RetentionDays.FIVE_YEARS,
    2192: logs.RetentionDays.SIX_YEARS, 2557: logs.RetentionDays.SEVEN_YEARS, 2922: logs.RetentionDays.EIGHT_YEARS,
    3288: logs.RetentionDays.NINE_YEARS, 3653: logs.RetentionDays.TEN_YEARS,
}  # fmt: skip


def retention_days(days: int) -> logs.RetentionDays:
    """The CloudWatch Logs retention of ``days`` (StackConfig accepts only the periods listed here)."""
    try:
        return _RETENTION[days]
    except KeyError:
        raise ValueError(f"no CloudWatch Logs retention of {days} days") from None


def _refuse_existing_with_props(*pairs: tuple[str, bool, str, object | None]) -> None:
    """An existing resource is used as it is: props for it would be silently ignored, so they are an error."""
    problems = [
        f"{existing} given together with {props_name}: props apply only to resources the construct creates"
        for existing, given, props_name, props in pairs
        if given and props is not None
    ]
    if problems:
        raise ConfigError("; ".join(problems))


def _function_overrides(
    function_props: FunctionProps | Mapping[FunctionName, FunctionProps] | None,
) -> dict[FunctionName, FunctionProps]:
    if function_props is None:
        return {}
    if isinstance(function_props, FunctionProps):
        return dict.fromkeys(FUNCTION_NAMES, function_props)
    unknown = sorted(set(function_props) - set(FUNCTION_NAMES))
    if unknown:
        raise ConfigError(f"function_props: no function {unknown!r}; there are {list(FUNCTION_NAMES)!r}")
    return dict(function_props)


def _worker_reservation(reserve: bool, props: FunctionProps | None, max_concurrency: int) -> int | None:
    """The worker's reserved concurrency: the team's, else (when reserving) what its queue may use."""
    if props is not None and props.reserved_concurrent_executions is not None:
        return props.reserved_concurrent_executions
    return max_concurrency if reserve else None


def _seconds(props: FunctionProps | None, default: int) -> int:
    if props is None or props.timeout is None:
        return default
    return int(props.timeout.to_seconds())
