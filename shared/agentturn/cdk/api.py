"""The HTTP API: every route of :data:`agentturn.api.routes.ROUTES`, each behind the JWT authorizer.

The routes come from the same table the handlers dispatch on, grouped the same way (the run Lambda serves
``RUN_LAMBDA_GROUPS``, the submit Lambda ``SUBMIT_LAMBDA_GROUPS``), so the API and the handlers cannot
disagree about which function answers which route: a route the table gains is deployed by the next synth,
and a group that no function serves fails the synth.

Identity: API Gateway verifies the bearer token (signature against the issuer's JWKS, ``iss``, ``exp``
and ``nbf``, and ``aud`` or ``client_id`` against the audience) before a Lambda runs; a missing, expired
or foreign-audience token is answered 401 by API Gateway itself. The handlers then read only the verified
claims (``requestContext.authorizer.jwt.claims.sub``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

import jsii
from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw_v1
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from agentturn.api.routes import ROUTES, RouteGroup, RouteSpec

#: Where API Gateway looks for the token (the default, spelled out: tests assert it).
IDENTITY_SOURCE: Final = "$request.header.Authorization"

#: One JSON object per request. No request or response bodies (they hold form data): only what an
#: operator needs to follow a request into the Lambda logs (requestId) and to see who called what.
_ACCESS_LOG_FIELDS: Final = {
    "requestId": "$context.requestId",
    "requestTime": "$context.requestTimeEpoch",
    "ip": "$context.identity.sourceIp",
    "userAgent": "$context.identity.userAgent",
    "routeKey": "$context.routeKey",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integrationLatency",
    "integrationError": "$context.integrationErrorMessage",
    "authorizerError": "$context.authorizer.error",
    "subject": "$context.authorizer.claims.sub",
}


@jsii.implements(apigw.IAccessLogSettings)
class _AccessLogSettings:
    def __init__(self, log_group: logs.ILogGroup) -> None:
        self._destination = apigw.LogGroupLogDestination(log_group)
        self._format = apigw_v1.AccessLogFormat.custom(json.dumps(_ACCESS_LOG_FIELDS, separators=(",", ":")))

    @property
    def destination(self) -> apigw.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigw_v1.AccessLogFormat:
        return self._format


class AgentTurnApi(Construct):
    """The HTTP API, its ``$default`` stage (throttled, access-logged) and one JWT authorizer."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handlers: Mapping[RouteGroup, lambda_.IFunction],
        jwt_issuer: str,
        jwt_audience: list[str],
        throttle_rate: int,
        throttle_burst: int,
        cors_allowed_origins: tuple[str, ...],
        log_retention: logs.RetentionDays,
        removal_policy: RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
        missing = sorted({route.group for route in ROUTES} - set(handlers))
        if missing:
            raise ValueError(f"no function serves the route groups {missing!r}")

        self.authorizer = authorizers.HttpJwtAuthorizer(
            "JwtAuthorizer",
            jwt_issuer=jwt_issuer,
            jwt_audience=jwt_audience,
            identity_source=[IDENTITY_SOURCE],
        )
        cors = None
        if cors_allowed_origins:
            # Preflight OPTIONS requests are answered by API Gateway itself (no authorizer, no Lambda).
            cors = apigw.CorsPreflightOptions(
                allow_origins=list(cors_allowed_origins),
                allow_methods=[apigw.CorsHttpMethod.GET, apigw.CorsHttpMethod.POST],
                allow_headers=["Authorization", "Content-Type", "Idempotency-Key"],
                max_age=Duration.hours(1),
            )
        self.http_api = apigw.HttpApi(
            self,
            "HttpApi",
            description="agentturn: durable agent turns that wait for a person",
            # The $default stage is made below, with throttling and access logs the default one lacks.
            create_default_stage=False,
            cors_preflight=cors,
            # Any route added later without an explicit authorizer still gets this one.
            default_authorizer=self.authorizer,
        )
        self.access_logs = logs.LogGroup(self, "AccessLogs", retention=log_retention, removal_policy=removal_policy)
        self.stage = apigw.HttpStage(
            self,
            "DefaultStage",
            http_api=self.http_api,
            stage_name="$default",
            auto_deploy=True,
            # Per-account limits are shared by every API in the region: a runaway client of this one must
            # be throttled here (429) before it can starve the others, or run up the model bill.
            throttle=apigw.ThrottleSettings(rate_limit=throttle_rate, burst_limit=throttle_burst),
            access_log_settings=_AccessLogSettings(self.access_logs),
        )

        by_function: dict[str, integrations.HttpLambdaIntegration] = {}
        self.routes: dict[str, RouteSpec] = {}
        for route in ROUTES:
            function = handlers[route.group]
            key = function.node.path
            if key not in by_function:
                # One integration per function, shared by its routes; payload format 2.0 (what the
                # handlers' resolver and identity reader expect).
                by_function[key] = integrations.HttpLambdaIntegration(
                    f"{function.node.id}Integration",
                    function,
                    payload_format_version=apigw.PayloadFormatVersion.VERSION_2_0,
                )
            self.http_api.add_routes(
                path=route.template,
                methods=[apigw.HttpMethod(route.method)],
                integration=by_function[key],
                # Every route, the OpenAPI document included: nothing of this API is anonymous.
                authorizer=self.authorizer,
            )
            self.routes[route.route_key] = route

    @property
    def url(self) -> str:
        url = self.stage.url
        if url is None:  # only for stages of imported APIs
            raise ValueError("the stage has no URL")
        return url
