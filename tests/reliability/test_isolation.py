"""Isolation: another user's turn or conversation is indistinguishable from a missing one, whatever the route;
identity comes only from the verified JWT claims; the deployed API refuses requests without a valid token.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentturn.state.messages import FormMessage
from tests.functional.harness import HttpResponse, http_event
from tests.reliability.figures import record
from tests.reliability.kit import VALID_TICKET, Stack, memory_stack

USERS = [f"user-{n}" for n in range(4)]
ID_ALPHABET = st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters="/?#%")


def _turn_routes(turn_id: str, action: str) -> list[tuple[str, dict[str, Any]]]:
    """Every route that names a turn, as (template, overrides)."""
    base = f"/turns/{turn_id}"
    key = {"idempotency-key": "iso-key"}
    return [
        ("http_get_turn.json", {"path": base}),
        (
            "http_submit_form.json",
            {"path": f"{base}/actions/{action}/submit", "body": {"data": VALID_TICKET}, "headers": key},
        ),
        ("http_approve.json", {"path": f"{base}/actions/{action}/approve", "headers": key}),
        ("http_reject.json", {"path": f"{base}/actions/{action}/reject", "body": {"reason": "no"}, "headers": key}),
        ("http_decline.json", {"path": f"{base}/actions/{action}/decline", "body": {"reason": "no"}, "headers": key}),
        ("http_cancel.json", {"path": f"{base}/cancel", "headers": key}),
    ]


def _send(stack: Stack, template: str, sub: str, **overrides: Any) -> HttpResponse:
    event = http_event(template, sub=sub, **overrides)
    return stack.run(event) if template in ("http_get_turn.json", "http_list_messages.json") else stack.submit(event)


def _normalised(answer: HttpResponse, *ids: str) -> tuple[int, str, str]:
    body = answer.body
    for value in ids:
        body = body.replace(value, "<id>")
    return answer.status, answer.headers.get("content-type", ""), body


@pytest.fixture(scope="module")
def world() -> tuple[Stack, dict[str, dict[str, Any]]]:
    stack = memory_stack()
    return stack, {user: stack.start_ticket(f"conv-of-{user}", sub=user) for user in USERS}


def test_other_users_turns_answer_exactly_like_missing_ones(world: tuple[Stack, dict[str, dict[str, Any]]]) -> None:
    stack, turns = world
    before = {u: stack.stored(t["turnId"]) for u, t in turns.items()}
    compared = 0
    # GIVEN every user's waiting turn WHEN every other user calls every turn route on it
    for owner, view in turns.items():
        turn_id, action = view["turnId"], view["suspension"]["actionId"]
        missing_id = "f" * len(turn_id)
        for caller in USERS:
            if caller == owner:
                continue
            for (template, overrides), (_, missing) in zip(
                _turn_routes(turn_id, action), _turn_routes(missing_id, action), strict=True
            ):
                foreign = _send(stack, template, caller, **overrides)
                absent = _send(stack, template, caller, **missing)
                # THEN the answer is a 404, byte for byte the answer for an id that does not exist
                assert foreign.status == 404, (template, foreign.body)
                assert _normalised(foreign, turn_id) == _normalised(absent, missing_id), template
                compared += 1
    # AND nothing of anyone's changed
    assert {u: stack.stored(t["turnId"]) for u, t in turns.items()} == before
    record("isolation", foreign_turn_requests=compared, distinguishable=0, changed=0)


def test_other_users_conversations_look_empty_like_missing_ones(
    world: tuple[Stack, dict[str, dict[str, Any]]],
) -> None:
    stack, _ = world
    compared = 0
    for owner in USERS:
        for caller in USERS:
            if caller == owner:
                continue
            foreign = _send(stack, "http_list_messages.json", caller, path=f"/conversations/conv-of-{owner}/messages")
            absent = _send(stack, "http_list_messages.json", caller, path="/conversations/conv-of-nobody/messages")
            assert foreign.status == 200
            assert foreign.json["messages"] == [] and foreign.json["activeTurnId"] is None
            assert _normalised(foreign, f"conv-of-{owner}") == _normalised(absent, "conv-of-nobody")
            compared += 1
    record("isolation", foreign_conversation_reads=compared)


@settings(max_examples=200, derandomize=True, deadline=None, database=None)
@given(turn_id=st.text(ID_ALPHABET, min_size=1, max_size=80), action=st.text(ID_ALPHABET, min_size=1, max_size=40))
def test_fuzzed_ids_are_a_client_error_never_a_server_error_nor_a_leak(turn_id: str, action: str) -> None:
    stack, turns = _fuzz_world()
    owned = {t["turnId"] for t in turns.values()}
    for template, overrides in _turn_routes(turn_id, action):
        answer = _send(stack, template, USERS[0], **overrides)
        assert answer.status < 500, answer.body
        if turn_id not in owned:
            assert answer.status in (400, 404, 422), (template, answer.status, answer.body)
    record("isolation", fuzzed_id_requests=6)


_FUZZ: dict[str, Any] = {}


def _fuzz_world() -> tuple[Stack, dict[str, dict[str, Any]]]:
    if not _FUZZ:
        stack = memory_stack()
        _FUZZ["world"] = (stack, {"user-1": stack.start_ticket("fuzz", sub="user-1")})
    return _FUZZ["world"]  # type: ignore[no-any-return]


def test_a_forged_identity_in_headers_or_body_is_ignored() -> None:
    # GIVEN user-1's waiting turn
    stack = memory_stack()
    view = stack.start_ticket("forged", sub="user-1")
    turn_id, action = view["turnId"], view["suspension"]["actionId"]
    forged_headers: dict[str, str | None] = {
        "x-user-id": "user-2",
        "x-amzn-oidc-identity": "user-2",
        "x-forwarded-user": "user-2",
        "x-amz-user": "user-2",
        "idempotency-key": "forged-1",
    }
    path = f"/turns/{turn_id}/actions/{action}/submit"
    # WHEN user-2 submits with forged identity headers (and no verified claims of user-1)
    as_other = stack.submit(
        http_event(
            "http_submit_form.json",
            path=path,
            body={"data": VALID_TICKET},
            sub="user-2",
            headers={**forged_headers, "x-user-id": "user-1"},
        )
    )
    # THEN it is a 404: the headers counted for nothing
    assert as_other.status == 404
    # WHEN a request without verified claims carries them THEN it is refused 401
    unauthenticated = stack.submit(
        http_event(
            "http_submit_form.json",
            path=path,
            body={"data": VALID_TICKET},
            sub=None,
            headers={**forged_headers, "x-user-id": "user-1"},
        )
    )
    assert unauthenticated.status == 401
    # WHEN user-1 submits with a body naming someone else as the submitter THEN it is refused (undeclared field)
    forged_body = stack.submit(
        http_event(
            "http_submit_form.json",
            path=path,
            sub="user-1",
            headers=forged_headers,
            body={"data": VALID_TICKET, "submittedBy": "user-2"},
        )
    )
    assert forged_body.status == 422, forged_body.body
    # AND a proper submission with forged headers records the verified subject as the submitter
    accepted = stack.submit(
        http_event(
            "http_submit_form.json",
            path=path,
            sub="user-1",
            headers={**forged_headers, "idempotency-key": "forged-2"},
            body={"data": {**VALID_TICKET}},
        )
    )
    assert accepted.status == 202, accepted.body
    card = next(c for c in stack.store.load(turn_id).cards if isinstance(c, FormMessage))
    assert card.submitted_by == "user-1"
    record("isolation", forged_identity_ignored=4)


@pytest.mark.timeout(120)
def test_the_deployed_api_lets_no_route_through_without_a_valid_jwt(tmp_path_factory: pytest.TempPathFactory) -> None:
    # GIVEN the synthesised stack
    from tests.infra.synth import synthesise

    synth = synthesise(Path(tmp_path_factory.mktemp("cdk-reliability")))
    ((authorizer_id, authorizer),) = synth.of_type("AWS::ApiGatewayV2::Authorizer").items()
    # THEN the authorizer is API Gateway's JWT authorizer (it checks signature, expiry, issuer and audience),
    # reading the Authorization header, with an issuer and a non-empty audience
    properties = authorizer["Properties"]
    assert properties["AuthorizerType"] == "JWT"
    assert properties["IdentitySource"] == ["$request.header.Authorization"]
    jwt = properties["JwtConfiguration"]
    assert jwt.get("Issuer") and jwt.get("Audience"), jwt
    # AND every route requires it
    routes = synth.of_type("AWS::ApiGatewayV2::Route")
    assert routes
    unguarded = [
        r["Properties"]["RouteKey"]
        for r in routes.values()
        if r["Properties"].get("AuthorizationType") != "JWT"
        or r["Properties"].get("AuthorizerId") != {"Ref": authorizer_id}
    ]
    assert not unguarded, unguarded
    assert not any(
        re.fullmatch(r"\$default|ANY /.*", r["Properties"]["RouteKey"])
        and r["Properties"].get("AuthorizationType") != "JWT"
        for r in routes.values()
    )
    record("isolation", routes_behind_jwt=len(routes), routes_without=0)
