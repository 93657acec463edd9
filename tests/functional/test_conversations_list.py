"""``GET /conversations``: the caller's conversations, newest first, paged, through the deployed handlers."""

from __future__ import annotations

from typing import Any

import pytest

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
    assert [e["path"] for e in bad.json["errors"]] == ["cursor"]
