"""AG-UI through the deployed run handler on moto: the buffered answer API Gateway's HTTP API returns (the whole
run's events at its end), the streaming entry, and the refusals made before any event."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.functional.harness import Deployment, FakeLambdaContext, http_event

pytestmark = pytest.mark.integration

FORM_DATA = {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}


def _events(body: str) -> list[dict[str, Any]]:
    frames = [frame for frame in body.split("\n\n") if frame]
    assert all(frame.startswith("data: ") and "\n" not in frame for frame in frames), body
    return [json.loads(frame.removeprefix("data: ")) for frame in frames]


def _ag_ui(deployment: Deployment, body: Any, *, path: str = "/ag-ui/support-agent", **kwargs: Any) -> Any:
    return deployment.run(http_event("http_start_turn.json", path=path, body=body, **kwargs))


def test_a_form_cycle_through_the_buffered_handler(deployment: Deployment) -> None:
    # GIVEN the support agent, whose tool needs a form
    asked = _ag_ui(
        deployment,
        {"threadId": "agui-1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "ticket please"}]},
    )
    # THEN the run handler answers the whole run as server-sent events, ending in the form's interrupt
    assert asked.status == 200, asked.body
    assert asked.headers["content-type"] == "text/event-stream"
    events = _events(asked.body)
    assert [e["type"] for e in events][-3:] == ["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    [interrupt] = events[-1]["outcome"]["interrupts"]
    assert interrupt["reason"] == "input_required"
    assert interrupt["metadata"]["agentturn"]["inputTarget"] == "TOOL"
    # WHEN the form is answered through resume
    resumed = _ag_ui(
        deployment,
        {
            "threadId": "agui-1",
            "runId": "r2",
            "messages": [],
            "resume": [{"interruptId": interrupt["id"], "status": "resolved", "payload": FORM_DATA}],
        },
    )
    # THEN the turn runs in the same request to its answer
    finished = _events(resumed.body)
    assert finished[-1]["outcome"] == {"type": "success"}
    assert "SSO" in finished[-1]["result"]
    turn = deployment.run(
        http_event("http_get_turn.json", path=f"/turns/{interrupt['metadata']['agentturn']['turnId']}")
    ).json
    assert turn["status"] == "COMPLETED"


def test_the_streaming_entry_sends_the_same_run_piece_by_piece(deployment: Deployment) -> None:
    event = http_event(
        "http_start_turn.json",
        path="/ag-ui",
        body={"threadId": "agui-2", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hi"}]},
    )
    answer = deployment.run_app.stream_handler(event, FakeLambdaContext())
    assert answer.status == 200 and answer.headers["Content-Type"] == "text/event-stream"
    chunks = list(answer.chunks)
    assert len(chunks) > 3, "one chunk per event"
    events = _events(b"".join(chunks).decode())
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")


@pytest.mark.parametrize(
    ("path", "body", "status", "kind"),
    [
        ("/ag-ui/nobody", {"threadId": "t", "runId": "r", "messages": []}, 404, "agent-not-found"),
        ("/ag-ui", {"threadId": "bad/id", "runId": "r"}, 422, "request-validation"),
        ("/ag-ui", None, 400, "body-required"),
        ("/ag-ui", {"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": "x" * 70_000}]}, 413, None),
    ],
    ids=["unknown-agent", "malformed-input", "no-body", "oversized"],
)
def test_refusals_before_the_stream_are_problems_and_store_nothing(
    deployment: Deployment, path: str, body: Any, status: int, kind: str | None
) -> None:
    for entry in ("handler", "stream"):
        event = http_event("http_start_turn.json", path=path, body=body)
        if entry == "handler":
            response = deployment.run(event)
            got_status, headers, text = response.status, response.headers, response.body
        else:
            answer = deployment.run_app.stream_handler(event, FakeLambdaContext())
            got_status = answer.status
            headers = {k.lower(): v for k, v in answer.headers.items()}
            text = b"".join(answer.chunks).decode()
        assert got_status == status, (entry, text)
        assert headers["content-type"] == "application/problem+json"
        if kind is not None:
            assert json.loads(text)["type"].endswith("/" + kind)
    listed = deployment.run(http_event("http_start_turn.json", method="GET", path="/conversations", body=None)).json
    assert listed["conversations"] == []


def test_capabilities_declare_interrupts_and_streaming(deployment: Deployment) -> None:
    response = deployment.run(
        http_event("http_start_turn.json", method="GET", path="/ag-ui/support-agent/capabilities", body=None)
    )
    assert response.status == 200
    document = response.json
    assert document["humanInTheLoop"]["interrupts"] is True
    assert document["humanInTheLoop"]["approveWithEdits"] is True
    assert document["transport"]["streaming"] is True
