"""``GET /conversations``: the caller's conversations, newest first, paged, through the deployed handlers."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.functional.harness import Deployment, http_event

pytestmark = pytest.mark.integration

OTHER_SUB = "3c2b1a09-0000-4000-8000-000000000001"


def _start(deployment: Deployment, conversation: str, text: str, sub: str | None = None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {} if sub is None else {"sub": sub}
    response = deployment.run(
        http_event(
            "http_start_turn.json",
            path=f"/conversations/{conversation}/turns",
            body={"input": text},
            **kwargs,
        )
    )
    assert response.status in (200, 202), response.body
    body: dict[str, Any] = response.json
    return body


def _list(deployment: Deployment, query: dict[str, str] | None = None, sub: str | None = None) -> Any:
    kwargs: dict[str, Any] = {} if sub is None else {"sub": sub}
    return deployment.run(
        http_event("http_list_messages.json", method="GET", path="/conversations", query=query or {}, **kwargs)
    )


def test_the_caller_sees_their_own_conversations_newest_first_with_titles(deployment: Deployment) -> None:
    # GIVEN two conversations of the caller (the first one started first) and one of another person
    _start(deployment, "older", "帮我订一个会议室 (book a meeting room)\nsecond line")
    _start(deployment, "newer", "refund order O-1001")
    _start(deployment, "theirs", "not yours", sub=OTHER_SUB)

    # WHEN the caller lists their conversations
    response = _list(deployment)

    # THEN both are listed, newest first, with the first line of their first message as title
    assert response.status == 200, response.body
    listed = response.json["conversations"]
    assert [(c["conversationId"], c["title"]) for c in listed] == [
        ("newer", "refund order O-1001"),
        ("older", "帮我订一个会议室 (book a meeting room)"),
    ]
    assert listed[0]["lastActivityAt"] >= listed[1]["lastActivityAt"]
    # ... and the other person sees only theirs
    assert [c["conversationId"] for c in _list(deployment, sub=OTHER_SUB).json["conversations"]] == ["theirs"]


def test_pages_follow_the_cursor_and_a_made_up_cursor_is_a_422(deployment: Deployment) -> None:
    # GIVEN three conversations
    for name in ("a", "b", "c"):
        _start(deployment, f"page-{name}", f"message {name}")

    # WHEN they are read one page of two at a time
    first = _list(deployment, {"limit": "2"})
    second = _list(deployment, {"limit": "2", "cursor": first.json["nextCursor"]})

    # THEN the pages hold all three once, newest first
    ids = [c["conversationId"] for c in first.json["conversations"] + second.json["conversations"]]
    assert ids == ["page-c", "page-b", "page-a"]
    # ... and a cursor nobody handed out is refused as a problem, naming the cursor
    bad = _list(deployment, {"cursor": "eyJ4IjoxfQ"})
    assert bad.status == 422
    assert bad.headers["content-type"].startswith("application/problem+json")
    assert [(e["path"], e["in"]) for e in bad.json["errors"]] == [("/cursor", "query")]


def test_a_forged_cursor_of_the_caller_is_a_422_naming_the_cursor(deployment: Deployment) -> None:
    # GIVEN two listed conversations, and a cursor a client made from a real one: the caller's, well-formed,
    # at a position no listing hands out (DynamoDB refuses empty key values)
    _start(deployment, "forged-1", "message 1")
    _start(deployment, "forged-2", "message 2")
    real = _list(deployment, {"limit": "1"}).json["nextCursor"]
    owner = json.loads(base64.urlsafe_b64decode(real + "=" * (-len(real) % 4)))["o"]
    forged = base64.urlsafe_b64encode(json.dumps({"o": owner, "a": "", "c": ""}).encode()).decode().rstrip("=")

    # WHEN it is used
    bad = _list(deployment, {"cursor": forged})

    # THEN it is refused as a problem naming the cursor, not a server error
    assert bad.status == 422, bad.body
    assert bad.headers["content-type"].startswith("application/problem+json")
    assert [e["path"] for e in bad.json["errors"]] == ["/cursor"]


@pytest.mark.parametrize(
    ("code", "answer"), [("ThrottlingException", 503), ("ProvisionedThroughputExceededException", 503)]
)
def test_a_storage_failure_of_the_listing_is_translated_like_any_other(
    deployment: Deployment, code: str, answer: int
) -> None:
    # GIVEN the listing's Query failing inside the SDK with ``code`` (after its retries)
    _start(deployment, "throttled", "message")

    def refuse(**kwargs: Any) -> None:
        raise ClientError(
            {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": 400}}, "Query"
        )

    client = deployment.run_app.api.services.chat_memory.client
    client.meta.events.register("before-call.dynamodb.Query", refuse)
    try:
        # WHEN the caller lists their conversations
        response = _list(deployment)
    finally:
        client.meta.events.unregister("before-call.dynamodb.Query", refuse)

    # THEN the answer is the problem every other read gives: 503 with Retry-After
    assert response.status == answer, response.body
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json["type"].endswith("/service-unavailable")
    assert "retry-after" in response.headers
