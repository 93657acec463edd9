"""The synthesised template: resources, their key properties, the wiring between them and the handlers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match

from agentturn.api.routes import ROUTES, RUN_LAMBDA_GROUPS, SUBMIT_LAMBDA_GROUPS
from agentturn.api.settings import Settings
from agentturn.aws import tables
from agentturn.cdk.settings import VISIBILITY_TIMEOUT_FACTOR
from tests.infra.synth import Synth, refs

FUNCTIONS = ("run", "submit", "worker", "sweeper", "retention")


def _function(synth: Synth, name: str) -> dict[str, Any]:
    return synth.resource(synth.system.functions[name])["Properties"]


# ------------------------------------------------------------------------------------------------ tables


@pytest.mark.parametrize("definition", [tables.TURNS_TABLE, tables.CONVERSATIONS_TABLE], ids=lambda d: d.logical_name)
def test_tables_are_built_from_the_shared_definitions(synth: Synth, definition: tables.TableDefinition) -> None:
    table = {"Turns": synth.system.turns_table, "Conversations": synth.system.conversations_table}[
        definition.logical_name
    ]
    properties = synth.resource(table)["Properties"]
    expected = definition.create_table_request("unused")

    assert properties["KeySchema"] == expected["KeySchema"]
    assert sorted(properties["AttributeDefinitions"], key=str) == sorted(expected["AttributeDefinitions"], key=str)

    def indexes(items: list[dict[str, Any]]) -> dict[str, Any]:
        return {i["IndexName"]: (i["KeySchema"], i["Projection"]) for i in items}

    assert indexes(properties.get("GlobalSecondaryIndexes", [])) == indexes(expected.get("GlobalSecondaryIndexes", []))
    assert indexes(properties.get("LocalSecondaryIndexes", [])) == indexes(expected.get("LocalSecondaryIndexes", []))
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert properties["TimeToLiveSpecification"] == {"AttributeName": definition.ttl_attribute, "Enabled": True}
    assert properties["DeletionProtectionEnabled"] is True
    assert "TableName" not in properties  # generated: several stacks can share an account


def test_stateful_resources_are_retained_by_default(synth: Synth) -> None:
    stack = synth.system
    for construct in (
        stack.turns_table,
        stack.conversations_table,
        stack.bucket,
        stack.access_log_bucket,
        stack.user_pool,
        *stack.log_groups.values(),
    ):
        resource = synth.resource(construct)
        assert resource["DeletionPolicy"] == "Retain", resource["Type"]
        assert resource["UpdateReplacePolicy"] == "Retain", resource["Type"]


def test_dev_stacks_destroy_everything(variant: Synth) -> None:
    stack = variant.system
    assert stack.access_log_bucket is not None
    for construct in (
        stack.turns_table,
        stack.conversations_table,
        stack.bucket,
        stack.access_log_bucket,
        *stack.log_groups.values(),
    ):
        assert variant.resource(construct)["DeletionPolicy"] == "Delete"
    assert variant.resource(stack.turns_table)["Properties"]["DeletionProtectionEnabled"] is False
    # A bucket cannot be deleted with objects in it: the stack empties the snapshot and access-log buckets first.
    variant.assertions.resource_count_is("Custom::S3AutoDeleteObjects", 2)


def test_no_idempotency_table(synth: Synth) -> None:
    # No handler uses one: an Idempotency-Key's record lives in the turn snapshot (see the wiring test below,
    # which proves the handlers start without IDEMPOTENCY_TABLE).
    synth.assertions.resource_count_is("AWS::DynamoDB::Table", 2)
    for function in FUNCTIONS:
        assert tables.ENV_IDEMPOTENCY_TABLE not in _function(synth, function)["Environment"]["Variables"]


# ------------------------------------------------------------------------------------------------ bucket


def test_snapshot_bucket_is_private_encrypted_versioned_and_expires_old_versions(synth: Synth) -> None:
    properties = synth.resource(synth.system.bucket)["Properties"]
    assert properties["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert properties["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]
    assert properties["VersioningConfiguration"] == {"Status": "Enabled"}
    assert properties["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    rules = {rule["Id"]: rule for rule in properties["LifecycleConfiguration"]["Rules"]}
    assert rules["expire-replaced-versions"]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 35}
    assert rules["expire-replaced-versions"]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    assert rules["remove-expired-delete-markers"]["ExpiredObjectDeleteMarker"] is True
    # By default no current object ever expires: a turn may wait for a person for weeks.
    assert all("ExpirationInDays" not in rule for rule in rules.values())


def test_snapshot_prefix_expiry_is_opt_in(variant: Synth) -> None:
    rules = variant.resource(variant.system.bucket)["Properties"]["LifecycleConfiguration"]["Rules"]
    (expiry,) = [rule for rule in rules if rule["Id"] == "expire-old-turn-snapshots"]
    assert expiry == {
        "Id": "expire-old-turn-snapshots",
        "Prefix": "turns/",
        "ExpirationInDays": 400,
        "Status": "Enabled",
    }


def test_bucket_and_queues_refuse_plain_http(synth: Synth) -> None:
    deny_insecure = Match.object_like(
        {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}, "Principal": {"AWS": "*"}}
    )
    synth.assertions.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": synth.logical_id(synth.system.bucket)},
            "PolicyDocument": {"Statement": Match.array_with([deny_insecure])},
        },
    )
    for queue in (synth.system.queue, synth.system.dead_letter_queue):
        synth.assertions.has_resource_properties(
            "AWS::SQS::QueuePolicy",
            {
                "Queues": [{"Ref": synth.logical_id(queue)}],
                "PolicyDocument": {"Statement": Match.array_with([deny_insecure])},
            },
        )


# ------------------------------------------------------------------------------------------------ queues


@pytest.mark.parametrize("which", ["synth", "variant"])
def test_resume_queue_redrives_to_the_dlq_and_outlasts_the_worker(which: str, request: pytest.FixtureRequest) -> None:
    synth: Synth = request.getfixturevalue(which)
    queue = synth.resource(synth.system.queue)["Properties"]
    dlq_id = synth.logical_id(synth.system.dead_letter_queue)
    assert queue["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]}, "maxReceiveCount": 5}
    worker_timeout = _function(synth, "worker")["Timeout"]
    assert queue["VisibilityTimeout"] >= VISIBILITY_TIMEOUT_FACTOR * worker_timeout
    assert queue["SqsManagedSseEnabled"] is True
    dlq = synth.resources[dlq_id]["Properties"]
    assert dlq["SqsManagedSseEnabled"] is True
    assert dlq["MessageRetentionPeriod"] == 14 * 24 * 3600
    assert "FifoQueue" not in queue  # standard queue: duplicates are harmless, ordering is per turn anyway


def _mapping_of(synth: Synth, function: str) -> dict[str, Any]:
    function_ref = {"Ref": synth.logical_id(synth.system.functions[function])}  # type: ignore[index]
    mappings = synth.of_type("AWS::Lambda::EventSourceMapping").values()
    (mapping,) = [m for m in mappings if m["Properties"]["FunctionName"] == function_ref]
    return mapping


def test_worker_consumes_the_queue_with_partial_batch_failures(synth: Synth) -> None:
    properties = _mapping_of(synth, "worker")["Properties"]
    assert properties["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert properties["EventSourceArn"] == {"Fn::GetAtt": [synth.logical_id(synth.system.queue), "Arn"]}
    assert properties["FunctionName"] == {"Ref": synth.logical_id(synth.system.functions["worker"])}
    assert properties["BatchSize"] == 1
    assert "MaximumBatchingWindowInSeconds" not in properties
    assert properties["ScalingConfig"] == {"MaximumConcurrency": 20}


def test_batch_size_and_window_are_configurable(variant: Synth) -> None:
    mapping = _mapping_of(variant, "worker")
    assert mapping["Properties"]["BatchSize"] == 4
    assert mapping["Properties"]["MaximumBatchingWindowInSeconds"] == 2
    assert mapping["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


# --------------------------------------------------------------------------------------------- functions


@pytest.mark.parametrize("name", FUNCTIONS)
def test_functions_runtime_and_logging(synth: Synth, name: str) -> None:
    properties = _function(synth, name)
    assert properties["Runtime"] == "python3.12"
    assert properties["Architectures"] == ["x86_64"]
    assert properties["Handler"] == "app.handler"
    assert properties["TracingConfig"] == {"Mode": "Active"}
    log_group = synth.system.log_groups[name]
    assert properties["LoggingConfig"] == {"LogGroup": {"Ref": synth.logical_id(log_group)}}
    assert synth.resource(log_group)["Properties"]["RetentionInDays"] == 30


def test_function_sizing(synth: Synth) -> None:
    sizes = {name: (_function(synth, name)["MemorySize"], _function(synth, name)["Timeout"]) for name in FUNCTIONS}
    # run answers within API Gateway's 30 s integration timeout (it hands off to the worker before that).
    assert sizes == {
        "run": (1024, 29),
        "submit": (1024, 15),
        "worker": (1024, 300),
        "sweeper": (256, 60),
        "retention": (256, 300),
    }


def test_active_tracing_without_the_sdk_by_default(synth: Synth) -> None:
    # Lambda's own X-Ray tracing costs no import; Powertools' Tracer (the X-Ray SDK, ~0.25 s of every cold
    # start) stays off unless sdk_tracing asks for it.
    for name in FUNCTIONS:
        properties = _function(synth, name)
        assert properties["TracingConfig"] == {"Mode": "Active"}
        assert properties["Environment"]["Variables"]["POWERTOOLS_TRACE_DISABLED"] == "true"


def test_variant_architecture_and_tracing(variant: Synth) -> None:
    for name in FUNCTIONS:
        properties = _function(variant, name)
        assert properties["Architectures"] == ["arm64"]
        assert "TracingConfig" not in properties or properties["TracingConfig"] == {"Mode": "PassThrough"}
        assert properties["Environment"]["Variables"]["POWERTOOLS_TRACE_DISABLED"] == "true"
    assert variant.resource(variant.system.log_groups["run"])["Properties"]["RetentionInDays"] == 90


def test_sweeper_runs_on_a_schedule_without_retries(synth: Synth) -> None:
    (rule,) = synth.of_type("AWS::Events::Rule").values()
    properties = rule["Properties"]
    assert properties["ScheduleExpression"] == "rate(1 minute)"
    (target,) = properties["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [synth.logical_id(synth.system.functions["sweeper"]), "Arn"]}
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 0}
    synth.assertions.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {"FunctionName": {"Ref": synth.logical_id(synth.system.functions["sweeper"])}, "MaximumRetryAttempts": 0},
    )


def _placeholder_env(synth: Synth, name: str) -> dict[str, str]:
    """The function's environment with each reference replaced by a plausible value of its kind."""
    stack = synth.system
    values = {
        synth.logical_id(stack.turns_table): "agentturn-test-turns",
        synth.logical_id(stack.conversations_table): "agentturn-test-conversations",
        synth.logical_id(stack.bucket): "agentturn-test-snapshots",
        synth.logical_id(stack.queue): "https://sqs.us-east-1.amazonaws.com/123456789012/agentturn-test-resume",
        synth.logical_id(stack.live.api): "https://example.appsync-api.us-east-1.amazonaws.com/event",
        synth.logical_id(stack.event_bus): "agentturn-test-notices",
        synth.logical_id(stack.handoff_secret): "arn:aws:secretsmanager:us-east-1:123456789012:secret:handoff-AbCdEf",
    }
    env: dict[str, str] = {}
    for key, value in _function(synth, name)["Environment"]["Variables"].items():
        if isinstance(value, str):
            env[key] = value
        else:
            (target,) = refs(value)
            env[key] = values[target]
    return env


@pytest.mark.parametrize("name", FUNCTIONS)
def test_environment_names_the_right_resources(synth: Synth, name: str) -> None:
    variables = _function(synth, name)["Environment"]["Variables"]
    stack = synth.system
    assert variables[tables.ENV_TURNS_TABLE] == {"Ref": synth.logical_id(stack.turns_table)}
    assert variables[tables.ENV_CONVERSATIONS_TABLE] == {"Ref": synth.logical_id(stack.conversations_table)}
    assert variables[tables.ENV_RESUME_QUEUE_URL] == {"Ref": synth.logical_id(stack.queue)}
    # Every function may load a spilled snapshot (the sweeper to expire overdue waits).
    assert variables[tables.ENV_SNAPSHOT_BUCKET] == {"Ref": synth.logical_id(stack.bucket)}
    assert variables["AGENTTURN_AGENTS"] == Settings().agents
    assert variables["POWERTOOLS_SERVICE_NAME"] == "agentturn"
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "agentturn"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_handlers_can_wire_themselves_from_the_environment(synth: Synth, name: str) -> None:
    """The handlers' own configuration code accepts what the stack sets (names reconciled, nothing missing)."""
    from agentturn.api.wiring import services_from_env

    env = _placeholder_env(synth, name)
    services = services_from_env(env)  # builds clients and adapters; makes no request
    assert services.settings == Settings.from_env(env)


def test_variant_environment_tuning(variant: Synth) -> None:
    settings = Settings.from_env(_placeholder_env(variant, "worker"))
    assert settings.terminal_ttl_seconds == 30 * 86_400
    sweeper = Settings.from_env(_placeholder_env(variant, "sweeper"))
    assert not sweeper.expire_overdue
    # It still finishes stranded cancels, which loads snapshots (possibly spilled to the bucket).
    assert tables.ENV_SNAPSHOT_BUCKET in _placeholder_env(variant, "sweeper")


def test_by_default_the_sweeper_expires_overdue_waits(synth: Synth) -> None:
    sweeper = Settings.from_env(_placeholder_env(synth, "sweeper"))
    assert sweeper.expire_overdue
    # Expiring a wait loads the snapshot, which may be spilled to the bucket.
    assert tables.ENV_SNAPSHOT_BUCKET in _placeholder_env(synth, "sweeper")


@pytest.mark.parametrize("name", ["run", "submit", "worker"])
def test_bedrock_model_reaches_the_model_selection(variant: Synth, synth: Synth, name: str) -> None:
    from agentturn.aws.bedrock import BedrockConverseModel
    from agentturn.models import chat_model_from_env

    model = chat_model_from_env(_placeholder_env(variant, name))
    assert isinstance(model, BedrockConverseModel)
    assert model.model_id == "us.anthropic.claude-sonnet-4-20250514-v1:0"
    assert chat_model_from_env(_placeholder_env(synth, name)) is None  # default: the demo model


# --------------------------------------------------------------------------------------------------- api


def _routes(synth: Synth) -> dict[str, dict[str, Any]]:
    return {r["Properties"]["RouteKey"]: r["Properties"] for r in synth.of_type("AWS::ApiGatewayV2::Route").values()}


def test_every_route_of_the_route_table_is_deployed(synth: Synth) -> None:
    assert set(_routes(synth)) == {route.route_key for route in ROUTES}


@pytest.mark.parametrize("which", ["synth", "variant"])
def test_no_route_without_the_jwt_authorizer(which: str, request: pytest.FixtureRequest) -> None:
    synth: Synth = request.getfixturevalue(which)
    (authorizer_id,) = synth.of_type("AWS::ApiGatewayV2::Authorizer")
    routes = _routes(synth)
    assert routes
    for key, route in routes.items():
        assert route.get("AuthorizationType") == "JWT", key
        assert route.get("AuthorizerId") == {"Ref": authorizer_id}, key


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.route_key)
def test_routes_go_to_the_function_that_serves_their_group(synth: Synth, route: Any) -> None:
    target = _routes(synth)[route.route_key]["Target"]
    (integration_id,) = refs(target)
    integration = synth.resources[integration_id]["Properties"]
    assert integration["IntegrationType"] == "AWS_PROXY"
    assert integration["PayloadFormatVersion"] == "2.0"
    if route.group in RUN_LAMBDA_GROUPS:
        expected = "run"
    else:
        assert route.group in SUBMIT_LAMBDA_GROUPS
        expected = "submit"
    assert integration["IntegrationUri"] == {"Fn::GetAtt": [synth.logical_id(synth.system.functions[expected]), "Arn"]}


def test_cognito_authorizer_checks_issuer_audience_and_header(synth: Synth) -> None:
    (authorizer,) = synth.of_type("AWS::ApiGatewayV2::Authorizer").values()
    properties = authorizer["Properties"]
    assert properties["AuthorizerType"] == "JWT"
    assert properties["IdentitySource"] == ["$request.header.Authorization"]
    assert properties["JwtConfiguration"] == {
        "Issuer": {"Fn::GetAtt": [synth.logical_id(synth.system.user_pool), "ProviderURL"]},
        "Audience": [{"Ref": synth.logical_id(synth.system.user_pool_client)}],
    }


def test_external_identity_provider_replaces_cognito(variant: Synth) -> None:
    (authorizer,) = variant.of_type("AWS::ApiGatewayV2::Authorizer").values()
    assert authorizer["Properties"]["JwtConfiguration"] == {
        "Issuer": "https://issuer.example.com/realms/agentturn",
        "Audience": ["agentturn-api", "agentturn-console"],
    }
    variant.assertions.resource_count_is("AWS::Cognito::UserPool", 0)
    assert "UserPoolId" not in variant.template["Outputs"]


def test_user_pool_is_admin_only_and_the_client_is_public(synth: Synth) -> None:
    pool = synth.resource(synth.system.user_pool)["Properties"]
    assert pool["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    assert pool["Policies"]["PasswordPolicy"]["MinimumLength"] >= 12
    assert pool["DeletionProtection"] == "ACTIVE"
    client = synth.resource(synth.system.user_pool_client)["Properties"]
    assert client["GenerateSecret"] is False
    assert set(client["ExplicitAuthFlows"]) == {
        "ALLOW_USER_PASSWORD_AUTH",
        "ALLOW_USER_SRP_AUTH",
        "ALLOW_REFRESH_TOKEN_AUTH",
    }
    assert client["PreventUserExistenceErrors"] == "ENABLED"


def test_stage_is_throttled_and_access_logged(synth: Synth) -> None:
    (stage,) = synth.of_type("AWS::ApiGatewayV2::Stage").values()
    properties = stage["Properties"]
    assert properties["StageName"] == "$default"
    assert properties["AutoDeploy"] is True
    assert properties["DefaultRouteSettings"] == {"ThrottlingBurstLimit": 100, "ThrottlingRateLimit": 50}
    access = properties["AccessLogSettings"]
    assert access["DestinationArn"] == {"Fn::GetAtt": [synth.logical_id(synth.system.http_api.access_logs), "Arn"]}
    assert "$context.requestId" in access["Format"]
    assert "$context.authorizer.error" in access["Format"]


def test_cors_is_off_by_default_and_configurable(synth: Synth, variant: Synth) -> None:
    (api,) = synth.of_type("AWS::ApiGatewayV2::Api").values()
    assert "CorsConfiguration" not in api["Properties"]
    (api,) = variant.of_type("AWS::ApiGatewayV2::Api").values()
    assert api["Properties"]["CorsConfiguration"]["AllowOrigins"] == ["https://console.example.com"]


def test_api_may_invoke_only_its_functions_from_its_own_routes(synth: Synth) -> None:
    api_id = synth.logical_id(synth.system.http_api.http_api)
    permissions = [p["Properties"] for p in synth.of_type("AWS::Lambda::Permission").values()]
    from_api = [p for p in permissions if p["Principal"] == "apigateway.amazonaws.com"]
    assert len(from_api) == len(ROUTES)
    for permission in from_api:
        assert api_id in set(refs(permission["SourceArn"]))


# ------------------------------------------------------------------------------------------------ alarms


def _alarm(synth: Synth, name: str) -> dict[str, Any]:
    return synth.resource(synth.system.alarms.alarms[name])["Properties"]


def test_alarms_on_dlq_depth_worker_errors_and_message_age(synth: Synth) -> None:
    stack = synth.system
    topic = {"Ref": synth.logical_id(stack.alarms.topic)}

    dlq = _alarm(synth, "DeadLetterQueueNotEmpty")
    assert (dlq["Namespace"], dlq["MetricName"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert dlq["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": [synth.logical_id(stack.dead_letter_queue), "QueueName"]}}
    ]
    assert (dlq["ComparisonOperator"], dlq["Threshold"]) == ("GreaterThanThreshold", 0)

    age = _alarm(synth, "ResumeQueueOldestMessageAge")
    assert (age["Namespace"], age["MetricName"]) == ("AWS/SQS", "ApproximateAgeOfOldestMessage")
    assert age["Dimensions"][0]["Value"] == {"Fn::GetAtt": [synth.logical_id(stack.queue), "QueueName"]}

    errors = _alarm(synth, "WorkerErrors")
    assert (errors["Namespace"], errors["MetricName"]) == ("AWS/Lambda", "Errors")
    assert errors["Dimensions"] == [
        {"Name": "FunctionName", "Value": {"Ref": synth.logical_id(stack.functions["worker"])}}
    ]

    failed = _alarm(synth, "WorkerRecordsFailed")
    assert (failed["Namespace"], failed["MetricName"]) == ("agentturn", "RecordsFailed")

    for alarm in synth.of_type("AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"]["AlarmActions"] == [topic]
        assert alarm["Properties"]["TreatMissingData"] == "notBreaching"


def test_every_function_has_an_error_alarm(synth: Synth) -> None:
    for name in FUNCTIONS:
        assert _alarm(synth, f"{name.capitalize()}Errors")["MetricName"] == "Errors"


def test_alarm_email_subscription(synth: Synth, variant: Synth) -> None:
    synth.assertions.resource_count_is("AWS::SNS::Subscription", 0)
    variant.assertions.has_resource_properties(
        "AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "oncall@example.com"}
    )


# ----------------------------------------------------------------------------------------------- outputs


def test_outputs(synth: Synth) -> None:
    outputs = synth.template["Outputs"]
    stack = synth.system
    expected_refs = {
        "TurnsTableName": stack.turns_table,
        "ConversationsTableName": stack.conversations_table,
        "SnapshotBucketName": stack.bucket,
        "ResumeQueueUrl": stack.queue,
        "DeadLetterQueueUrl": stack.dead_letter_queue,
        "UserPoolId": stack.user_pool,
        "UserPoolClientId": stack.user_pool_client,
        "AlarmTopicArn": stack.alarms.topic,
    }
    for name, construct in expected_refs.items():
        assert outputs[name]["Value"] == {"Ref": synth.logical_id(construct)}, name
    api_url = outputs["ApiUrl"]["Value"]
    assert synth.logical_id(stack.http_api.http_api) in set(refs(api_url))
    assert "execute-api" in str(api_url)
    assert outputs["JwtIssuer"]["Value"] == {"Fn::GetAtt": [synth.logical_id(stack.user_pool), "ProviderURL"]}
    assert outputs["NoticeBusName"]["Value"] == {"Ref": synth.logical_id(stack.event_bus)}
    event_api = synth.logical_id(stack.live.api)
    assert event_api in set(refs(outputs["LiveRealtimeUrl"]["Value"]))
    assert event_api in set(refs(outputs["LivePublishUrl"]["Value"]))
    assert "/event/realtime" in str(outputs["LiveRealtimeUrl"]["Value"])


def test_template_is_environment_agnostic(synth: Synth) -> None:
    # Deploys to the account and region of the deploying credentials; no account id or region is baked in.
    text = str(synth.template)
    assert "123456789012" not in text
    assert "us-east-1" not in text


def test_ttl_removals_of_turns_and_only_those_reach_the_retention_function(synth: Synth) -> None:
    # GIVEN the turns table's stream WHEN the template is read THEN it carries old images, and the retention
    # function's source filters on DynamoDB's own TTL deletions, retries in halves, and parks failures
    turns = synth.resource(synth.system.turns_table)["Properties"]
    assert turns["StreamSpecification"] == {"StreamViewType": "OLD_IMAGE"}
    properties = _mapping_of(synth, "retention")["Properties"]
    assert properties["EventSourceArn"] == {"Fn::GetAtt": [synth.logical_id(synth.system.turns_table), "StreamArn"]}
    (pattern,) = properties["FilterCriteria"]["Filters"]
    assert json.loads(pattern["Pattern"]) == {
        "eventName": ["REMOVE"],
        "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
    }
    assert properties["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert properties["BisectBatchOnFunctionError"] is True
    assert properties["MaximumRetryAttempts"] == 8
    dead_letters = synth.logical_id(synth.system.retention_dead_letter_queue)
    assert properties["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": [dead_letters, "Arn"]}
    variables = _function(synth, "retention")["Environment"]["Variables"]
    assert variables[tables.ENV_CONVERSATIONS_TABLE] == {"Ref": synth.logical_id(synth.system.conversations_table)}
    assert variables[tables.ENV_SNAPSHOT_BUCKET] == {"Ref": synth.logical_id(synth.system.bucket)}


def test_the_worker_reserves_what_its_queue_may_use(synth: Synth) -> None:
    # A burst of synchronous runs cannot take the concurrency that resumes need; the others reserve none.
    assert _function(synth, "worker")["ReservedConcurrentExecutions"] == 20
    for name in ("run", "submit", "sweeper", "retention"):
        assert "ReservedConcurrentExecutions" not in _function(synth, name), name


def test_every_function_has_a_throttle_alarm(synth: Synth) -> None:
    for name, function in synth.system.functions.items():
        alarm = synth.resource(synth.system.alarms.alarms[f"{name.capitalize()}Throttles"])["Properties"]
        assert alarm["MetricName"] == "Throttles"
        assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": synth.logical_id(function)}}]
        assert alarm["Threshold"] == 1
    dead_letters = synth.resource(synth.system.alarms.alarms["RetentionDeadLetterQueueNotEmpty"])["Properties"]
    assert dead_letters["Dimensions"] == [
        {"Name": "QueueName",
         "Value": {"Fn::GetAtt": [synth.logical_id(synth.system.retention_dead_letter_queue), "QueueName"]}}
    ]  # fmt: skip


def test_turns_that_could_not_run_raise_an_alarm(synth: Synth) -> None:
    # The worker's own metrics (Powertools EMF, "service" dimension): a turn ended FAILED after its bounded
    # attempts, or after its model failed through every retry.
    for alarm_name in ("TurnsUnrunnable", "ModelRetriesExhausted"):
        alarm = synth.resource(synth.system.alarms.alarms[alarm_name])["Properties"]
        assert (alarm["Namespace"], alarm["MetricName"]) == ("agentturn", alarm_name)
        assert alarm["Dimensions"] == [{"Name": "service", "Value": "agentturn"}]
        assert alarm["Threshold"] == 1
