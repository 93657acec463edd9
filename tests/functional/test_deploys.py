"""Waiting turns across a deploy: the handlers of one deployment ask, the next deployment's handlers answer.

A deploy is a new ``AGENTTURN_AGENTS`` for every function (what the construct's ``agents=`` sets) and handlers
that start cold (their services are built again from the environment). The agent's new version declares which
versions it continues (``Agent(continues=["1"])``); it takes their turns over when they resume if what they wait
on is still there, and otherwise ends them at once saying why, never FAILED after five silent attempts.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.harness import Deployment, http_event

pytestmark = pytest.mark.integration


def _deploy(deployment: Deployment, monkeypatch: pytest.MonkeyPatch, factory: str) -> None:
    monkeypatch.setenv("AGENTTURN_AGENTS", f"tests.functional.agents:{factory}")
    # Every function of the new deployment starts cold: its services are built from the new environment.
    deployment._import_handlers()


def _get(deployment: Deployment, turn_id: str) -> dict[str, Any]:
    response = deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}"))
    assert response.status == 200, response.body
    view: dict[str, Any] = response.json
    return view


def _cards(deployment: Deployment) -> list[tuple[str, str]]:
    listed = deployment.run(http_event("http_list_messages.json", path="/conversations/desk/messages")).json
    return [(m["actionId"], m["status"]) for m in listed["messages"] if m["type"] in ("agent_form", "agent_approval")]


def _asked(deployment: Deployment) -> dict[str, Any]:
    started = deployment.run(
        http_event(
            "http_start_turn.json",
            path="/conversations/desk/turns",
            body={"input": "refund my order", "agentId": "refund-desk"},
        )
    )
    assert started.status == 200, started.body
    view: dict[str, Any] = started.json
    assert view["status"] == "WAITING_FOR_USER", view
    return view


def _answer_form(deployment: Deployment, turn_id: str) -> None:
    submitted = deployment.submit(
        http_event(
            "http_submit_form.json",
            path=f"/turns/{turn_id}/actions/ask/submit",
            body={"data": {"orderId": "O-1"}},
            headers={"idempotency-key": "form-1"},
        )
    )
    assert submitted.status == 202, submitted.body


def _approve_refund(deployment: Deployment, turn_id: str) -> None:
    approved = deployment.submit(
        http_event(
            "http_approve.json",
            path=f"/turns/{turn_id}/actions/pay/approve",
            body={},
            headers={"idempotency-key": "pay-1"},
        )
    )
    assert approved.status == 202, approved.body


def test_a_deploy_between_a_question_and_its_answer_keeps_the_turn(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN version 1 deployed, and a turn of it waiting for a person's form
    _deploy(deployment, monkeypatch, "refund_desk_v1")
    turn_id = _asked(deployment)["turnId"]

    # WHEN version 2, which continues version 1, is deployed, and the person answers, then approves the refund
    _deploy(deployment, monkeypatch, "refund_desk_v2")
    _answer_form(deployment, turn_id)
    deployment.drain()
    assert _get(deployment, turn_id)["status"] == "WAITING_FOR_APPROVAL"
    _approve_refund(deployment, turn_id)
    deployment.drain()

    # THEN version 2 took the turn over and finished it: no attempt failed, every card shows its answer
    done = _get(deployment, turn_id)
    assert done["status"] == "COMPLETED", done
    assert done["finalOutput"] == "refunded by version 2"
    assert done.get("retry") is None
    assert _cards(deployment) == [("ask", "SUBMITTED"), ("pay", "APPROVED")]


@pytest.mark.parametrize(
    ("factory", "why"),
    [
        ("refund_desk_v2_other_form", "form 'refund' has another schema than the one the person was shown"),
        ("refund_desk_v2_without_refunds", "tool 'issue_refund' is gone"),
    ],
)
def test_a_version_that_lacks_what_the_turn_waits_on_ends_it_at_once_saying_why(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch, factory: str, why: str
) -> None:
    # GIVEN a turn of version 1 whose form was answered, now waiting for the refund's approval
    _deploy(deployment, monkeypatch, "refund_desk_v1")
    turn_id = _asked(deployment)["turnId"]
    if factory == "refund_desk_v2_without_refunds":
        _answer_form(deployment, turn_id)
        deployment.drain()
        assert _get(deployment, turn_id)["status"] == "WAITING_FOR_APPROVAL"

    # WHEN a version 2 that says it continues version 1, but lacks what the turn needs, is deployed, and the
    # person answers what the turn waits for
    _deploy(deployment, monkeypatch, factory)
    if factory == "refund_desk_v2_without_refunds":
        _approve_refund(deployment, turn_id)
    else:
        _answer_form(deployment, turn_id)
    deployment.drain(rounds=2)

    # THEN the first attempt ended the turn FAILED, its error naming the version and why, and its conversation
    # is free for the next message (nothing is retried in silence)
    failed = _get(deployment, turn_id)
    assert failed["status"] == "FAILED", failed
    assert failed["error"]["type"] == "agent_changed"
    assert why in failed["error"]["message"]
    assert "version '2' cannot continue a turn of version '1'" in failed["error"]["message"]
    assert failed.get("retry") is None
    again = deployment.run(
        http_event(
            "http_start_turn.json",
            path="/conversations/desk/turns",
            body={"input": "refund my order", "agentId": "refund-desk"},
        )
    )
    assert again.status == 200, again.body
