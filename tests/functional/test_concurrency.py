"""One HTTP entry point serving requests from several threads at once (as an in-process server may).

The threads call ``HttpApi.handle`` — what the handler module wraps — not the decorated Lambda handler:
Powertools' Metrics and Logger keep process-wide state that one Lambda invocation at a time never shares.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.functional.harness import Deployment, FakeLambdaContext, HttpResponse, http_event

pytestmark = pytest.mark.integration

USERS = [f"user-{n}" for n in range(4)]


def _handle(deployment: Deployment, event: dict[str, Any]) -> HttpResponse:
    raw = deployment.run_app.api.handle(event, FakeLambdaContext())
    return HttpResponse(raw["statusCode"], {k.lower(): v for k, v in raw["headers"].items()}, raw["body"], raw)


@pytest.fixture(autouse=True)
def _switch_threads_often() -> Iterator[None]:
    # Make the interpreter switch threads every microsecond, so that a window between "event stored" and
    # "event read" is hit if there is one.
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(previous)


def test_concurrent_requests_never_see_each_others_event(deployment: Deployment) -> None:
    # GIVEN one waiting turn per user
    turns: dict[str, str] = {}
    for user in USERS:
        response = deployment.run(
            http_event("http_start_turn.json", body={"input": "create a login incident ticket"}, sub=user)
        )
        assert response.status == 200, response.body
        turns[user] = response.json["turnId"]

    # WHEN every user reads its own turn many times, all at once, through the same run handler
    def read(n: int) -> tuple[str, Any]:
        user = USERS[n % len(USERS)]
        event = http_event("http_get_turn.json", path=f"/turns/{turns[user]}", sub=user)
        return user, _handle(deployment, event)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(read, range(160)))

    # THEN each answer is that user's own turn: no request was validated or routed with another's event
    for user, response in results:
        assert response.status == 200, response.body
        assert response.json["turnId"] == turns[user]


def test_concurrent_starts_each_keep_their_own_body_and_path(deployment: Deployment) -> None:
    # WHEN many turns start at once, each with its own conversation, caller and metadata
    def start(n: int) -> tuple[int, Any]:
        event = http_event(
            "http_start_turn.json",
            path=f"/conversations/conv-{n}/turns",
            body={"input": f"hello number {n}", "metadata": {"n": n}},
            sub=USERS[n % len(USERS)],
        )
        return n, _handle(deployment, event)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(start, range(48)))

    # THEN every turn has the body and the path parameter of its own request
    for n, response in results:
        assert response.status == 200, response.body
        assert response.json["conversationId"] == f"conv-{n}"
        assert response.json["metadata"] == {"n": n}
