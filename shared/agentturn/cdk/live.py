"""The live timeline and the notices, in CDK: an AppSync Events API and an EventBridge bus.

- :class:`LiveTimeline`: an ``EventApi`` whose subscribers authenticate with the same JWT as the HTTP
  API (the Cognito user pool, or the OIDC issuer and audience of ``Settings.auth``) and whose publishers
  are IAM principals (the functions' roles); one channel namespace, ``agentturn``, whose ``onSubscribe``
  handler (:data:`ON_SUBSCRIBE`, APPSYNC_JS, run by AppSync on every subscribe) refuses a channel whose
  owner segment is not the subscriber's own ``sub``: ``/agentturn/{sub}/{conversation}``. That check is
  on the server; a page cannot skip it.
- :class:`Notices`: an EventBridge bus of its own (``agentturn`` events only, so that a team's rules on it
  see nothing else, and the functions may put events on it and on no other bus).

The functions that run turns get ``appsync:EventPublish`` on that namespace alone, ``events:PutEvents``
on that bus alone, and the endpoints in ``AGENTTURN_LIVE_ENDPOINT`` / ``AGENTTURN_EVENT_BUS``.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import Stack
from aws_cdk import aws_appsync as appsync
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from agentturn.api.live_channels import NAMESPACE
from agentturn.api.live_wiring import ENV_EVENT_BUS, ENV_LIVE_ENDPOINT, ENV_NOTICES
from agentturn.cdk import permissions
from agentturn.cdk.settings import Auth, ConfigError, OidcAuth
from agentturn.listeners.notifications import TurnNotices

#: The channel namespace's handler. ``segments`` holds the namespace first: ["agentturn", sub, conversation].
#: A wildcard in the owner's place ("/agentturn/*") has fewer segments, or "*" where the sub must be: refused.
ON_SUBSCRIBE: Final = """\
import { util } from '@aws-appsync/utils';

export function onSubscribe(ctx) {
  const segments = ctx.info.channel.segments;
  const subject = ctx.identity && ctx.identity.sub;
  if (!subject || segments.length < 3 || segments[1] !== subject) {
    util.unauthorized();
  }
}
"""


class LiveTimeline(Construct):
    """The push channel of conversations: subscribe with the user's JWT, publish with IAM."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        auth: Auth,
        user_pool: cognito.IUserPool | None,
    ) -> None:
        super().__init__(scope, construct_id)
        iam_provider = appsync.AppSyncAuthProvider(authorization_type=appsync.AppSyncAuthorizationType.IAM)
        if isinstance(auth, OidcAuth):
            user_type = appsync.AppSyncAuthorizationType.OIDC
            # AppSync matches the token's client id (aud) against this regular expression.
            audience = "|".join(_regex_literal(a) for a in auth.audience)
            user_provider = appsync.AppSyncAuthProvider(
                authorization_type=user_type,
                open_id_connect_config=appsync.AppSyncOpenIdConnectConfig(
                    oidc_provider=auth.issuer, client_id=f"^({audience})$"
                ),
            )
        else:
            if user_pool is None:
                raise ConfigError("the live timeline needs the Cognito user pool the HTTP API uses")
            user_type = appsync.AppSyncAuthorizationType.USER_POOL
            user_provider = appsync.AppSyncAuthProvider(
                authorization_type=user_type, cognito_config=appsync.AppSyncCognitoConfig(user_pool=user_pool)
            )
        self.api = appsync.EventApi(
            self,
            "Api",
            api_name=f"{Stack.of(self).stack_name}-live",
            authorization_config=appsync.EventApiAuthConfig(
                auth_providers=[user_provider, iam_provider],
                # A page connects and subscribes with its JWT; only IAM principals (the functions) publish.
                connection_auth_mode_types=[user_type],
                default_subscribe_auth_mode_types=[user_type],
                default_publish_auth_mode_types=[appsync.AppSyncAuthorizationType.IAM],
            ),
        )
        self.namespace = appsync.ChannelNamespace(
            self,
            "Namespace",
            api=self.api,
            channel_namespace_name=NAMESPACE,
            code=appsync.Code.from_inline(ON_SUBSCRIBE),
        )
        #: Where the functions publish (AppSync Events' HTTP endpoint) and where pages subscribe.
        self.publish_url = f"https://{self.api.http_dns}/event"
        self.realtime_url = f"wss://{self.api.realtime_dns}/event/realtime"

    def allow_publish(self, function: lambda_.Function) -> None:
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=list(permissions.LIVE_PUBLISH),
                resources=[self.namespace.channel_namespace_arn],
            )
        )
        function.add_environment(ENV_LIVE_ENDPOINT, self.publish_url)


class Notices(Construct):
    """The bus of turn notices (``Source: agentturn``): suspensions and terminal states."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(
            self, "Bus", description="agentturn: turns waiting for a person, and turns that ended"
        )

    def allow_put(self, function: lambda_.Function, notices: TurnNotices) -> None:
        function.add_to_role_policy(
            iam.PolicyStatement(actions=list(permissions.PUT_NOTICES), resources=[self.bus.event_bus_arn])
        )
        function.add_environment(ENV_EVENT_BUS, self.bus.event_bus_name)
        function.add_environment(ENV_NOTICES, notices.value)


def _regex_literal(text: str) -> str:
    return "".join(f"\\{c}" if c in ".^$*+?()[]{}|\\" else c for c in text)
