"""Every refusal of the HTTP API: its status, its problem type, and nothing changed in storage.

One deployment for the module (refusals change nothing, so the cases cannot disturb each other), with a
turn in each state the cases need. Before and after each case the tables, the S3 objects and the queue
depth are dumped and compared.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.functional.harness import DEFAULT_SUB, Deployment, HttpResponse, http_event
from tests.support.emulators import Emulator

pytestmark = pytest.mark.integration

OTHER_SUB = "b2d1f0e9-0000-4000-8000-000000000002"
TICKET = "create a high priority login incident ticket"
PROBLEM = "https://agentturn.dev/problems/"


@dataclass
class World:
    deployment: Deployment
    waiting: str  # support ticket waiting for its form
    action: str
    approval: str  # refund waiting for approval
    approval_action: str
    done: str  # a finished turn
    done_action: str
    accepted: str  # form accepted, not yet resumed
    accepted_action: str


def _start(deployment: Deployment, conversation: str, text: str, agent: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"input": text}
    if agent:
        body["agentId"] = agent
    response = deployment.run(
        http_event("http_start_turn.json", path=f"/conversations/{conversation}/turns", body=body)
    )
    assert response.status == 200, response.body
    result: dict[str, Any] = response.json
    return result


def _submit(deployment: Deployment, turn_id: str, action_id: str, key: str) -> HttpResponse:
    return deployment.submit(
        http_event(
            "http_submit_form.json",
            path=f"/turns/{turn_id}/actions/{action_id}/submit",
            body={"data": {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}},
            headers={"idempotency-key": key},
        )
    )


@pytest.fixture(scope="module")
def world(moto_server: Emulator) -> Iterator[World]:
    with pytest.MonkeyPatch.context() as patch:
        deployment = Deployment(moto_server, patch)
        waiting = _start(deployment, "c-wait", TICKET)
        refund = _start(deployment, "c-refund", "please refund order O-1001", agent="refund-agent")
        done = _start(deployment, "c-done", TICKET)
        assert _submit(deployment, done["turnId"], done["suspension"]["actionId"], "done-1").status == 202
        deployment.drain()
        accepted = _start(deployment, "c-accepted", TICKET)
        assert _submit(deployment, accepted["turnId"], accepted["suspension"]["actionId"], "acc-1").status == 202
        yield World(
            deployment,
            waiting["turnId"],
            waiting["suspension"]["actionId"],
            refund["turnId"],
            refund["suspension"]["actionId"],
            done["turnId"],
            done["suspension"]["actionId"],
            accepted["turnId"],
            accepted["suspension"]["actionId"],
        )


Case = Callable[[World], tuple[str, dict[str, Any]]]


def _submit_event(w: World, *, turn: str | None = None, action: str | None = None, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("body", {"data": {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}})
    return http_event(
        "http_submit_form.json",
        path=f"/turns/{turn or w.waiting}/actions/{action or w.action}/submit",
        **kwargs,
    )


def _start_event(conversation: str = "c-new", **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("body", {"input": TICKET})
    return http_event("http_start_turn.json", path=f"/conversations/{conversation}/turns", **kwargs)


_DEEP = "[" * 20_000 + "]" * 20_000
_NESTED_40 = '{"data": ' + '{"a": ' * 40 + "1" + "}" * 40 + "}"

CASES: dict[str, tuple[Case, int, str]] = {
    # 400 --------------------------------------------------------------------------------------------
    "malformed JSON": (lambda w: ("submit", _submit_event(w, raw_body='{"data": {')), 400, "malformed-json"),
    "duplicate keys": (
        lambda w: ("submit", _submit_event(w, raw_body='{"data": {"impactScope": "ONE_USER"}, "data": {}}')),
        400,
        "malformed-json",
    ),
    "NaN": (lambda w: ("run", _start_event(raw_body='{"input": "x", "metadata": {"n": NaN}}')), 400, "malformed-json"),
    "number out of range": (
        lambda w: ("run", _start_event(raw_body='{"input": "x", "metadata": {"n": 1e999}}')),
        400,
        "malformed-json",
    ),
    "huge integer": (
        lambda w: ("run", _start_event(raw_body='{"input": "x", "metadata": {"n": ' + "9" * 5000 + "}}")),
        400,
        "malformed-json",
    ),
    "nesting past the parser's recursion limit": (
        lambda w: ("submit", _submit_event(w, raw_body=_DEEP)),
        400,
        "malformed-json",
    ),
    "nesting deeper than 32": (lambda w: ("submit", _submit_event(w, raw_body=_NESTED_40)), 400, "malformed-json"),
    "lone surrogate": (
        lambda w: ("run", _start_event(raw_body='{"input": "\\ud800 hello"}')),
        400,
        "malformed-json",
    ),
    "invalid base64": (
        lambda w: ("run", {**_start_event(), "body": "not base64!!", "isBase64Encoded": True}),
        400,
        "malformed-json",
    ),
    "invalid UTF-8": (
        lambda w: (
            "run",
            {**_start_event(), "body": base64.b64encode(b'{"input": "\xff\xfe"}').decode(), "isBase64Encoded": True},
        ),
        400,
        "malformed-json",
    ),
    "no Idempotency-Key": (
        lambda w: ("submit", _submit_event(w, headers={"idempotency-key": None})),
        400,
        "idempotency-key-required",
    ),
    "blank Idempotency-Key": (
        lambda w: ("submit", _submit_event(w, headers={"idempotency-key": "   "})),
        400,
        "idempotency-key-required",
    ),
    "Idempotency-Key too long": (
        lambda w: ("submit", _submit_event(w, headers={"idempotency-key": "k" * 129})),
        400,
        "invalid-idempotency-key",
    ),
    "Idempotency-Key with a space": (
        lambda w: ("submit", _submit_event(w, headers={"idempotency-key": "a b"})),
        400,
        "invalid-idempotency-key",
    ),
    "no body on submit": (lambda w: ("submit", _submit_event(w, body=None)), 400, "body-required"),
    "no Idempotency-Key on cancel": (
        lambda w: (
            "submit",
            http_event("http_cancel.json", path=f"/turns/{w.waiting}/cancel", headers={"idempotency-key": None}),
        ),
        400,
        "idempotency-key-required",
    ),
    # 401 --------------------------------------------------------------------------------------------
    "no identity on run": (lambda w: ("run", _start_event(sub=None)), 401, "unauthenticated"),
    "no identity on submit": (lambda w: ("submit", _submit_event(w, sub=None)), 401, "unauthenticated"),
    "no identity on read": (
        lambda w: ("run", http_event("http_get_turn.json", path=f"/turns/{w.waiting}", sub=None)),
        401,
        "unauthenticated",
    ),
    "blank sub claim": (lambda w: ("run", _start_event(sub=" ")), 401, "unauthenticated"),
    "identity forged in a header is ignored": (
        lambda w: ("run", _start_event(sub=None, headers={"x-user-id": DEFAULT_SUB, "x-amzn-oidc-identity": "x"})),
        401,
        "unauthenticated",
    ),
    # 404 --------------------------------------------------------------------------------------------
    "unknown turn": (
        lambda w: ("run", http_event("http_get_turn.json", path="/turns/0123456789abcdef0123456789abcdef")),
        404,
        "turn-not-found",
    ),
    "malformed turn id": (
        lambda w: ("run", http_event("http_get_turn.json", path="/turns/" + "x" * 300)),
        404,
        "turn-not-found",
    ),
    "submit to an unknown turn": (
        lambda w: ("submit", _submit_event(w, turn="0123456789abcdef0123456789abcdef")),
        404,
        "turn-not-found",
    ),
    "unknown action": (lambda w: ("submit", _submit_event(w, action="call-999")), 404, "action-not-found"),
    "another user's turn": (
        lambda w: ("run", http_event("http_get_turn.json", path=f"/turns/{w.waiting}", sub=OTHER_SUB)),
        404,
        "turn-not-found",
    ),
    "submit to another user's turn": (
        lambda w: ("submit", _submit_event(w, sub=OTHER_SUB)),
        404,
        "turn-not-found",
    ),
    "cancel another user's turn": (
        lambda w: ("submit", http_event("http_cancel.json", path=f"/turns/{w.waiting}/cancel", sub=OTHER_SUB)),
        404,
        "turn-not-found",
    ),
    "unknown route": (
        lambda w: ("run", http_event("http_get_turn.json", path="/admin/tables")),
        404,
        "route-not-found",
    ),
    "a route served by the other Lambda": (lambda w: ("run", _submit_event(w)), 404, "route-not-found"),
    # 405 --------------------------------------------------------------------------------------------
    "wrong method": (
        lambda w: ("run", http_event("http_get_turn.json", method="DELETE", path=f"/turns/{w.waiting}")),
        405,
        "method-not-allowed",
    ),
    # 409 --------------------------------------------------------------------------------------------
    "answered action, turn not waiting any more": (
        lambda w: ("submit", _submit_event(w, turn=w.accepted, action=w.accepted_action)),
        409,
        "turn-not-waiting",
    ),
    "turn already finished": (
        lambda w: ("submit", _submit_event(w, turn=w.done, action=w.done_action)),
        409,
        "turn-terminal",
    ),
    "cancel a finished turn": (
        lambda w: ("submit", http_event("http_cancel.json", path=f"/turns/{w.done}/cancel")),
        409,
        "turn-terminal",
    ),
    "approve a form": (
        lambda w: ("submit", http_event("http_approve.json", path=f"/turns/{w.waiting}/actions/{w.action}/approve")),
        409,
        "wrong-action-kind",
    ),
    "submit a form to an approval": (
        lambda w: ("submit", _submit_event(w, turn=w.approval, action=w.approval_action)),
        409,
        "wrong-action-kind",
    ),
    "conversation busy": (lambda w: ("run", _start_event("c-wait")), 409, "conversation-busy"),
    # 413 --------------------------------------------------------------------------------------------
    "body over the cap": (
        lambda w: ("run", _start_event(body={"input": "x" * 70_000})),
        413,
        "payload-too-large",
    ),
    "base64 body over the cap (checked before decoding)": (
        lambda w: ("run", _start_event(body={"input": "x" * 70_000}, base64_body=True)),
        413,
        "payload-too-large",
    ),
    "over the cap even if the JSON is broken": (
        lambda w: ("submit", _submit_event(w, raw_body="{" * 70_000)),
        413,
        "payload-too-large",
    ),
    # 415 --------------------------------------------------------------------------------------------
    "text/plain": (
        lambda w: ("submit", _submit_event(w, headers={"content-type": "text/plain"})),
        415,
        "unsupported-media-type",
    ),
    "form-encoded": (
        lambda w: (
            "run",
            _start_event(raw_body="input=hello", headers={"content-type": "application/x-www-form-urlencoded"}),
        ),
        415,
        "unsupported-media-type",
    ),
    "no content type": (
        lambda w: ("submit", _submit_event(w, headers={"content-type": None})),
        415,
        "unsupported-media-type",
    ),
    "latin-1 charset": (
        lambda w: ("submit", _submit_event(w, headers={"content-type": "application/json; charset=iso-8859-1"})),
        415,
        "unsupported-media-type",
    ),
    # 422 --------------------------------------------------------------------------------------------
    "form: missing required field": (
        lambda w: ("submit", _submit_event(w, body={"data": {"affectedSystem": "SSO"}})),
        422,
        "form-validation",
    ),
    "form: undeclared field": (
        lambda w: (
            "submit",
            _submit_event(w, body={"data": {"affectedSystem": "SSO", "impactScope": "ALL_USERS", "isAdmin": True}}),
        ),
        422,
        "form-validation",
    ),
    "form: value outside the enum": (
        lambda w: ("submit", _submit_event(w, body={"data": {"affectedSystem": "SSO", "impactScope": "EVERYONE"}})),
        422,
        "form-validation",
    ),
    "data is not an object": (lambda w: ("submit", _submit_event(w, body={"data": [1, 2]})), 422, "request-validation"),
    "unknown body field": (
        lambda w: ("submit", _submit_event(w, body={"data": {}, "submittedBy": "admin"})),
        422,
        "request-validation",
    ),
    "blank input": (lambda w: ("run", _start_event(body={"input": "   "})), 422, "request-validation"),
    "input not a string": (lambda w: ("run", _start_event(body={"input": 42})), 422, "request-validation"),
    "body is an array": (lambda w: ("run", _start_event(body=[{"input": "x"}])), 422, "request-validation"),
    "unknown agent": (
        lambda w: ("run", _start_event(body={"input": "x", "agentId": "nobody"})),
        422,
        "request-validation",
    ),
    "reserved metadata key": (
        lambda w: ("run", _start_event(body={"input": "x", "metadata": {"ownerId": OTHER_SUB}})),
        422,
        "request-validation",
    ),
    "conversation id with a slash": (
        lambda w: ("run", _start_event("a%2Fb")),
        422,
        "request-validation",
    ),
    "limit 0": (
        lambda w: ("run", http_event("http_list_messages.json", query={"limit": "0"})),
        422,
        "request-validation",
    ),
    "limit 201": (
        lambda w: ("run", http_event("http_list_messages.json", query={"limit": "201"})),
        422,
        "request-validation",
    ),
    "limit not a number": (
        lambda w: ("run", http_event("http_list_messages.json", query={"limit": "ten"})),
        422,
        "request-validation",
    ),
    "reject reason not a string": (
        lambda w: (
            "submit",
            http_event(
                "http_reject.json",
                path=f"/turns/{w.approval}/actions/{w.approval_action}/reject",
                body={"reason": {"text": "no"}},
            ),
        ),
        422,
        "request-validation",
    ),
    "Idempotency-Key reused with another body": (
        lambda w: (
            "submit",
            _submit_event(
                w,
                turn=w.accepted,
                action=w.accepted_action,
                body={"data": {"affectedSystem": "other", "impactScope": "ONE_USER"}},
                headers={"idempotency-key": "acc-1"},
            ),
        ),
        422,
        "idempotency-key-reused",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_refused_request_gets_its_problem_and_changes_nothing(world: World, name: str) -> None:
    # GIVEN a deployment with turns in every state, and what it stores right now
    make, status, slug = CASES[name]
    handler, event = make(world)
    before = world.deployment.dump()

    # WHEN the hostile or mistaken request arrives
    response = getattr(world.deployment, handler)(event)

    # THEN it is refused with its status and stable problem type, never a 5xx
    assert response.status == status, response.body
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json
    assert body["type"] == PROBLEM + slug
    assert body["status"] == status
    assert body["title"]
    assert body["detail"]
    if status == 422:
        assert body["errors"], body
        assert all(set(e) >= {"path", "message"} for e in body["errors"])
    # AND nothing stored changed: tables, S3 objects, queue
    assert world.deployment.dump() == before


def test_form_errors_name_each_field_by_json_pointer(world: World) -> None:
    # GIVEN a submission with a missing field, a wrong enum value and an undeclared field
    event = _submit_event(world, body={"data": {"impactScope": "EVERYONE", "role": "admin"}})

    # WHEN it is submitted
    response = world.deployment.submit(event)

    # THEN there is one entry per problem, each pointing into the submitted data
    assert response.status == 422
    paths = sorted(e["path"] for e in response.json["errors"])
    assert paths == ["/affectedSystem", "/impactScope", "/role"]


def test_an_answer_of_the_wrong_kind_says_which_route_and_body_to_use(world: World) -> None:
    # GIVEN a form waiting and an approval waiting
    # WHEN each is answered with the other's route
    approve_a_form = world.deployment.submit(
        http_event("http_approve.json", path=f"/turns/{world.waiting}/actions/{world.action}/approve")
    )
    submit_to_an_approval = world.deployment.submit(
        _submit_event(world, turn=world.approval, action=world.approval_action)
    )
    # THEN each 409 speaks HTTP: the routes (with this turn and action) and bodies that answer it, no Python call
    form = approve_a_form.json
    assert approve_a_form.status == 409 and form["type"] == PROBLEM + "wrong-action-kind"
    assert f"POST /turns/{world.waiting}/actions/{world.action}/submit" in form["detail"]
    assert '{"data": {...}}' in form["detail"] and form["awaits"] == "form"
    approval = submit_to_an_approval.json
    actions = f"/turns/{world.approval}/actions/{world.approval_action}"
    assert f"POST {actions}/approve" in approval["detail"] and f"{actions}/reject" in approval["detail"]
    assert approval["awaits"] == "tool_approval"
    for detail in (form["detail"], approval["detail"]):
        assert "ResumeCommand" not in detail and "approve_tool" not in detail and "submit_form" not in detail


def test_edited_arguments_are_refused_in_tool_call_words(world: World) -> None:
    # GIVEN a refund waiting for approval, and what is stored
    before = world.deployment.dump()
    # WHEN a person approves it with an amount that is not a number
    response = world.deployment.submit(
        http_event(
            "http_approve.json",
            path=f"/turns/{world.approval}/actions/{world.approval_action}/approve",
            body={"arguments": {"orderId": "O-1001", "amount": "lots"}},
        )
    )
    # THEN the 422 is about the tool call's arguments, names the tool and the field, and nothing changed
    assert response.status == 422, response.body
    body = response.json
    assert body["type"] == PROBLEM + "tool-arguments-validation"
    assert "form" not in (body["title"] + body["detail"]).lower()
    assert "issue_refund" in body["detail"]
    assert [e["path"] for e in body["errors"]] == ["/amount"]
    assert world.deployment.dump() == before


@pytest.mark.parametrize("key", [None, "a b", "k" * 129, "\u00e9t\u00e9"])
def test_a_missing_or_invalid_idempotency_key_is_named_as_the_header(world: World, key: str | None) -> None:
    # WHEN an answer carries no Idempotency-Key, or one outside the documented rule
    response = world.deployment.submit(_submit_event(world, headers={"idempotency-key": key}))
    # THEN the 400 names the header, and the rule when the key breaks it
    assert response.status == 400, response.body
    (error,) = response.json["errors"]
    assert error["path"] == "/Idempotency-Key" and error["in"] == "header"
    if key is not None:
        assert "1 to 128 visible ASCII characters" in error["message"]


#: The four answer routes: (event template, path suffix, a valid body for it).
_ANSWER_ROUTES: dict[str, tuple[str, dict[str, Any]]] = {
    "submit": ("http_submit_form.json", {"data": {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}}),
    "decline": ("http_decline.json", {"reason": "not now"}),
    "approve": ("http_approve.json", {}),
    "reject": ("http_reject.json", {"reason": "no"}),
}
#: What each answer route checks before it touches a turn, in the order a client meets the problems.
_ANSWER_CHECKS: dict[str, tuple[dict[str, Any], int, str]] = {
    "no identity (even without a key, on an unknown turn)": (
        {"sub": None, "headers": {"idempotency-key": None}, "turn": "nope"},
        401,
        "unauthenticated",
    ),
    "no Idempotency-Key (even on an unknown turn)": (
        {"headers": {"idempotency-key": None}, "turn": "nope"},
        400,
        "idempotency-key-required",
    ),
    "unknown turn": ({"turn": "0123456789abcdef0123456789abcdef"}, 404, "turn-not-found"),
    "malformed action id": ({"action": "a%2Fb"}, 404, "action-not-found"),
}


@pytest.mark.parametrize("check", list(_ANSWER_CHECKS))
@pytest.mark.parametrize("route", list(_ANSWER_ROUTES))
def test_every_answer_route_checks_the_same_things_in_the_same_order(world: World, route: str, check: str) -> None:
    # GIVEN one of the four answer routes, and a request that fails one of their shared checks
    template, body = _ANSWER_ROUTES[route]
    overrides, status, slug = _ANSWER_CHECKS[check]
    turn, action = overrides.get("turn", world.waiting), overrides.get("action", world.action)
    extra = {k: v for k, v in overrides.items() if k in ("sub", "headers")}
    event = http_event(template, path=f"/turns/{turn}/actions/{action}/{route}", body=body, **extra)
    before = world.deployment.dump()
    # WHEN it arrives
    response = world.deployment.submit(event)
    # THEN every route refuses it alike, and nothing stored changed
    assert response.status == status, response.body
    assert response.json["type"] == PROBLEM + slug
    assert world.deployment.dump() == before


def test_wrong_method_lists_the_allowed_ones(world: World) -> None:
    response = world.deployment.run(http_event("http_get_turn.json", method="PUT", path=f"/turns/{world.waiting}"))
    assert response.status == 405
    assert response.headers["allow"] == "GET"


def test_unauthenticated_answers_carry_a_bearer_challenge(world: World) -> None:
    response = world.deployment.run(_start_event(sub=None))
    assert response.status == 401
    assert response.headers["www-authenticate"] == "Bearer"


def test_another_users_turn_is_indistinguishable_from_a_missing_one(world: World) -> None:
    # GIVEN user A's waiting turn, and an id no turn has
    missing = "0123456789abcdef0123456789abcdef"
    requests: list[tuple[str, Callable[[str], dict[str, Any]]]] = [
        ("run", lambda t: http_event("http_get_turn.json", path=f"/turns/{t}", sub=OTHER_SUB)),
        ("submit", lambda t: _submit_event(world, turn=t, sub=OTHER_SUB)),
        (
            "submit",
            lambda t: http_event("http_approve.json", path=f"/turns/{t}/actions/{world.action}/approve", sub=OTHER_SUB),
        ),
        ("submit", lambda t: http_event("http_cancel.json", path=f"/turns/{t}/cancel", sub=OTHER_SUB)),
    ]
    for handler, make in requests:
        # WHEN user B asks for A's turn and for the missing id
        foreign = getattr(world.deployment, handler)(make(world.waiting))
        absent = getattr(world.deployment, handler)(make(missing))

        # THEN both answers are the same 404, byte for byte once the id each named is swapped
        assert foreign.status == absent.status == 404
        assert foreign.headers == absent.headers
        assert foreign.body.replace(world.waiting, missing) == absent.body
        assert json.loads(foreign.body)["type"] == PROBLEM + "turn-not-found"


def test_another_users_conversation_looks_empty(world: World) -> None:
    # GIVEN user A's conversation c-wait has a timeline
    mine = world.deployment.run(http_event("http_list_messages.json", path="/conversations/c-wait/messages"))
    assert mine.status == 200
    assert mine.json["messages"]

    # WHEN user B reads a conversation of the same id
    theirs = world.deployment.run(
        http_event("http_list_messages.json", path="/conversations/c-wait/messages", sub=OTHER_SUB)
    )

    # THEN B sees an empty conversation of its own, not A's
    assert theirs.status == 200
    assert theirs.json == {"conversationId": "c-wait", "activeTurnId": None, "messages": []}
