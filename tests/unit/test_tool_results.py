"""The tool results the model reads when a call did not simply return (pure: no store, no runner)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentturn.engine import tool_results


@pytest.mark.parametrize(
    ("payload", "status"),
    [
        (tool_results.submitted("address", {"city": "Oslo"}), "submitted"),
        (tool_results.unanswered_form("address", "declined", "no"), "declined"),
        (tool_results.unanswered_form("address", "expired", None), "expired"),
        (tool_results.unanswered_tool_form("address", "expired", None, "ship"), "error"),
        (tool_results.unanswered_approval("refund", "expired"), "expired"),
        (tool_results.rejected("refund", "too much"), "rejected"),
        (tool_results.denied("refund", None), "denied"),
        (tool_results.tool_failed("ValueError: boom"), "error"),
        (tool_results.unknown_tool("nope", ["a", "b"]), "error"),
        (tool_results.unknown_form_key("nope", ["address"]), "error"),
    ],
)
def test_every_payload_says_its_status_and_travels_as_json(payload: dict[str, Any], status: str) -> None:
    # GIVEN a payload for one way a call can end
    # WHEN it is sent to a model (as JSON, the only form a provider accepts)
    sent = json.loads(json.dumps(payload))

    # THEN it survives the trip unchanged and says first of all how the call ended
    assert sent == payload
    assert sent["status"] == status
    # ... and a failed call always says which kind of failure, so the model can tell them apart
    if status == "error":
        assert isinstance(sent["error"], str) and sent["error"]


def test_a_submitted_form_carries_exactly_what_the_person_sent() -> None:
    # GIVEN a person's answer to a model-requested form
    data = {"city": "Oslo", "zip": "0150"}

    # WHEN the model's result is built
    payload = tool_results.submitted("address", data)

    # THEN the model gets the form key and the values as submitted
    assert payload == {"status": "submitted", "formKey": "address", "data": data}


@pytest.mark.parametrize(("status", "verb"), [("declined", "declined"), ("expired", "did not fill in")])
def test_a_missed_tool_form_tells_the_model_the_tool_did_not_run(status: tool_results.Unanswered, verb: str) -> None:
    # WHEN a tool-requested form was declined or left to expire
    payload = tool_results.unanswered_tool_form("address", status, "busy", "ship_order")

    # THEN the model learns which input was missed, why, and that the tool was not run
    assert payload["error"] == f"input_{status}"
    assert payload["reason"] == "busy"
    assert f"the user {verb} form 'address'" in payload["message"]
    assert "ship_order did not run" in payload["message"]


def test_a_policy_denial_without_a_message_still_gives_the_model_a_reason() -> None:
    # WHEN a policy denies a call without saying why, and another says why
    silent = tool_results.denied("refund", None)
    explained = tool_results.denied("refund", "over the limit")

    # THEN the model always has a reason to pass on
    assert silent["reason"] == "denied by policy"
    assert explained["reason"] == "over the limit"


def test_an_unknown_tool_or_form_lists_what_the_model_may_use_instead() -> None:
    # WHEN the model names a tool or a form key the agent does not have
    tool = tool_results.unknown_tool("refnud", ["lookup", "refund"])
    form = tool_results.unknown_form_key("adress", ["address", "contact"])

    # THEN it is told the choices, so it can correct itself on the next call
    assert "'refnud'" in tool["message"] and "['lookup', 'refund']" in tool["message"]
    assert form["allowedFormKeys"] == ["address", "contact"]
    assert form["formKey"] == "adress"
    assert "'adress'" in form["message"]
