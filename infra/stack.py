"""The agentturn stack: tables, snapshot bucket, resume queue, four Lambdas, HTTP API, identity, alarms.

Everything a handler reads from its environment is set here from the names the handlers' code defines
(:mod:`agentturn.aws.tables` for resources, :mod:`agentturn.api.settings` for tuning), and every
permission is the list in :mod:`infra.permissions`. Nothing is granted through CDK's broad ``grant*``
helpers, which include calls the functions never make (Scan, BatchGetItem, DescribeTable, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from aws_cdk import Aws, CfnOutput, Duration, RemovalPolicy, Stack, Tags
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from agentturn.api.lambdas import SERVICE
from agentturn.api.routes import RUN_LAMBDA_GROUPS, SUBMIT_LAMBDA_GROUPS, RouteGroup
from agentturn.aws import tables
from agentturn.models import select
from infra import permissions
from infra.api import AgentTurnApi
from infra.bundling import HANDLER, DependencySpec, Target, function_code
from infra.config import StackConfig
from infra.monitoring import Alarms
from infra.storage import build_table, index_arns

#: Powertools metrics namespace (the handlers' default, set explicitly so the alarms and the code agree).
METRICS_NAMESPACE: Final = "agentturn"
#: Resume messages older than this mean the worker is failing or behind (normal pickup: seconds).
OLDEST_MESSAGE_ALARM: Final = Duration.minutes(5)
#: Geographic prefixes of Bedrock cross-region inference profiles ("us.anthropic.claude-...").
_INFERENCE_PROFILE_PREFIXES: Final = ("us.", "eu.", "apac.", "us-gov.", "jp.", "au.", "ca.", "global.")


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    description: str
    memory_mb: int
    timeout: Duration


class AgentTurnStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: StackConfig, **kwargs: object) -> None:
        super().__init__(
            scope,
            construct_id,
            description="agentturn: durable LLM agent turns that suspend for a person and resume",
            **kwargs,  # type: ignore[arg-type]  # env, synthesizer, ... as Stack takes them
        )
        self.config = config
        retain = config.retain
        removal = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
        retention = retention_days(config.log_retention_days)
        Tags.of(self).add("project", "agentturn")

        # ---------------------------------------------------------------------------------- data
        self.turns = build_table(self, tables.TURNS_TABLE, retain=retain)
        self.conversations = build_table(self, tables.CONVERSATIONS_TABLE, retain=retain)
        # No idempotency table: no handler uses one. An Idempotency-Key's record lives in the turn snapshot,
        # written by the same conditional write that applies the answer (no extra request, no window).

        self.bucket = s3.Bucket(
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
            auto_delete_objects=not retain,
        )

        # --------------------------------------------------------------------------------- queue
        self.dead_letter_queue = sqs.Queue(
            self,
            "ResumeDeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            # The longest SQS allows: time to look at a failure and redrive it.
            retention_period=Duration.days(14),
        )
        self.queue = sqs.Queue(
            self,
            "ResumeQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(config.queue_visibility_timeout_seconds),
            # A lost message is not a lost turn (the sweeper re-enqueues runnable turns), so a few days
            # suffice; the dead-letter queue keeps failures longer.
            retention_period=Duration.days(4),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letter_queue, max_receive_count=5),
        )

        # ----------------------------------------------------------------------------- functions
        spec = DependencySpec.for_target(Target.of(config))
        self.functions: dict[str, lambda_.Function] = {}
        self.log_groups: dict[str, logs.LogGroup] = {}
        for function in (
            FunctionSpec("run", "Starts turns (synchronously, handing off when out of time) and serves reads", 1024,
                         Duration.seconds(config.run_timeout_seconds)),
            FunctionSpec("submit", "Accepts form submissions, approvals, rejections and cancellations", 1024,
                         Duration.seconds(config.submit_timeout_seconds)),
            FunctionSpec("worker", "Advances runnable turns from the resume queue", 1024,
                         Duration.seconds(config.worker_timeout_seconds)),
            FunctionSpec("sweeper", "Re-enqueues runnable turns nobody is working on", 256,
                         Duration.seconds(config.sweeper_timeout_seconds)),
        ):  # fmt: skip
            self._function(function, spec, retention=retention, removal=removal)
        worker = self.functions["worker"]
        worker.add_event_source(
            event_sources.SqsEventSource(
                self.queue,
                # One record per invocation: records of a batch run one after the other, so a batch would
                # make later turns wait for the model calls of earlier ones (head-of-line blocking).
                # Partial batch responses still matter with larger batches, and keep a failed record from
                # counting as a Lambda error either way.
                batch_size=config.worker_batch_size,
                max_batching_window=(
                    Duration.seconds(config.worker_batch_window_seconds) if config.worker_batch_window_seconds else None
                ),
                report_batch_item_failures=True,
                # Caps the model calls in flight (Bedrock quotas) and the DynamoDB write rate of workers.
                max_concurrency=config.worker_max_concurrency,
            )
        )
        self._grant_all()

        # The sweeper: a fixed-rate rule; a missed tick is harmless (the next one finds the same turns).
        events.Rule(
            self,
            "SweepSchedule",
            description="Re-enqueue runnable turns whose lease expired or that were never enqueued",
            schedule=events.Schedule.rate(Duration.minutes(config.sweep_interval_minutes)),
            targets=[targets.LambdaFunction(self.functions["sweeper"], retry_attempts=0)],
        )

        # ---------------------------------------------------------------------------------- auth
        self.user_pool: cognito.UserPool | None = None
        self.user_pool_client: cognito.UserPoolClient | None = None
        if config.jwt_issuer is None:
            issuer, audience = self._cognito(removal, retain)
        else:  # an external provider (StackConfig checked that the audience is given too)
            issuer, audience = config.jwt_issuer, list(config.jwt_audience)

        # ----------------------------------------------------------------------------------- api
        handlers: dict[RouteGroup, lambda_.IFunction] = {}
        for group in RUN_LAMBDA_GROUPS:
            handlers[group] = self.functions["run"]
        for group in SUBMIT_LAMBDA_GROUPS:
            handlers[group] = self.functions["submit"]
        self.api = AgentTurnApi(
            self,
            "Api",
            handlers=handlers,
            jwt_issuer=issuer,
            jwt_audience=audience,
            throttle_rate=config.api_throttle_rate,
            throttle_burst=config.api_throttle_burst,
            cors_allowed_origins=config.cors_allowed_origins,
            log_retention=retention,
            removal_policy=removal,
        )

        # ------------------------------------------------------------------------------- alarms
        self.alarms = Alarms(
            self,
            "Alarms",
            queue=self.queue,
            dead_letter_queue=self.dead_letter_queue,
            functions=self.functions,
            http_api=self.api.http_api,
            oldest_message_threshold=OLDEST_MESSAGE_ALARM,
            alarm_email=config.alarm_email,
            metrics_namespace=METRICS_NAMESPACE,
            service=SERVICE,
        )

        # ------------------------------------------------------------------------------ outputs
        outputs: dict[str, tuple[str, str]] = {
            "ApiUrl": (self.api.url, "Base URL of the HTTP API"),
            "JwtIssuer": (issuer, "Issuer the API's JWT authorizer accepts"),
            "TurnsTableName": (self.turns.table_name, "DynamoDB table of turn snapshots"),
            "ConversationsTableName": (self.conversations.table_name, "DynamoDB table of conversation timelines"),
            "SnapshotBucketName": (self.bucket.bucket_name, "S3 bucket for snapshots too large for an item"),
            "ResumeQueueUrl": (self.queue.queue_url, "SQS queue the worker consumes"),
            "DeadLetterQueueUrl": (self.dead_letter_queue.queue_url, "Resume messages that failed repeatedly"),
            "AlarmTopicArn": (self.alarms.topic.topic_arn, "SNS topic of the alarms: subscribe to it"),
        }
        if self.user_pool is not None and self.user_pool_client is not None:
            outputs["UserPoolId"] = (self.user_pool.user_pool_id, "Cognito user pool of the API's users")
            outputs["UserPoolClientId"] = (self.user_pool_client.user_pool_client_id, "App client to sign in with")
        for name, (value, description) in outputs.items():
            CfnOutput(self, name, value=value, description=description)

    # ------------------------------------------------------------------------------------ parts

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
        days = self.config.snapshot_object_expiration_days
        if days is not None:
            # Opt-in: a spilled snapshot is rewritten on every save, so its age is the time since the turn's
            # last change. Only safe if no turn waits (for a person) longer than this.
            rules.append(
                s3.LifecycleRule(id="expire-old-turn-snapshots", prefix="turns/", expiration=Duration.days(days))
            )
        return rules

    def _environment(self, name: str) -> dict[str, str]:
        config = self.config
        env = {
            tables.ENV_TURNS_TABLE: self.turns.table_name,
            tables.ENV_CONVERSATIONS_TABLE: self.conversations.table_name,
            tables.ENV_RESUME_QUEUE_URL: self.queue.queue_url,
            "AGENTTURN_AGENTS": config.agents,
            "POWERTOOLS_SERVICE_NAME": SERVICE,
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            "POWERTOOLS_TRACE_DISABLED": "false" if config.tracing else "true",
        }
        if permissions.access(name, expire_overdue=config.expire_overdue_waits).blobs:
            # A sweeper that only re-enqueues decides from the index projection alone: without the bucket
            # it makes no S3 client (and it has no S3 permission either).
            env[tables.ENV_SNAPSHOT_BUCKET] = self.bucket.bucket_name
        if name == "sweeper":
            # Said either way: the handlers' own default must not decide what IAM was granted for.
            env["AGENTTURN_EXPIRE_OVERDUE"] = "true" if config.expire_overdue_waits else "false"
        if config.default_agent is not None:
            env["AGENTTURN_DEFAULT_AGENT"] = config.default_agent
        if config.bedrock_model_id is not None:
            # What agentturn.models.select reads; every function that may load the agents sees the same
            # model (only run and worker call it, and only they may invoke it).
            env[select.MODEL_VAR] = "bedrock"
            env[select.BEDROCK_MODEL_ID_VAR] = config.bedrock_model_id
        if config.terminal_ttl_days is not None:
            env["AGENTTURN_TERMINAL_TTL_SECONDS"] = str(config.terminal_ttl_days * 86_400)
        return env

    def _function(self, function: FunctionSpec, spec: DependencySpec, *, retention: logs.RetentionDays,
                  removal: RemovalPolicy) -> None:  # fmt: skip
        title = function.name.capitalize()
        # An explicit log group: its retention and removal are part of the stack (the implicit one Lambda
        # creates lives forever), and the role may write to it and nothing else.
        log_group = logs.LogGroup(self, f"{title}Logs", retention=retention, removal_policy=removal)
        # An explicit role without AWSLambdaBasicExecutionRole, whose logs:* statements cover every log
        # group of the account.
        role = iam.Role(
            self,
            f"{title}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"agentturn {function.name} function",
        )
        role.add_to_policy(iam.PolicyStatement(actions=list(permissions.LOGS), resources=[log_group.log_group_arn]))
        fn = lambda_.Function(
            self,
            f"{title}Function",
            description=f"agentturn {function.name}: {function.description}",
            runtime=lambda_.Runtime(f"python{self.config.python_version}", lambda_.RuntimeFamily.PYTHON),
            architecture=lambda_.Architecture.ARM_64
            if self.config.architecture == "arm64"
            else lambda_.Architecture.X86_64,
            handler=HANDLER,
            code=function_code(function.name, spec),
            memory_size=function.memory_mb,
            timeout=function.timeout,
            environment=self._environment(function.name),
            role=role,
            log_group=log_group,
            tracing=lambda_.Tracing.ACTIVE if self.config.tracing else lambda_.Tracing.DISABLED,
            # The sweeper runs again at the next tick: Lambda's own async retries would only overlap it.
            retry_attempts=0 if function.name == "sweeper" else None,
        )
        self.functions[function.name] = fn
        self.log_groups[function.name] = log_group

    def _grant_all(self) -> None:
        turns_definition = tables.TURNS_TABLE
        conversations_definition = tables.CONVERSATIONS_TABLE
        conversation_indexes = index_arns(
            self.conversations,
            conversations_definition,
            *(index.name for index in conversations_definition.local_indexes),
        )
        blob_objects = [self.bucket.arn_for_objects(f"{prefix}*") for prefix in permissions.BLOB_PREFIXES]
        for name, fn in self.functions.items():
            access = permissions.access(name, expire_overdue=self.config.expire_overdue_waits)
            statements: list[iam.PolicyStatement] = []
            if access.turn_actions:
                statements.append(
                    iam.PolicyStatement(actions=list(access.turn_actions), resources=[self.turns.table_arn])
                )
            if access.turn_indexes:
                statements.append(
                    iam.PolicyStatement(
                        actions=list(permissions.INDEX_QUERY),
                        resources=index_arns(self.turns, turns_definition, *access.turn_indexes),
                    )
                )
            if access.timeline:
                statements.append(
                    iam.PolicyStatement(
                        actions=list(permissions.TIMELINE),
                        resources=[self.conversations.table_arn, *conversation_indexes],
                    )
                )
            if access.blobs:
                statements.append(iam.PolicyStatement(actions=list(permissions.BLOBS), resources=blob_objects))
            if access.send:
                statements.append(iam.PolicyStatement(actions=list(permissions.SEND), resources=[self.queue.queue_arn]))
            if access.invoke_model and self.config.invokable_models:
                statements.append(
                    iam.PolicyStatement(actions=list(permissions.INVOKE_MODEL), resources=self._model_arns())
                )
            for statement in statements:
                fn.add_to_role_policy(statement)
            # access.consume: the SqsEventSource granted exactly permissions.CONSUME on the queue.

    def _model_arns(self) -> list[str]:
        arns: list[str] = []
        for model_id in self.config.invokable_models:
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

    def _cognito(self, removal: RemovalPolicy, retain: bool) -> tuple[str, list[str]]:
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
            mfa=cognito.Mfa.OPTIONAL,
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
        # Cognito's access tokens carry the app client in "client_id", its ID tokens in "aud": API Gateway
        # checks either against the audience, so both kinds work, and tokens of another client do not.
        return pool.user_pool_provider_url, [client.user_pool_client_id]


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
