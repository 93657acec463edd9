"""This repository's stack: the :class:`~agentturn.cdk.AgentTurn` construct with the demo agents, and outputs.

The construct has the id ``Default``, which CDK leaves out of logical ids: every resource keeps the logical
id it had when the stack built them itself, so an existing deployment updates in place (no table or bucket
is replaced).
"""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from agentturn.cdk import AgentTurn
from infra.config import StackConfig


class AgentTurnStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: StackConfig, **kwargs: object) -> None:
        super().__init__(
            scope,
            construct_id,
            description="agentturn: durable LLM agent turns that suspend for a person and resume",
            **kwargs,  # type: ignore[arg-type]  # env, synthesizer, ... as Stack takes them
        )
        self.config = config
        self.agentturn = system = AgentTurn(self, "Default", **config.props)
        outputs: dict[str, tuple[str, str]] = {
            "ApiUrl": (system.api_url, "Base URL of the HTTP API"),
            "JwtIssuer": (system.jwt_issuer, "Issuer the API's JWT authorizer accepts"),
            "TurnsTableName": (system.turns_table.table_name, "DynamoDB table of turn snapshots"),
            "ConversationsTableName": (
                system.conversations_table.table_name,
                "DynamoDB table of conversation timelines",
            ),
            "SnapshotBucketName": (system.bucket.bucket_name, "S3 bucket for snapshots too large for an item"),
            "ResumeQueueUrl": (system.queue.queue_url, "SQS queue the worker consumes"),
            "AlarmTopicArn": (system.alarm_topic.topic_arn, "SNS topic of the alarms: subscribe to it"),
            "LiveRealtimeUrl": (
                system.live.realtime_url,
                "AppSync Events WebSocket URL: subscribe to your conversations' channels with your JWT",
            ),
            "LivePublishUrl": (system.live.publish_url, "AppSync Events HTTP publish URL (IAM; the functions use it)"),
            "NoticeBusName": (system.event_bus.event_bus_name, "EventBridge bus of the turn notices: put rules on it"),
        }
        if system.ag_ui_url is not None:
            outputs["AgUiStreamUrl"] = (
                system.ag_ui_url,
                "AG-UI streamed over HTTPS (function URL): POST {url}ag-ui/{agentId} with your JWT",
            )
        if system.dead_letter_queue is not None:
            outputs["DeadLetterQueueUrl"] = (
                system.dead_letter_queue.queue_url,
                "Resume messages that failed repeatedly",
            )
        if system.user_pool is not None and system.user_pool_client is not None:
            outputs["UserPoolId"] = (system.user_pool.user_pool_id, "Cognito user pool of the API's users")
            outputs["UserPoolClientId"] = (system.user_pool_client.user_pool_client_id, "App client to sign in with")
        for name, (value, description) in outputs.items():
            CfnOutput(self, name, value=value, description=description)
