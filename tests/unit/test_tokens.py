"""The streamed AG-UI entry's token check (agentturn.api.tokens) against tokens made by PyJWT with keys made by
``cryptography``: what API Gateway's JWT authorizer accepts passes, everything it refuses is refused (and answered
401 problem+json by the entry), and the issuer's keys are read once and cached."""

from __future__ import annotations

import base64
import json
from typing import Any, Final

import pytest
from tests.support.tokens import CLIENT, ISSUER, KID, OTHER_KEY, SIGNING_KEY, Issuer, claims, rsa_key, token

from agentturn.api.http import HttpApi
from agentturn.api.tokens import (
    KEYS_TTL_SECONDS,
    REFETCH_INTERVAL_SECONDS,
    IssuerKeys,
    JwtVerifier,
    Refusal,
    TokenRefused,
)
from agentturn.api.web_adapter import GROUPS, WebAdapterApp

NOW: Final = 1_800_000_000


class Monotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _claims(**changes: Any) -> dict[str, Any]:
    return claims(NOW, **changes)


def _token(values: dict[str, Any] | None = None, *, key: Any = SIGNING_KEY, kid: str = KID, alg: str = "RS256") -> str:
    return token(values if values is not None else _claims(), key=key, kid=kid, alg=alg)


def _verifier(issuer: Issuer | None = None, clock: Monotonic | None = None) -> JwtVerifier:
    source = issuer or Issuer((SIGNING_KEY, KID))
    keys = IssuerKeys(ISSUER, source.fetch, clock or Monotonic())
    return JwtVerifier(ISSUER, (CLIENT,), keys, now=lambda: float(NOW))


def _refusal(authorization: str | None, verifier: JwtVerifier | None = None) -> Refusal:
    with pytest.raises(TokenRefused) as refused:
        (verifier or _verifier()).verify(authorization)
    return refused.value.reason


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


# ------------------------------------------------------------------------------------------------ accepted


@pytest.mark.parametrize("prefix", ["Bearer ", "bearer ", ""])
def test_a_cognito_access_token_is_accepted_with_or_without_bearer(prefix: str) -> None:
    # GIVEN an access token of the app client (client_id, no aud), signed RS256 by the issuer's key
    # WHEN verified THEN its claims come back as API Gateway hands them over: strings, sub the identity
    claims = _verifier().verify(prefix + _token())
    assert claims["sub"] == "alice-sub"
    assert claims["exp"] == str(NOW + 3600)
    assert claims["token_use"] == "access"


def test_an_id_token_with_aud_and_the_other_rsa_algorithms_are_accepted() -> None:
    id_claims = _claims(client_id=None, aud=CLIENT, token_use="id")
    for alg in ("RS256", "RS384", "RS512"):
        assert _verifier().verify(_token(id_claims, alg=alg))["sub"] == "alice-sub"
    # an audience list holding the client, and an OIDC token without token_use
    assert _verifier().verify(_token(_claims(client_id=None, aud=["other", CLIENT], token_use=None)))["aud"]


# ------------------------------------------------------------------------------------------------ refused


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        (_claims(iss="https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Other"), Refusal.ISSUER),
        (_claims(iss=None), Refusal.ISSUER),
        (_claims(client_id="another-client"), Refusal.AUDIENCE),
        (_claims(client_id=None), Refusal.AUDIENCE),
        # aud present: it is the one evaluated, even when client_id would match (API Gateway's rule)
        (_claims(aud="another-client"), Refusal.AUDIENCE),
        (_claims(exp=NOW - 1), Refusal.EXPIRED),
        (_claims(exp=NOW), Refusal.EXPIRED),
        (_claims(exp=None), Refusal.EXPIRED),
        (_claims(nbf=NOW + 60), Refusal.NOT_YET_VALID),
        (_claims(iat=NOW + 60), Refusal.NOT_YET_VALID),
        (_claims(token_use="refresh"), Refusal.TOKEN_USE),
        (_claims(sub=None), Refusal.NO_SUBJECT),
        (_claims(sub=""), Refusal.NO_SUBJECT),
    ],
    ids=[
        "wrong-issuer", "no-issuer", "wrong-client", "no-audience", "aud-wins", "expired", "expires-now",
        "no-exp", "nbf-future", "iat-future", "refresh-token", "no-sub", "blank-sub",
    ],
)  # fmt: skip
def test_claims_api_gateway_refuses_are_refused(claims: dict[str, Any], reason: Refusal) -> None:
    assert _refusal(_token(claims)) is reason


def test_a_bad_signature_is_refused() -> None:
    # GIVEN a token signed by another key under the issuer's kid, and a valid token whose claims were changed
    forged = _token(key=OTHER_KEY)
    header, _, signature = _token().split(".")
    tampered = ".".join((header, _b64(_claims(sub="mallory")), signature))
    # THEN neither verifies
    assert _refusal(forged) is Refusal.SIGNATURE
    assert _refusal(tampered) is Refusal.SIGNATURE
    assert _refusal(_token().rsplit(".", 1)[0] + ".") is Refusal.SIGNATURE


@pytest.mark.parametrize("alg", ["none", "HS256", "ES256", "PS256"])
def test_only_rsa_pkcs1_algorithms_are_accepted(alg: str) -> None:
    # GIVEN alg none (no signature), HS256 keyed with the issuer's public JWK (the algorithm-confusion attack),
    # and algorithms API Gateway does not take
    header = _b64({"alg": alg, "kid": KID, "typ": "JWT"})
    token = f"{header}.{_b64(_claims())}.{'c2ln' if alg != 'none' else ''}"
    # THEN each is refused before any key is looked at
    assert _refusal(token) is Refusal.ALGORITHM


@pytest.mark.parametrize(
    "authorization", [None, "", "Bearer ", "Bearer a.b", "Bearer a.b.c.d", "Bearer !!!.e30.", "Basic dXNlcjpwdw=="]
)
def test_a_missing_or_malformed_token_is_refused(authorization: str | None) -> None:
    assert _refusal(authorization) in {Refusal.MISSING, Refusal.MALFORMED}


def test_a_header_nested_thousands_deep_is_a_malformed_token_not_a_crash() -> None:
    # GIVEN a token whose header is 6,000 nested arrays (within the 16 KB a token may have), unsigned
    deep = base64.urlsafe_b64encode(("[" * 6000 + "]" * 6000).encode()).decode().rstrip("=")
    # WHEN it is verified
    # THEN it is refused as not a JWT (the parser's recursion limit is not a server error)
    assert _refusal(f"Bearer {deep}.{_b64(_claims())}.c2ln") is Refusal.MALFORMED


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")
def test_an_unknown_kid_and_a_short_key_are_refused() -> None:
    assert _refusal(_token(kid="not-a-key")) is Refusal.UNKNOWN_KEY
    # a 1024-bit key in the JWKS is left out: its tokens find no key
    weak = rsa_key(1024)
    issuer = Issuer((SIGNING_KEY, KID), (weak, "weak"))
    assert _refusal(_token(key=weak, kid="weak"), _verifier(issuer)) is Refusal.UNKNOWN_KEY


# ------------------------------------------------------------------------------------------------ keys


def test_the_keys_are_read_once_and_again_after_the_cache_time() -> None:
    # GIVEN a verifier whose issuer counts its reads
    issuer, clock = Issuer((SIGNING_KEY, KID)), Monotonic()
    verifier = _verifier(issuer, clock)
    # WHEN three tokens are verified THEN the discovery document and the JWKS were read once
    for _ in range(3):
        verifier.verify(_token())
    assert len(issuer.reads) == 2
    # WHEN the cache time passes THEN the next token reads them again
    clock.now += KEYS_TTL_SECONDS
    verifier.verify(_token())
    assert len(issuer.reads) == 4


def test_a_rotated_key_is_found_but_unknown_kids_cannot_flood_the_issuer() -> None:
    issuer, clock = Issuer((SIGNING_KEY, KID)), Monotonic()
    verifier = _verifier(issuer, clock)
    verifier.verify(_token())
    # GIVEN the issuer rotates in a new key
    issuer.keys.append((OTHER_KEY, "key-2"))
    # WHEN tokens of unknown kids arrive within the interval THEN the keys are not read again
    assert _refusal(_token(key=OTHER_KEY, kid="key-2"), verifier) is Refusal.UNKNOWN_KEY
    assert _refusal(_token(kid="random"), verifier) is Refusal.UNKNOWN_KEY
    assert len(issuer.reads) == 2
    # WHEN the interval has passed THEN the new kid makes one read, and its token verifies
    clock.now += REFETCH_INTERVAL_SECONDS
    assert verifier.verify(_token(key=OTHER_KEY, kid="key-2"))["sub"] == "alice-sub"
    assert len(issuer.reads) == 4


def test_an_issuer_that_cannot_be_read_refuses_and_keeps_the_keys_it_had() -> None:
    issuer, clock = Issuer((SIGNING_KEY, KID)), Monotonic()
    issuer.down = True
    verifier = _verifier(issuer, clock)
    assert _refusal(_token(), verifier) is Refusal.KEYS_UNAVAILABLE
    issuer.down = False
    clock.now += REFETCH_INTERVAL_SECONDS
    verifier.verify(_token())
    # a failed refresh after the cache time keeps the keys already held
    issuer.down = True
    clock.now += KEYS_TTL_SECONDS
    assert verifier.verify(_token())["sub"] == "alice-sub"


# ------------------------------------------------------------------------------------------------ the entry


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (None, Refusal.MISSING),
        (_token(_claims(iss="https://issuer.example.com")), Refusal.ISSUER),
        (_token(_claims(client_id="another-client")), Refusal.AUDIENCE),
        (_token(_claims(exp=NOW - 1)), Refusal.EXPIRED),
        (_token(key=OTHER_KEY), Refusal.SIGNATURE),
        (f"{_b64({'alg': 'none', 'kid': KID})}.{_b64(_claims())}.", Refusal.ALGORITHM),
    ],
    ids=["no-token", "wrong-issuer", "wrong-audience", "expired", "bad-signature", "alg-none"],
)
def test_the_entry_answers_a_refused_token_401_problem_json_before_anything_runs(
    token: str | None, reason: Refusal
) -> None:
    # GIVEN the streamed AG-UI entry whose services would fail if anything reached them
    def no_services() -> Any:
        raise AssertionError("a refused request reached the services")

    app = WebAdapterApp(HttpApi(GROUPS, services=no_services), _verifier())
    headers = [("Content-Type", "application/json")] + ([("Authorization", f"Bearer {token}")] if token else [])
    body = json.dumps({"threadId": "t1", "runId": "r1", "messages": []}).encode()
    # WHEN a run is posted with the token
    answer = app.answer("POST", "/ag-ui/agent", headers, body, "192.0.2.1")
    # THEN it is a 401 problem naming why, with the Bearer challenge API Gateway sends
    assert answer.status == 401
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert answer.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token"')
    problem = json.loads(b"".join(answer.chunks))
    assert problem["status"] == 401
    assert problem["detail"] == f"the bearer token was refused: {reason.value}"


def test_the_entry_answers_an_unknown_route_404_before_looking_at_the_token() -> None:
    app = WebAdapterApp(HttpApi(GROUPS, services=lambda: pytest.fail("no services")), _verifier())
    answer = app.answer("POST", "/conversations/c1/turns", [], b"", "192.0.2.1")
    assert answer.status == 404
