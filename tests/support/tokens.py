"""An OpenID issuer for tests: RSA keys made by ``cryptography``, its discovery document and JWKS served through an
injected fetch (counting reads), and tokens signed by PyJWT (the official library, not the code under test)."""

from __future__ import annotations

import json
from typing import Any, Final

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

ISSUER: Final = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Example"
CLIENT: Final = "agentturn-client"
KID: Final = "key-1"


def rsa_key(bits: int = 2048) -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


SIGNING_KEY: Final = rsa_key()
OTHER_KEY: Final = rsa_key()


def jwk(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    return {**document, "kid": kid, "use": "sig", "alg": "RS256"}


class Issuer:
    """The issuer's discovery document and JWKS, counting the reads."""

    def __init__(self, *keys: tuple[rsa.RSAPrivateKey, str]) -> None:
        self.keys = list(keys) or [(SIGNING_KEY, KID)]
        self.reads: list[str] = []
        self.down = False

    def fetch(self, url: str) -> Any:
        self.reads.append(url)
        if self.down:
            raise OSError("connection refused")
        if url == f"{ISSUER}/.well-known/openid-configuration":
            return {"issuer": ISSUER, "jwks_uri": f"{ISSUER}/.well-known/jwks.json"}
        if url == f"{ISSUER}/.well-known/jwks.json":
            return {"keys": [jwk(key, kid) for key, kid in self.keys]}
        raise AssertionError(url)


def claims(now: int, **changes: Any) -> dict[str, Any]:
    """A Cognito access token's claims for ``alice-sub``; a change to ``None`` leaves the claim out."""
    values: dict[str, Any] = {
        "sub": "alice-sub",
        "iss": ISSUER,
        "client_id": CLIENT,
        "token_use": "access",
        "iat": now - 60,
        "exp": now + 3600,
        "username": "alice",
    }
    values.update(changes)
    return {k: v for k, v in values.items() if v is not None}


def token(values: dict[str, Any], *, key: Any = SIGNING_KEY, kid: str = KID, alg: str = "RS256") -> str:
    return jwt.encode(values, key, algorithm=alg, headers={"kid": kid})
