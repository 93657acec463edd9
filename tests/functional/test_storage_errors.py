"""Storage failures reach the HTTP layer as the core's storage errors: 503 when retryable, 500 otherwise."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.functional.harness import Deployment, http_event

TICKET = "create a high priority login incident ticket"


def _fail_get_item(deployment: Deployment, code: str, status: int) -> None:
    """Every GetItem of the run Lambda's store fails inside the SDK with ``code`` (after its retries)."""

    def refuse(**kwargs: Any) -> None:
        raise ClientError(
            {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "GetItem"
        )

    deployment.run_app.api.services.store.client.meta.events.register("before-call.dynamodb.GetItem", refuse)


@pytest.mark.parametrize(
    ("code", "status", "answer", "problem"),
    [
        ("ProvisionedThroughputExceededException", 400, 503, "service-unavailable"),
        ("ThrottlingException", 400, 503, "service-unavailable"),
        ("InternalServerError", 500, 503, "service-unavailable"),
        ("AccessDeniedException", 400, 500, "internal-error"),
        ("ResourceNotFoundException", 400, 500, "internal-error"),
    ],
)
def test_a_storage_failure_is_503_when_retryable_and_500_otherwise(
    deployment: Deployment, code: str, status: int, answer: int, problem: str
) -> None:
    # GIVEN a started turn, and DynamoDB failing every read of the run Lambda with ``code``
    started = deployment.run(http_event("http_start_turn.json", body={"input": TICKET}))
    assert started.status == 200, started.body
    _fail_get_item(deployment, code, status)

    # WHEN the turn is read
    response = deployment.run(http_event("http_get_turn.json", path=f"/turns/{started.json['turnId']}"))

    # THEN the answer is a problem: 503 with Retry-After for what may pass, 500 for what will not
    assert response.status == answer, response.body
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json["type"].endswith(f"/{problem}")
    assert ("retry-after" in response.headers) is (answer == 503)
