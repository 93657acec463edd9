"""CloudWatch alarms on the signals that mean a person's answer is stuck or lost, published to one topic.

- **DLQ depth > 0**: a resume message failed ``maxReceiveCount`` times. The turn is still runnable in the
  table (the sweeper will offer it again), but something fails deterministically: look now.
- **Oldest message age**: the worker is not keeping up, or is failing and retrying (a record reported as
  a batch item failure is retried after the visibility timeout, so its age passes the threshold).
- **The worker's failed records and the sweeper's failed sends** (the handlers' own metrics), and **turns
  that ended FAILED because they could not run** or because the model failed through every retry.
- **Throttles of each function**: its reserved concurrency (the worker's) or the account's is used up.
- **Retention dead-letter queue**: a removed turn's timeline entries or objects could not be deleted.
- **Errors of each function**: the worker's invocation errors (crashes, timeouts; a failed record of a
  partial batch response is not an error and shows up in the queue and failed-records alarms), the
  sweeper's (if it stops, lost enqueues are never repaired), and the API functions' (a 5xx for a caller).
- **API 5xx**: what callers see, including integration timeouts that no Lambda metric counts.

Missing data is "not breaching": an idle system (no invocations, empty queues) is healthy.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from agentturn.cdk.settings import FunctionName


class Alarms(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        queue: sqs.IQueue,
        dead_letter_queue: sqs.IQueue | None,
        retention_dead_letter_queue: sqs.IQueue | None,
        functions: Mapping[FunctionName, lambda_.IFunction],
        http_api: apigw.IHttpApi,
        oldest_message_threshold: Duration,
        alarm_email: str | None,
        metrics_namespace: str,
        service: str,
    ) -> None:
        super().__init__(scope, construct_id)
        # Not KMS-encrypted on purpose: CloudWatch can only publish to a topic encrypted with a customer
        # managed key, and alarm notifications carry no data (metric names and thresholds).
        self.topic = sns.Topic(self, "Topic", display_name="agentturn alarms", enforce_ssl=True)
        if alarm_email is not None:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        self.alarms: dict[str, cloudwatch.Alarm] = {}

        if dead_letter_queue is not None:  # None: an existing queue whose dead-letter queue is not known here
            self._add(
                "DeadLetterQueueNotEmpty",
                dead_letter_queue.metric_approximate_number_of_messages_visible(
                    period=Duration.minutes(1), statistic=cloudwatch.Stats.MAXIMUM
                ),
                threshold=0,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                description="Resume messages reached the dead-letter queue: a turn failed to advance repeatedly.",
            )
        self._add(
            "ResumeQueueOldestMessageAge",
            queue.metric_approximate_age_of_oldest_message(
                period=Duration.minutes(1), statistic=cloudwatch.Stats.MAXIMUM
            ),
            threshold=oldest_message_threshold.to_seconds(),
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=3,
            description="Resume messages wait too long: the worker is failing or not keeping up.",
        )
        if retention_dead_letter_queue is not None:
            self._add(
                "RetentionDeadLetterQueueNotEmpty",
                retention_dead_letter_queue.metric_approximate_number_of_messages_visible(
                    period=Duration.minutes(5), statistic=cloudwatch.Stats.MAXIMUM
                ),
                threshold=0,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                description="A removed turn's timeline or objects could not be deleted: retention is not kept.",
            )
        for name, function in functions.items():
            # Throttled invocations: the worker's reserved concurrency is used up (resumes wait), or the
            # account's concurrency is (every function waits). Either way people wait for answers.
            self._add(
                f"{name.capitalize()}Throttles",
                function.metric_throttles(period=Duration.minutes(5), statistic=cloudwatch.Stats.SUM),
                threshold=1,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                description=f"The {name} function was throttled (concurrency used up).",
            )
            self._add(
                f"{name.capitalize()}Errors",
                function.metric_errors(period=Duration.minutes(5), statistic=cloudwatch.Stats.SUM),
                threshold=1,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                description=f"The {name} function failed (error, timeout or crash).",
            )
        # The handlers' own EMF metrics (Powertools adds the "service" dimension): a record the worker
        # failed (retried by SQS), and a re-enqueue the sweeper could not send.
        for alarm_name, metric_name, description in (
            ("WorkerRecordsFailed", "RecordsFailed", "The worker failed resume records (they are retried)."),
            # A turn that could not run after its bounded attempts (agent version missing, a run that keeps
            # failing, a snapshot that cannot be read) ended FAILED: someone's answer will not be acted on.
            (
                "TurnsUnrunnable",
                "TurnsUnrunnable",
                "A turn ended FAILED because it could not run (agent_unavailable, cannot_run, snapshot_unreadable).",
            ),
            (
                "ModelRetriesExhausted",
                "ModelRetriesExhausted",
                "A turn ended FAILED after its model kept failing (throttled or unavailable) through every retry.",
            ),
            ("SweepEnqueueFailures", "SweepEnqueueFailures", "The sweeper could not re-enqueue runnable turns."),
        ):
            self._add(
                alarm_name,
                cloudwatch.Metric(
                    namespace=metrics_namespace,
                    metric_name=metric_name,
                    dimensions_map={"service": service},
                    period=Duration.minutes(5),
                    statistic=cloudwatch.Stats.SUM,
                ),
                threshold=1,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                description=description,
            )
        self._add(
            "Api5xx",
            http_api.metric_server_error(period=Duration.minutes(5), statistic=cloudwatch.Stats.SUM),
            threshold=5,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            description="The HTTP API answered 5xx (handler errors or integration timeouts).",
        )

    def _add(
        self,
        name: str,
        metric: cloudwatch.IMetric,
        *,
        threshold: float,
        comparison: cloudwatch.ComparisonOperator,
        description: str,
        evaluation_periods: int = 1,
    ) -> None:
        alarm = cloudwatch.Alarm(
            self,
            name,
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=evaluation_periods,
            datapoints_to_alarm=evaluation_periods,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        alarm.add_ok_action(actions.SnsAction(self.topic))
        self.alarms[name] = alarm
