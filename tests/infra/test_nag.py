"""cdk-nag's AWS Solutions and Serverless rule packs on the construct: every finding is fixed or acknowledged in
the construct's code, with its reason next to it; and the two the packs found that were real are fixed there:
server access logs for the snapshot bucket (on by default) and MFA that the created user pool can require.

One app, one synthesis (cdk-nag runs as a validation plugin over the whole app): the construct as it comes, the
construct with the other choice of each option, and a control stack with a bucket nobody acknowledged, which
proves the packs ran (a report without findings could also mean no plugin ran).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cdk_nag
import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template

from agentturn.cdk import AgentTurn, BucketProps, CognitoAuth

NO_BUNDLING = {"aws:cdk:bundling-stacks": []}


def nag_findings(outdir: Path) -> dict[str, set[str]]:
    """Synthesise the app with both packs: ``{construct path: rules it broke}`` from the validation report."""
    app = App(context=NO_BUNDLING, outdir=str(outdir))
    AgentTurn(Stack(app, "Default"), "AgentTurn")
    AgentTurn(
        Stack(app, "Options"),
        "AgentTurn",
        auth=CognitoAuth(require_mfa=True),
        bucket_props=BucketProps(server_access_logs=False),
    )
    s3.Bucket(Stack(app, "Control"), "Unacknowledged")
    Validations.of(app).add_plugins(cdk_nag.AwsSolutionsChecks(app), cdk_nag.ServerlessChecks(app))
    with pytest.raises(RuntimeError, match="ValidationFailed"):  # the control bucket fails it
        app.synth()
    report = json.loads((outdir / "validation-report.json").read_text())
    findings: dict[str, set[str]] = {}
    for plugin in report["pluginReports"]:
        for violation in plugin.get("violations", []):
            for resource in violation.get("violatingResources", violation.get("violatingConstructs", [])):
                findings.setdefault(resource["constructPath"], set()).add(violation["ruleName"])
    return findings


def test_the_construct_has_no_unacknowledged_finding_of_either_pack(tmp_path: Path) -> None:
    # GIVEN the construct with its defaults and with the other choice of each option, and a control bucket
    # WHEN the AWS Solutions and Serverless packs check the app
    findings = nag_findings(tmp_path)

    # THEN the only findings are the control's: every finding on the construct is fixed or acknowledged
    assert findings == {"Control/Unacknowledged/Resource": {"AwsSolutions-S1", "AwsSolutions-S10"}}


def _template(configure: Callable[[Stack], AgentTurn]) -> dict[str, Any]:
    app = App(context=NO_BUNDLING)
    stack = Stack(app, "Team")
    configure(stack)
    return Template.from_stack(stack).to_json()


def _of_type(template: dict[str, Any], resource_type: str) -> dict[str, Any]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == resource_type}


def test_the_snapshot_bucket_logs_its_access_by_default_and_the_option_turns_it_off() -> None:
    # GIVEN the construct as it comes, and with server_access_logs=False
    default = _template(lambda stack: AgentTurn(stack, "AgentTurn"))
    off = _template(lambda stack: AgentTurn(stack, "AgentTurn", bucket_props=BucketProps(server_access_logs=False)))

    # THEN by default the snapshot bucket delivers its access logs to a bucket of their own, under a policy that
    # lets only S3's log delivery write there, for this bucket (no ACL), kept a year
    buckets = _of_type(default, "AWS::S3::Bucket")
    snapshots = next(b for k, b in buckets.items() if "Snapshots" in k and "AccessLogs" not in k)
    logs_id = next(k for k in buckets if "SnapshotAccessLogs" in k)
    assert snapshots["Properties"]["LoggingConfiguration"] == {
        "DestinationBucketName": {"Ref": logs_id},
        "LogFilePrefix": "snapshots/",
    }
    logs = buckets[logs_id]["Properties"]
    assert "AccessControl" not in logs
    assert logs["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert {"ExpirationInDays": 365, "Id": "expire-access-logs", "Status": "Enabled"} in logs["LifecycleConfiguration"][
        "Rules"
    ]
    policy = next(
        p for p in _of_type(default, "AWS::S3::BucketPolicy").values() if p["Properties"]["Bucket"] == {"Ref": logs_id}
    )
    delivery = [
        s
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Principal") == {"Service": "logging.s3.amazonaws.com"}
    ]
    assert len(delivery) == 1 and delivery[0]["Action"] == "s3:PutObject" and delivery[0]["Effect"] == "Allow"
    assert set(delivery[0]["Condition"]) == {"ArnLike", "StringEquals"}
    # AND with the option off there is neither the logging nor the log bucket
    off_buckets = _of_type(off, "AWS::S3::Bucket")
    assert len(off_buckets) == 1
    assert "LoggingConfiguration" not in next(iter(off_buckets.values()))["Properties"]


@pytest.mark.parametrize(("require_mfa", "configuration"), [(False, "OPTIONAL"), (True, "ON")])
def test_the_user_pool_requires_mfa_when_asked(require_mfa: bool, configuration: str) -> None:
    # GIVEN the construct's own user pool, with MFA required or not
    template = _template(lambda stack: AgentTurn(stack, "AgentTurn", auth=CognitoAuth(require_mfa=require_mfa)))

    # THEN the pool requires (or offers) a one-time code from an authenticator app, never SMS
    (pool,) = _of_type(template, "AWS::Cognito::UserPool").values()
    assert pool["Properties"]["MfaConfiguration"] == configuration
    assert pool["Properties"]["EnabledMfas"] == ["SOFTWARE_TOKEN_MFA"]
