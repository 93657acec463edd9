"""IAM, function by function: exactly the expected actions on exactly the expected resources, nothing wild.

The expectations are written out here (not derived from infra.permissions) so that widening a grant is a
visible change to this file.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest

from tests.infra.synth import Synth, refs

TIMELINE = {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}
#: Snapshots: a save discards the body it replaced. Timeline bodies: no function that runs turns deletes one.
TURN_BLOBS = {"s3:DeleteObject", "s3:GetObject", "s3:PutObject"}
TIMELINE_BLOBS = {"s3:GetObject", "s3:PutObject"}
LOGS = {"logs:CreateLogStream", "logs:PutLogEvents"}
XRAY = {"xray:PutTelemetryRecords", "xray:PutTraceSegments"}
#: ListStreams supports no resource-level permission; the stream's own reads are on its ARN.
LIST_STREAMS = {"dynamodb:ListStreams"}
STREAM_READ = {"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}
#: DeleteItem, not BatchWriteItem: IAM cannot limit BatchWriteItem to deletes, and it would grant puts too.
PURGE_TIMELINE = {"dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:UpdateItem"}
PREFIX_CONDITION = ' if {"StringLike": {"s3:prefix": ["turns/*", "conversations/*"]}}'
FUNCTIONS = ["run", "submit", "worker", "sweeper", "retention", "agui"]
CONSUME = {
    "sqs:ChangeMessageVisibility",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "sqs:ReceiveMessage",
}


def describe(value: Any) -> str:
    """A template value as a readable resource: ``Turns/index/runnable``, ``Snapshots/turns/*``, ``*``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        return str(logical_id) if attribute == "Arn" else f"{logical_id}.{attribute}"
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(describe(part) for part in parts)
    raise AssertionError(f"unexpected resource expression {value!r}")


def grants(synth: Synth, function: str) -> dict[str, set[str]]:
    """``{resource: actions}`` of every statement attached to the function's role; a statement's condition is
    written after its resource (``Snapshots if {"StringLike": ...}``)."""
    role_id = synth.logical_id(synth.system.functions[function].role)
    result: dict[str, set[str]] = defaultdict(set)
    for policy in synth.of_type("AWS::IAM::Policy").values():
        if {"Ref": role_id} not in policy["Properties"]["Roles"]:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            assert statement["Effect"] == "Allow"
            assert set(statement) <= {"Effect", "Action", "Resource", "Condition"}, statement  # no Not*
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            condition = f" if {json.dumps(statement['Condition'], sort_keys=True)}" if "Condition" in statement else ""
            for resource in resources:
                result[describe(resource) + condition] |= set(actions)
    return dict(result)


def _ids(synth: Synth) -> dict[str, str]:
    stack = synth.system
    return {
        "turns": synth.logical_id(stack.turns_table),
        "conversations": synth.logical_id(stack.conversations_table),
        "bucket": synth.logical_id(stack.bucket),
        "queue": synth.logical_id(stack.queue),
        "retention-dlq": synth.logical_id(stack.retention_dead_letter_queue),
        **{f"{name}-logs": synth.logical_id(group) for name, group in stack.log_groups.items()},
        "live-namespace": synth.logical_id(stack.live.namespace),
        "bus": synth.logical_id(stack.event_bus),
        "handoff-key": synth.logical_id(stack.handoff_secret),
    }


def _live(ids: dict[str, str]) -> dict[str, set[str]]:
    """What a function that runs turns adds: publish on the live timeline's namespace."""
    return {ids["live-namespace"] + ".ChannelNamespaceArn": {"appsync:EventPublish"}}


def _notices(ids: dict[str, str]) -> dict[str, set[str]]:
    """What the function that finds reminders and escalations due adds (the default notices): put on the bus."""
    return {ids["bus"]: {"events:PutEvents"}}


def _timeline(ids: dict[str, str]) -> dict[str, set[str]]:
    c = ids["conversations"]
    return {c: TIMELINE}


def _blobs(ids: dict[str, str]) -> dict[str, set[str]]:
    return {f"{ids['bucket']}/turns/*": TURN_BLOBS, f"{ids['bucket']}/conversations/*": TIMELINE_BLOBS}


def expected_grants(synth: Synth) -> dict[str, dict[str, set[str]]]:
    ids = _ids(synth)
    turns, queue = ids["turns"], ids["queue"]
    return {
        "run": {
            turns: {"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"},
            **_timeline(ids),
            # GET /conversations: one Query on the sparse byOwner index, and nothing more on it.
            f"{ids['conversations']}/index/byOwner": {"dynamodb:Query"},
            # GET /inbox: one Query per principal on the sparse byAssignee index, and nothing more on it.
            f"{ids['conversations']}/index/byAssignee": {"dynamodb:Query"},
            **_blobs(ids),
            queue: {"sqs:SendMessage"},
            ids["run-logs"]: LOGS,
            **_live(ids),
            "*": XRAY,
        },
        "agui": {
            # What run needs for an AG-UI request (start, resume in the request, hand off when out of time), and
            # no more: no conversations list (it serves only the AG-UI routes), no handoff key.
            turns: {"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"},
            **_timeline(ids),
            **_blobs(ids),
            queue: {"sqs:SendMessage"},
            ids["agui-logs"]: LOGS,
            **_live(ids),
            "*": XRAY,
        },
        "submit": {
            turns: {"dynamodb:GetItem", "dynamodb:UpdateItem"},
            **_timeline(ids),
            **_blobs(ids),
            queue: {"sqs:SendMessage"},
            # The key that seals the snapshot its message carries, and nothing else of Secrets Manager.
            ids["handoff-key"]: {"secretsmanager:GetSecretValue"},
            ids["submit-logs"]: LOGS,
            **_live(ids),
            "*": XRAY,
        },
        "worker": {
            turns: {"dynamodb:GetItem", "dynamodb:UpdateItem"},
            **_timeline(ids),
            **_blobs(ids),
            queue: {"sqs:SendMessage", *CONSUME},
            ids["handoff-key"]: {"secretsmanager:GetSecretValue"},
            ids["worker-logs"]: LOGS,
            **_live(ids),
            "*": XRAY,
        },
        "sweeper": {
            # By default it also closes overdue waits: what a submission would need, plus both indexes (and
            # the runnable candidates' items: the keys-only index holds no lease).
            turns: {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:UpdateItem"},
            f"{turns}/index/runnable": {"dynamodb:Query"},
            f"{turns}/index/overdue": {"dynamodb:Query"},
            **_timeline(ids),
            **_blobs(ids),
            queue: {"sqs:SendMessage"},
            ids["sweeper-logs"]: LOGS,
            **_live(ids),
            **_notices(ids),
            "*": XRAY,
        },
        "retention": {
            # Reads the turns table's stream (TTL removals only), deletes what the removed turn left.
            f"{turns}.StreamArn": STREAM_READ,
            **{resource: PURGE_TIMELINE for resource in _timeline(ids)},
            # Deletes the removed turn's objects; reads only its body (the timeline's prefix is in it).
            f"{ids['bucket']}/turns/*": {"s3:DeleteObject", "s3:GetObject"},
            f"{ids['bucket']}/conversations/*": {"s3:DeleteObject"},
            ids["bucket"] + PREFIX_CONDITION: {"s3:ListBucket"},
            ids["retention-dlq"]: {"sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"},
            ids["retention-logs"]: LOGS,
            "*": XRAY | LIST_STREAMS,
        },
    }


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_function_gets_exactly_what_it_uses(synth: Synth, function: str) -> None:
    assert grants(synth, function) == expected_grants(synth)[function]


@pytest.mark.parametrize("function", FUNCTIONS)
def test_no_wildcards_for_data(synth: Synth, function: str) -> None:
    for resource, actions in grants(synth, function).items():
        for action in actions:
            assert "*" not in action, (function, action)
        if resource == "*":
            # X-Ray's PutTraceSegments/PutTelemetryRecords and DynamoDB's ListStreams support no
            # resource-level permission.
            assert actions == (XRAY | LIST_STREAMS if function == "retention" else XRAY), (function, actions)
        else:
            assert not resource.endswith(":*") or resource.startswith("arn:"), resource


def test_only_the_worker_reads_the_queue_and_nobody_touches_the_dlq(synth: Synth) -> None:
    dlq = synth.logical_id(synth.system.dead_letter_queue)
    for function in FUNCTIONS:
        granted = grants(synth, function)
        assert not any(dlq in resource for resource in granted), function
        queue_actions = granted.get(synth.logical_id(synth.system.queue), set())
        assert bool(queue_actions & CONSUME) == (function == "worker"), function
    for policy in synth.of_type("AWS::IAM::Policy").values():
        assert dlq not in set(refs(policy["Properties"]["PolicyDocument"]))


def test_roles_have_no_managed_policies_and_trust_only_lambda(synth: Synth) -> None:
    for name, function in synth.system.functions.items():
        role = synth.resource(function.role)["Properties"]
        assert "ManagedPolicyArns" not in role, name  # no AWSLambdaBasicExecutionRole (logs:* on every group)
        assert role["AssumeRolePolicyDocument"]["Statement"] == [
            {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}
        ]


def test_no_policy_anywhere_grants_service_wide_actions(synth: Synth, variant: Synth) -> None:
    for template in (synth, variant):
        for policy in template.of_type("AWS::IAM::Policy").values():
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                assert not [a for a in actions if a.endswith(":*") or a == "*"], statement


def test_bedrock_models_are_granted_to_the_functions_that_run_turns_only(synth: Synth, variant: Synth) -> None:
    for function in ("run", "submit", "worker", "sweeper", "agui"):
        assert not any("bedrock:InvokeModel" in actions for actions in grants(synth, function).values())
    for function in ("run", "worker", "agui"):
        models = {r for r, actions in grants(variant, function).items() if "bedrock:InvokeModel" in actions}
        assert models == {
            "arn:AWS::Partition:bedrock:AWS::Region:AWS::AccountId:inference-profile/"
            "us.anthropic.claude-sonnet-4-20250514-v1:0",
            "arn:AWS::Partition:bedrock:*::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0",
            "arn:AWS::Partition:bedrock:AWS::Region::foundation-model/amazon.nova-lite-v1:0",
        }
        # ConverseStream (streamed answers) is InvokeModelWithResponseStream
        assert grants(variant, function)[next(iter(models))] == {
            "bedrock:InvokeModel",
            "bedrock:InvokeModelWithResponseStream",
        }
    for function in ("submit", "sweeper"):
        assert not any("bedrock:InvokeModel" in actions for actions in grants(variant, function).values())


def test_a_sweeper_that_does_not_expire_waits_still_finishes_cancels(synth: Synth, variant: Synth) -> None:
    # A cancel whose process died is due at once in the overdue index, and the sweeper finishes it whatever
    # expireOverdueWaits says: the same access either way (tracing off in the variant: no X-Ray).
    default = {k: v for k, v in expected_grants(synth)["sweeper"].items() if k != "*" and "Logs" not in k}
    assert {k: v for k, v in grants(variant, "sweeper").items() if "Logs" not in k} == default
    assert (
        variant.resource(variant.system.sweeper_function)["Properties"]["Environment"]["Variables"][
            "AGENTTURN_EXPIRE_OVERDUE"
        ]
        == "false"
    )
