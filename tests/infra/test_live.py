"""The live timeline and the notice bus in the template: who may subscribe (the user's JWT, only to their own
channel: the namespace's handler, run here with Node), who may publish (IAM), and what the functions are told."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentturn.cdk.live import ON_SUBSCRIBE
from tests.infra.synth import Synth

LIVE_FUNCTIONS = ("run", "submit", "worker", "sweeper", "agui")


def _one(synth: Synth, resource_type: str) -> dict[str, Any]:
    [resource] = synth.of_type(resource_type).values()
    return dict(resource["Properties"])


def test_subscribers_use_the_user_pool_and_only_iam_publishes(synth: Synth) -> None:
    # GIVEN the default stack (a Cognito user pool)
    api = _one(synth, "AWS::AppSync::Api")["EventConfig"]
    pool = {"Ref": synth.logical_id(synth.system.user_pool)}

    # THEN pages connect and subscribe with the pool's tokens, and only IAM principals publish
    assert {
        "AuthType": "AMAZON_COGNITO_USER_POOLS",
        "CognitoConfig": {"AwsRegion": {"Ref": "AWS::Region"}, "UserPoolId": pool},
    } in api["AuthProviders"]
    assert api["ConnectionAuthModes"] == [{"AuthType": "AMAZON_COGNITO_USER_POOLS"}]
    assert api["DefaultSubscribeAuthModes"] == [{"AuthType": "AMAZON_COGNITO_USER_POOLS"}]
    assert api["DefaultPublishAuthModes"] == [{"AuthType": "AWS_IAM"}]
    assert "API_KEY" not in json.dumps(api)


def test_with_oidc_subscribers_use_the_same_issuer_and_audience_as_the_http_api(variant: Synth) -> None:
    # GIVEN the variant stack (an external OIDC provider, two audiences)
    api = _one(variant, "AWS::AppSync::Api")["EventConfig"]

    # THEN the event API trusts the same issuer, for exactly those client ids, and no user pool
    [oidc] = [p for p in api["AuthProviders"] if p["AuthType"] == "OPENID_CONNECT"]
    assert oidc["OpenIDConnectConfig"]["Issuer"] == "https://issuer.example.com/realms/agentturn"
    assert oidc["OpenIDConnectConfig"]["ClientId"] == "^(agentturn-api|agentturn-console)$"
    assert api["DefaultSubscribeAuthModes"] == [{"AuthType": "OPENID_CONNECT"}]
    assert api["DefaultPublishAuthModes"] == [{"AuthType": "AWS_IAM"}]
    assert "AMAZON_COGNITO_USER_POOLS" not in json.dumps(api)


def test_the_namespace_runs_the_owner_check_on_subscribe(synth: Synth) -> None:
    # GIVEN / WHEN / THEN: one namespace, "agentturn", whose code is the owner check
    namespace = _one(synth, "AWS::AppSync::ChannelNamespace")
    assert namespace["Name"] == "agentturn"
    assert namespace["CodeHandlers"] == ON_SUBSCRIBE
    assert "onSubscribe" in namespace["CodeHandlers"]


def test_functions_that_run_turns_are_told_where_to_publish(synth: Synth) -> None:
    api_id = synth.logical_id(synth.system.live.api)
    bus_id = synth.logical_id(synth.system.event_bus)
    for name, function in synth.system.functions.items():
        variables = synth.template["Resources"][synth.logical_id(function)]["Properties"]["Environment"]["Variables"]
        if name in LIVE_FUNCTIONS:
            assert variables["AGENTTURN_LIVE_ENDPOINT"] == {
                "Fn::Join": ["", ["https://", {"Fn::GetAtt": [api_id, "Dns.Http"]}, "/event"]]
            }
        else:
            assert "AGENTTURN_LIVE_ENDPOINT" not in variables, name
        # By default only the notices a wait asks for are sent (reminders, escalations): the sweeper's alone
        if name == "sweeper":
            assert variables["AGENTTURN_EVENT_BUS"] == {"Ref": bus_id}
            assert variables["AGENTTURN_NOTICES"] == "people"
        else:
            assert "AGENTTURN_EVENT_BUS" not in variables, name


# ------------------------------------------------------------------------------ the handler, in Node

_UTILS_STUB = """
export const util = {
  unauthorized() { const e = new Error('Unauthorized'); e.name = 'UnauthorizedException'; throw e; },
};
"""

_RUN = """
import { onSubscribe } from './handler.mjs';
const cases = JSON.parse(process.argv[2]);
const out = cases.map(({ path, identity }) => {
  const segments = path.split('/').filter(Boolean);
  try {
    const info = { channel: { path, segments }, channelNamespace: { name: segments[0] }, operation: 'SUBSCRIBE' };
    onSubscribe({ identity, info });
    return 'allowed';
  } catch (e) {
    return e.name;
  }
});
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def handler_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    root = tmp_path_factory.mktemp("appsync-js")
    (root / "handler.mjs").write_text(ON_SUBSCRIBE.replace("'@aws-appsync/utils'", "'./utils.mjs'"))
    (root / "utils.mjs").write_text(_UTILS_STUB)
    (root / "run.mjs").write_text(_RUN)
    return root


def _decide(handler_dir: Path, cases: list[dict[str, Any]]) -> list[str]:
    done = subprocess.run(
        ["node", str(handler_dir / "run.mjs"), json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return list(json.loads(done.stdout))


def test_the_handler_lets_a_user_subscribe_to_their_own_conversations_only(handler_dir: Path) -> None:
    alice = {"sub": "0b6e4c1a-7d2f-4a55-9a53-3f1d0e5c2b11", "username": "alice"}
    own = f"/agentturn/{alice['sub']}/4f1c2a9e0d3b4c5a6e7f8091a2b3c4d5"
    cases = [
        {"path": own, "identity": alice},  # her own conversation
        {"path": f"/agentturn/{alice['sub']}/*", "identity": alice},  # all of her own conversations
        {"path": "/agentturn/d2c3b4a5-0000-4000-8000-000000000000/4f1c2a9e", "identity": alice},  # bob's
        {"path": "/agentturn/*", "identity": alice},  # everyone's
        {"path": f"/agentturn/{alice['sub']}", "identity": alice},  # no conversation segment
        {"path": own, "identity": None},  # no identity at all
        {"path": own, "identity": {"username": "alice"}},  # an identity without a subject
    ]
    assert _decide(handler_dir, cases) == [
        "allowed",
        "allowed",
        "UnauthorizedException",
        "UnauthorizedException",
        "UnauthorizedException",
        "UnauthorizedException",
        "UnauthorizedException",
    ]
