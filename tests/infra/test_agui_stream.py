"""The streamed AG-UI route in the template: a function URL in RESPONSE_STREAM mode in front of a function that the
Lambda Web Adapter layer runs, verifying the same issuer and audience as the HTTP API's JWT authorizer."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template

from agentturn.cdk import AgentTurn, AgUiStreamingProps, ConfigError, FunctionProps
from agentturn.cdk.settings import web_adapter_layer_arn
from tests.infra.synth import Synth, refs

NO_BUNDLING = {"aws:cdk:bundling-stacks": []}


def _agui(synth: Synth) -> dict[str, Any]:
    assert synth.system.agui_function is not None
    return synth.resource(synth.system.agui_function)["Properties"]  # type: ignore[no-any-return]


def _authorizer(synth: Synth) -> dict[str, Any]:
    (authorizer,) = synth.of_type("AWS::ApiGatewayV2::Authorizer").values()
    return authorizer["Properties"]["JwtConfiguration"]  # type: ignore[no-any-return]


def test_the_function_url_streams_and_leaves_authentication_to_the_function(synth: Synth) -> None:
    (url,) = synth.of_type("AWS::Lambda::Url").values()
    properties = url["Properties"]
    assert properties["InvokeMode"] == "RESPONSE_STREAM"
    # A browser's Cognito/OIDC token cannot sign IAM requests: the function verifies it (as the authorizer does).
    assert properties["AuthType"] == "NONE"
    assert properties["TargetFunctionArn"] == {"Fn::GetAtt": [synth.logical_id(synth.system.agui_function), "Arn"]}
    assert "Cors" not in properties  # no CORS unless the API has origins


def test_anyone_may_invoke_the_url_and_only_through_the_url(synth: Synth) -> None:
    # The resource policy: InvokeFunctionUrl for an unauthenticated URL, and InvokeFunction only via the URL.
    function = synth.logical_id(synth.system.agui_function)
    permissions = [
        p["Properties"] for p in synth.of_type("AWS::Lambda::Permission").values() if function in set(refs(p))
    ]
    assert sorted(permissions, key=lambda p: p["Action"]) == [
        {"Action": "lambda:InvokeFunction", "FunctionName": {"Fn::GetAtt": [function, "Arn"]},
         "InvokedViaFunctionUrl": True, "Principal": "*"},
        {"Action": "lambda:InvokeFunctionUrl", "FunctionName": {"Fn::GetAtt": [function, "Arn"]},
         "FunctionUrlAuthType": "NONE", "Principal": "*"},
    ]  # fmt: skip


def test_the_web_adapter_layer_runs_the_entry_and_streams(synth: Synth) -> None:
    properties = _agui(synth)
    assert properties["Handler"] == "run.sh"
    assert properties["Runtime"] == "python3.12"
    # AWS's published layer for the architecture, in the stack's region
    assert synth.stack.resolve(properties["Layers"]) == [
        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":lambda:", {"Ref": "AWS::Region"},
                           ":753240598075:layer:LambdaAdapterLayerX86:26"]]}
    ]  # fmt: skip
    variables = properties["Environment"]["Variables"]
    assert {k: variables[k] for k in variables if k.startswith("AWS_")} == {
        "AWS_LAMBDA_EXEC_WRAPPER": "/opt/bootstrap",
        "AWS_LWA_INVOKE_MODE": "response_stream",
        "AWS_LWA_PORT": "8080",
        "AWS_LWA_READINESS_CHECK_PROTOCOL": "tcp",
    }
    # no API Gateway 30 s limit in front of it: two minutes, then the worker continues the turn
    assert (properties["MemorySize"], properties["Timeout"]) == (1024, 120)


def test_the_function_verifies_the_issuer_and_audience_of_the_http_api(synth: Synth, variant: Synth) -> None:
    for template in (synth, variant):
        variables = _agui(template)["Environment"]["Variables"]
        authorizer = _authorizer(template)
        assert variables["AGENTTURN_JWT_ISSUER"] == authorizer["Issuer"]
        audience = variables["AGENTTURN_JWT_AUDIENCE"]
        if isinstance(audience, str):
            assert audience.split(",") == authorizer["Audience"]
        else:
            assert [audience] == authorizer["Audience"]
    assert _agui(variant)["Environment"]["Variables"]["AGENTTURN_JWT_AUDIENCE"] == "agentturn-api,agentturn-console"


def test_the_variant_gets_the_arm64_layer_and_the_apis_cors_origins(variant: Synth) -> None:
    layers = variant.stack.resolve(_agui(variant)["Layers"])
    assert "LambdaAdapterLayerArm64:26" in str(layers)
    (url,) = variant.of_type("AWS::Lambda::Url").values()
    assert url["Properties"]["Cors"] == {
        "AllowHeaders": ["Authorization", "Content-Type"],
        "AllowMethods": ["GET", "POST"],
        "AllowOrigins": ["https://console.example.com"],
        "MaxAge": 3600,
    }


def test_the_stack_outputs_the_streamed_url(synth: Synth) -> None:
    output = synth.template["Outputs"]["AgUiStreamUrl"]["Value"]
    assert output == {"Fn::GetAtt": [synth.logical_id(synth.system.ag_ui_function_url), "FunctionUrl"]}


def test_the_published_layer_per_region_and_architecture() -> None:
    assert web_adapter_layer_arn("x86_64", "eu-west-1") == (
        "arn:aws:lambda:eu-west-1:753240598075:layer:LambdaAdapterLayerX86:26"
    )
    assert web_adapter_layer_arn("arm64", "us-east-2") == (
        "arn:aws:lambda:us-east-2:753240598075:layer:LambdaAdapterLayerArm64:26"
    )
    assert web_adapter_layer_arn("x86_64", "cn-north-1") == (
        "arn:aws-cn:lambda:cn-north-1:041581134020:layer:LambdaAdapterLayerX86:26"
    )


def _template(**kwargs: Any) -> tuple[AgentTurn, dict[str, Any]]:
    app = App(context=NO_BUNDLING)
    stack = Stack(app, "Team")
    system = AgentTurn(stack, "AgentTurn", **kwargs)
    return system, Template.from_stack(stack).to_json()


def test_options_an_own_layer_a_longer_timeout_or_no_streamed_function() -> None:
    # GIVEN a layer of the team's own and a five-minute timeout
    own = "arn:aws:lambda:eu-west-1:111122223333:layer:MyAdapter:3"
    system, template = _template(
        ag_ui_streaming=AgUiStreamingProps(web_adapter_layer_arn=own),
        function_props={"agui": FunctionProps(timeout=None, memory_size=2048)},
    )
    functions = {k: v for k, v in template["Resources"].items() if v["Type"] == "AWS::Lambda::Function"}
    (agui,) = [v["Properties"] for k, v in functions.items() if "Agui" in k]
    assert agui["Layers"] == [own]
    assert agui["MemorySize"] == 2048
    # AND the team's tools may run in it (an AG-UI resume runs the turn on in the request)
    assert system.agui_function in system.tool_functions
    # GIVEN streaming turned off THEN there is no such function and no function URL
    system, template = _template(ag_ui_streaming=AgUiStreamingProps(enabled=False))
    assert system.agui_function is None
    assert system.ag_ui_url is None
    assert not [v for v in template["Resources"].values() if v["Type"] == "AWS::Lambda::Url"]
    assert "agui" not in system.functions


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (AgUiStreamingProps(web_adapter_layer_arn="LambdaAdapterLayerX86"), "not a Lambda layer version ARN"),
        (AgUiStreamingProps(web_adapter_layer_arn="arn:aws:lambda:eu-west-1:1:layer:X:1"), "not a Lambda layer"),
    ],
)
def test_a_layer_that_is_no_layer_version_arn_is_refused(props: AgUiStreamingProps, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        AgentTurn(Stack(App(context=NO_BUNDLING), "Team"), "AgentTurn", ag_ui_streaming=props)
