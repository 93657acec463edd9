"""The AgentTurn construct in a team's own stack: existing resources, props, tool grants, identity.

Each test builds its own small app (bundling skipped: these read the template, not the Lambda code).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Callable
from typing import Any, Final

# Before aws_cdk starts its jsii (Node) process: no end-of-life banner, no telemetry.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from agentturn.cdk import AgentTurn, ApiProps, ConfigError, FunctionProps, OidcAuth, QueueProps, TableProps, TurnNotices

ACCOUNT: Final = "123456789012"
TURNS_ARN: Final = f"arn:aws:dynamodb:eu-west-1:{ACCOUNT}:table/team-turns"
TURNS_STREAM_ARN: Final = f"{TURNS_ARN}/stream/2026-12-01T00:00:00.000"
CONVERSATIONS_ARN: Final = f"arn:aws:dynamodb:eu-west-1:{ACCOUNT}:table/team-conversations"
QUEUE_ARN: Final = f"arn:aws:sqs:eu-west-1:{ACCOUNT}:team-resume"
BUCKET: Final = "team-snapshots"
BUCKET_ARN: Final = f"arn:aws:s3:::{BUCKET}"

TIMELINE: Final = {
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
}
TURN_BLOBS: Final = {"s3:DeleteObject", "s3:GetObject", "s3:PutObject"}
TIMELINE_BLOBS: Final = {"s3:GetObject", "s3:PutObject"}
CONSUME: Final = {
    "sqs:ChangeMessageVisibility",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "sqs:ReceiveMessage",
}


def build(configure: Callable[[Stack], AgentTurn]) -> tuple[AgentTurn, dict[str, Any]]:
    app = App(context={"aws:cdk:bundling-stacks": []})
    stack = Stack(app, "Team")
    system = configure(stack)
    return system, Template.from_stack(stack).to_json()


def of_type(template: dict[str, Any], resource_type: str) -> dict[str, Any]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == resource_type}


def _resource_name(value: Any) -> str:
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(_resource_name(p) for p in parts)
    if "Ref" in value:
        return str(value["Ref"])
    return "{}.{}".format(*value["Fn::GetAtt"])


def grants(template: dict[str, Any], system: AgentTurn, function: str) -> dict[str, set[str]]:
    stack = Stack.of(system)
    role_id = stack.resolve(system.functions[function].role.node.default_child.logical_id)  # type: ignore[union-attr]
    result: dict[str, set[str]] = defaultdict(set)
    for policy in of_type(template, "AWS::IAM::Policy").values():
        if {"Ref": role_id} not in policy["Properties"]["Roles"]:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for resource in resources:
                result[_resource_name(resource)] |= set(actions)
    return {
        resource: actions
        for resource, actions in result.items()
        if not resource.startswith(f"{function.capitalize()}Logs") and "Logs" not in resource and resource != "*"
    }


def with_existing_resources(stack: Stack) -> AgentTurn:
    return AgentTurn(
        stack,
        "AgentTurn",
        existing_turns_table=dynamodb.Table.from_table_attributes(
            stack, "Turns", table_arn=TURNS_ARN, table_stream_arn=TURNS_STREAM_ARN
        ),
        existing_conversations_table=dynamodb.Table.from_table_arn(stack, "Conversations", CONVERSATIONS_ARN),
        existing_queue=sqs.Queue.from_queue_arn(stack, "Queue", QUEUE_ARN),
        existing_bucket=s3.Bucket.from_bucket_arn(stack, "Bucket", BUCKET_ARN),
        expire_overdue_waits=False,
    )


@pytest.fixture(scope="module")
def existing() -> tuple[AgentTurn, dict[str, Any]]:
    return build(with_existing_resources)


def test_existing_resources_are_used_and_none_is_created(existing: tuple[AgentTurn, dict[str, Any]]) -> None:
    # GIVEN existing tables, queue and bucket WHEN the construct is built THEN it creates none of them
    system, template = existing
    assert of_type(template, "AWS::DynamoDB::Table") == {}
    assert of_type(template, "AWS::DynamoDB::GlobalTable") == {}
    assert of_type(template, "AWS::S3::Bucket") == {}
    # The only queue it makes is the retention function's own dead-letter queue, never a resume queue.
    assert [
        q for q in of_type(template, "AWS::SQS::Queue") if not q.startswith("AgentTurnRetentionDeadLetterQueue")
    ] == []
    assert system.dead_letter_queue is None  # an imported queue's redrive target is not known here
    # AND the functions are wired to them
    variables = next(iter(of_type(template, "AWS::Lambda::Function").values()))["Properties"]["Environment"][
        "Variables"
    ]
    assert variables["TURNS_TABLE"] == "team-turns"
    assert variables["CONVERSATIONS_TABLE"] == "team-conversations"
    assert variables["SNAPSHOT_BUCKET"] == BUCKET
    mappings = of_type(template, "AWS::Lambda::EventSourceMapping").values()
    assert {
        m["Properties"]["EventSourceArn"] for m in mappings if isinstance(m["Properties"]["EventSourceArn"], str)
    } == {
        QUEUE_ARN,
        TURNS_STREAM_ARN,
    }


def test_existing_resources_get_exactly_what_the_functions_use(existing: tuple[AgentTurn, dict[str, Any]]) -> None:
    system, template = existing
    timeline = {CONVERSATIONS_ARN: TIMELINE}
    blobs = {f"{BUCKET_ARN}/turns/*": TURN_BLOBS, f"{BUCKET_ARN}/conversations/*": TIMELINE_BLOBS}
    expected = {
        "run": {TURNS_ARN: {"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"},
                **timeline, f"{CONVERSATIONS_ARN}/index/byOwner": {"dynamodb:Query"},
                f"{CONVERSATIONS_ARN}/index/byAssignee": {"dynamodb:Query"}, **blobs,
                QUEUE_ARN: {"sqs:SendMessage"}},
        "submit": {TURNS_ARN: {"dynamodb:GetItem", "dynamodb:UpdateItem"}, **timeline, **blobs,
                   QUEUE_ARN: {"sqs:SendMessage"}},
        "worker": {TURNS_ARN: {"dynamodb:GetItem", "dynamodb:UpdateItem"}, **timeline, **blobs,
                   QUEUE_ARN: {"sqs:SendMessage", *CONSUME}},
        # It finishes stranded cancels (and, by default, expires overdue waits): load, save, project.
        "sweeper": {TURNS_ARN: {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:UpdateItem"},
                    f"{TURNS_ARN}/index/runnable": {"dynamodb:Query"}, f"{TURNS_ARN}/index/overdue": {"dynamodb:Query"},
                    **timeline, **blobs, QUEUE_ARN: {"sqs:SendMessage"}},
    }  # fmt: skip
    # Each function that runs turns also publishes on the live timeline and puts notices (both made here).
    stack = Stack.of(system)
    namespace = stack.resolve(system.live.namespace.node.default_child.logical_id)  # type: ignore[union-attr]
    bus = stack.resolve(system.event_bus.node.default_child.logical_id)  # type: ignore[union-attr]
    live = {f"{namespace}.ChannelNamespaceArn": {"appsync:EventPublish"}}
    # Only the sweeper puts notices by default: the reminders and escalations it finds due.
    expected["sweeper"][f"{bus}.Arn"] = {"events:PutEvents"}
    # submit seals the snapshot a resume message carries and the worker checks it: the key's secret is made here.
    handoff_key = stack.resolve(system.handoff_secret.node.default_child.logical_id)  # type: ignore[union-attr]
    for function in ("submit", "worker"):
        expected[function][handoff_key] = {"secretsmanager:GetSecretValue"}
    for function, wanted in expected.items():
        assert grants(template, system, function) == {**wanted, **live}, function
    retention = grants(template, system, "retention")
    assert retention[TURNS_STREAM_ARN] == {
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
    }
    assert retention[BUCKET_ARN] == {"s3:ListBucket"}
    assert retention[CONVERSATIONS_ARN] == {"dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:UpdateItem"}
    assert retention[f"{BUCKET_ARN}/conversations/*"] == {"s3:DeleteObject"}


def test_an_existing_turns_table_without_a_stream_gets_no_retention_function() -> None:
    system, template = build(
        lambda stack: AgentTurn(
            stack, "AgentTurn", existing_turns_table=dynamodb.Table.from_table_arn(stack, "Turns", TURNS_ARN)
        )
    )
    assert system.retention_function is None
    assert "retention" not in system.functions
    functions = of_type(template, "AWS::Lambda::Function")
    assert len(functions) == 5  # run, submit, worker, sweeper, agui
    assert not [name for name in functions if "Retention" in name]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"existing_queue": "queue", "queue_props": QueueProps(max_receive_count=3)}, "existing_queue"),
        ({"existing_bucket": "bucket", "bucket_props": object()}, "existing_bucket"),
        ({"existing_turns_table": "turns", "existing_conversations_table": "conversations",
          "table_props": TableProps(point_in_time_recovery=False)}, "table_props"),
    ],
)  # fmt: skip
def test_an_existing_resource_with_props_for_it_is_refused(arguments: dict[str, Any], message: str) -> None:
    def configure(stack: Stack) -> AgentTurn:
        resolved = {
            "queue": lambda: sqs.Queue.from_queue_arn(stack, "Q", QUEUE_ARN),
            "bucket": lambda: s3.Bucket.from_bucket_name(stack, "B", BUCKET),
            "turns": lambda: dynamodb.Table.from_table_arn(stack, "T", TURNS_ARN),
            "conversations": lambda: dynamodb.Table.from_table_arn(stack, "C", CONVERSATIONS_ARN),
        }
        kwargs = {k: resolved[v]() if isinstance(v, str) and v in resolved else v for k, v in arguments.items()}
        return AgentTurn(stack, "AgentTurn", **kwargs)

    with pytest.raises(ConfigError, match=message):
        build(configure)


def test_grant_tools_reaches_exactly_the_functions_that_run_tools() -> None:
    # GIVEN a tool that writes to the team's own table
    statement = iam.PolicyStatement(
        actions=["dynamodb:PutItem"], resources=[f"arn:aws:dynamodb:eu-west-1:{ACCOUNT}:table/orders"]
    )

    def configure(stack: Stack) -> AgentTurn:
        system = AgentTurn(stack, "AgentTurn")
        system.grant_tools(statement)
        return system

    # WHEN it is granted THEN run, worker and the streamed AG-UI function (where tools run) hold it, and no other
    system, template = build(configure)
    orders = f"arn:aws:dynamodb:eu-west-1:{ACCOUNT}:table/orders"
    holders = {name for name in system.functions if orders in grants(template, system, name)}
    assert holders == {"run", "worker", "agui"}
    assert grants(template, system, "worker")[orders] == {"dynamodb:PutItem"}


def test_function_props_override_one_function_and_api_props_the_stage() -> None:
    def configure(stack: Stack) -> AgentTurn:
        vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=0)
        isolated = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
        worker = FunctionProps(
            memory_size=2048, timeout=Duration.minutes(10), environment={"TEAM": "a"}, vpc=vpc, vpc_subnets=isolated
        )
        return AgentTurn(
            stack,
            "AgentTurn",
            function_props={"worker": worker, "run": FunctionProps(reserved_concurrent_executions=5)},
            api_props=ApiProps(
                throttle_rate=7, throttle_burst=9, cors_allowed_origins=("https://console.example.com",)
            ),
            auth=OidcAuth("https://issuer.example.com", "team-console"),
        )

    system, template = build(configure)
    functions = {
        name: Stack.of(system).resolve(fn.node.default_child.logical_id) for name, fn in system.functions.items()
    }  # type: ignore[union-attr]
    worker = template["Resources"][functions["worker"]]["Properties"]
    assert (worker["MemorySize"], worker["Timeout"]) == (2048, 600)
    assert worker["Environment"]["Variables"]["TEAM"] == "a"
    assert "VpcConfig" in worker
    queue = next(
        iter(q for k, q in of_type(template, "AWS::SQS::Queue").items() if k.startswith("AgentTurnResumeQueue"))
    )
    assert queue["Properties"]["VisibilityTimeout"] == 6 * 600  # follows the worker's new timeout
    assert template["Resources"][functions["run"]]["Properties"]["ReservedConcurrentExecutions"] == 5
    assert "VpcConfig" not in template["Resources"][functions["submit"]]["Properties"]
    (stage,) = of_type(template, "AWS::ApiGatewayV2::Stage").values()
    assert stage["Properties"]["DefaultRouteSettings"] == {"ThrottlingBurstLimit": 9, "ThrottlingRateLimit": 7}
    (api,) = of_type(template, "AWS::ApiGatewayV2::Api").values()
    assert api["Properties"]["CorsConfiguration"]["AllowOrigins"] == ["https://console.example.com"]
    (authorizer,) = of_type(template, "AWS::ApiGatewayV2::Authorizer").values()
    assert authorizer["Properties"]["JwtConfiguration"] == {
        "Audience": ["team-console"],
        "Issuer": "https://issuer.example.com",
    }
    assert system.user_pool is None
    assert of_type(template, "AWS::Cognito::UserPool") == {}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"function_props": {"worker": FunctionProps(environment={"TURNS_TABLE": "mine"})}}, "sets"),
        ({"function_props": {"scheduler": FunctionProps()}}, "no function"),
        ({"function_props": {"run": FunctionProps(timeout=Duration.seconds(31))}}, "run timeout"),
        ({"function_props": {"worker": FunctionProps(reserved_concurrent_executions=5)}}, "reserved concurrency"),
        ({"code": ["no/such/folder"]}, "does not exist"),
        ({"requirements": ["--index-url=https://example.com"]}, "pip options"),
        ({"auth": OidcAuth("http://issuer.example.com", "x")}, "https://"),
    ],
)
def test_props_the_system_cannot_run_with_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build(lambda stack: AgentTurn(stack, "AgentTurn", **kwargs))


def test_the_worker_reservation_can_be_turned_off() -> None:
    system, template = build(lambda stack: AgentTurn(stack, "AgentTurn", reserve_worker_concurrency=False))
    worker = Stack.of(system).resolve(system.worker_function.node.default_child.logical_id)  # type: ignore[union-attr]
    assert "ReservedConcurrentExecutions" not in template["Resources"][worker]["Properties"]


def test_sdk_tracing_turns_powertools_tracer_on_only_with_active_tracing() -> None:
    # GIVEN systems asking for the SDK's subsegments, with and without X-Ray active tracing
    for tracing, expected in ((True, "false"), (False, "true")):
        # WHEN they are synthesised
        _, template = build(lambda stack, t=tracing: AgentTurn(stack, "AgentTurn", tracing=t, sdk_tracing=True))  # type: ignore[misc]
        functions = of_type(template, "AWS::Lambda::Function").values()
        variables = [f["Properties"]["Environment"]["Variables"] for f in functions if "Environment" in f["Properties"]]
        # THEN Powertools traces only where X-Ray records the invocation
        assert variables and {
            v["POWERTOOLS_TRACE_DISABLED"] for v in variables if "POWERTOOLS_TRACE_DISABLED" in v
        } == {expected}


def test_every_created_resource_is_exposed() -> None:
    system, _ = build(lambda stack: AgentTurn(stack, "AgentTurn"))
    for attribute in ("api", "turns_table", "conversations_table", "queue", "dead_letter_queue", "bucket",
                      "run_function", "submit_function", "worker_function", "sweeper_function", "retention_function",
                      "user_pool", "user_pool_client", "alarm_topic"):  # fmt: skip
        assert getattr(system, attribute) is not None, attribute
    assert system.api_url


def test_team_requirements_join_agentturns_in_one_resolution(tmp_path: Any) -> None:
    # GIVEN a team requirements file with comments WHEN it is read for the bundle THEN its requirements follow
    # agentturn's, they change the cache key, and the installed versions pin them (the tests' versions ship)
    from agentturn.cdk.bundling import DependencySpec, local_target
    from agentturn.cdk.settings import read_requirements

    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# tools need these\nsix>=1.16  # a pure-Python wheel\n\n")
    extra = read_requirements(str(requirements))
    assert extra == ("six>=1.16",)
    alone = DependencySpec.for_target(local_target())
    with_team = DependencySpec.for_target(local_target(), extra)
    assert with_team.requirements == (*alone.requirements, "six>=1.16")
    assert with_team.key != alone.key
    assert "six" in dict(with_team.pins)


@pytest.mark.parametrize(
    ("notices", "senders", "put"),
    [
        (TurnNotices.NONE, 0, False),
        (TurnNotices.PEOPLE, 1, True),
        (TurnNotices.ALL, 5, True),
    ],
)
def test_only_the_functions_that_send_the_wanted_notices_know_the_bus(
    notices: TurnNotices, senders: int, put: bool
) -> None:
    # GIVEN a team's choice of turn notices
    _, template = build(lambda stack: AgentTurn(stack, "AgentTurn", notices=notices))
    functions = of_type(template, "AWS::Lambda::Function").values()
    variables = [f["Properties"].get("Environment", {}).get("Variables", {}) for f in functions]
    policies = json.dumps(of_type(template, "AWS::IAM::Policy"))
    # THEN only the functions that send them are told of the bus, with which notices, and may put on it
    told = [v for v in variables if "AGENTTURN_EVENT_BUS" in v]
    assert len(told) == senders
    assert all(v["AGENTTURN_NOTICES"] == notices.value for v in told)
    assert ("events:PutEvents" in policies) is put
    # AND the live timeline is published whatever the choice
    assert any("AGENTTURN_LIVE_ENDPOINT" in v for v in variables)


@pytest.mark.parametrize(
    ("given", "meant"), [(True, TurnNotices.ALL), (False, TurnNotices.NONE), ("people", TurnNotices.PEOPLE)]
)
def test_notices_written_as_a_bool_keep_what_they_meant_before_the_kinds(given: object, meant: TurnNotices) -> None:
    # GIVEN an app written when notices was a bool (True: every notice; False: none), or one naming a kind in words
    from agentturn.cdk.settings import notice_kinds

    # THEN it is read as the kinds that send the same notices (True never quietly becomes the PEOPLE default)
    assert notice_kinds(given) is meant  # type: ignore[arg-type]


def test_a_misspelt_notices_choice_is_refused_at_synth_naming_the_choices() -> None:
    # GIVEN a team that misspells its notices choice
    # THEN synth refuses it, naming the value and what it may be, before anything is built
    with pytest.raises(
        ConfigError, match=r"notices must be a TurnNotices \('all', 'people', 'none'\) or a bool, not 'peeple'"
    ):
        build(lambda stack: AgentTurn(stack, "AgentTurn", notices="peeple"))  # type: ignore[arg-type]


def test_every_function_skips_pydantic_plugin_scan_unless_the_team_wants_its_plugin() -> None:
    # GIVEN a system with defaults, and one whose worker bundles a pydantic plugin of its own
    _, defaults = build(lambda stack: AgentTurn(stack, "AgentTurn"))
    worker_props = FunctionProps(environment={"PYDANTIC_DISABLE_PLUGINS": ""})
    _, with_plugin = build(lambda stack: AgentTurn(stack, "AgentTurn", function_props={"worker": worker_props}))

    def plugin_settings(template: dict[str, Any]) -> dict[str, str | None]:
        functions = of_type(template, "AWS::Lambda::Function")
        return {
            logical_id: f["Properties"]["Environment"]["Variables"].get("PYDANTIC_DISABLE_PLUGINS")
            for logical_id, f in functions.items()
            if f["Properties"].get("Handler") != "index.handler"  # CDK's own helper functions
        }

    # WHEN they are synthesised
    # THEN every agentturn function skips pydantic's scan of the installed distributions (no plugin ships)
    assert set(plugin_settings(defaults).values()) == {"__all__"}
    # AND a team may turn the plugins back on for one function: its setting wins, the others keep the default
    chosen = plugin_settings(with_plugin)
    assert sorted(chosen.values(), key=str) == ["", *["__all__"] * (len(chosen) - 1)]
    assert [key for key, value in chosen.items() if value == ""] == [
        key for key in chosen if key.startswith("AgentTurnWorkerFunction")
    ]
