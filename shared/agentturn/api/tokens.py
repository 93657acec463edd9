"""A bearer token verified exactly as API Gateway's JWT authorizer verifies it, for the one entry API Gateway does
not front: the streamed AG-UI function behind a Lambda function URL (:mod:`agentturn.api.web_adapter`).

API Gateway's rules (Developer Guide, "Control access to HTTP APIs with JWT authorizers"), in its order:

1. the token is the ``Authorization`` header, alone or after ``Bearer``;
2. it is decoded; its algorithm must be RSA (``RS256``, ``RS384``, ``RS512``: ``none``, HMAC and EC are refused)
   and its signature must verify with the key its header's ``kid`` names among the issuer's JWKS (found through
   the issuer's OpenID discovery document; keys are cached, as API Gateway caches them for up to two hours);
3. ``iss`` equals the issuer; ``aud`` is (or contains) one of the audience, or, only when there is no ``aud``,
   ``client_id`` is; ``exp`` is after now; ``nbf`` and ``iat``, when present, are not after now.

One check more, for Cognito: a token that says what it is (``token_use``) must be an ``access`` or ``id`` token,
the two kinds API Gateway's audience check lets through for the app client.

The verified claims go to the handlers as API Gateway hands them over (``requestContext.authorizer.jwt.claims``,
every value a string), so ``sub`` is the identity on this entry exactly as on the HTTP API.

RSA PKCS#1 v1.5 verification is done here with the standard library (``pow`` and ``hashlib``) by *encoding and
comparing* (RFC 8017, section 8.2.2): the expected padded digest is built and compared in constant time with the
signature raised to the public exponent, nothing of the signature is parsed. That keeps a cryptography wheel
(and its import, ~0.1 s of a cold start) out of every function's bundle; ``tests/unit/test_tokens.py`` checks the
result against tokens PyJWT signs with ``cryptography``'s keys.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

_log = logging.getLogger("agentturn.api.tokens")

#: ``url -> JSON document`` (the discovery document, the JWKS); injectable for tests.
FetchJson = Callable[[str], Any]
Clock = Callable[[], float]

#: API Gateway keeps an issuer's public keys for up to two hours.
KEYS_TTL_SECONDS: Final = 2 * 3600
#: An unknown ``kid`` refetches the keys (a rotation), at most this often: random kids cannot flood the issuer.
REFETCH_INTERVAL_SECONDS: Final = 60.0
FETCH_TIMEOUT_SECONDS: Final = 5.0
MAX_DOCUMENT_BYTES: Final = 1024 * 1024
#: Longest token read (a Cognito token is 1-2 KB; API Gateway's header limit is near 10 KB).
MAX_TOKEN_CHARS: Final = 16 * 1024
#: RSA keys shorter than this are refused (NIST SP 800-131A).
MIN_MODULUS_BITS: Final = 2048
#: Cognito's ``token_use`` values a request may carry.
TOKEN_USES: Final = frozenset({"access", "id"})

# DER of the DigestInfo prefix per hash (RFC 8017, section 9.2, note 1).
_DIGEST_INFO: Final = {
    "RS256": ("sha256", bytes.fromhex("3031300d060960864801650304020105000420")),
    "RS384": ("sha384", bytes.fromhex("3041300d060960864801650304020205000430")),
    "RS512": ("sha512", bytes.fromhex("3051300d060960864801650304020305000440")),
}


class Refusal(StrEnum):
    """Why a token was refused (the ``error_description`` a 401 carries; nothing about the token's content)."""

    MISSING = "no bearer token"
    MALFORMED = "the token is not a JWT"
    ALGORITHM = "the token's algorithm is not RSA (RS256, RS384, RS512)"
    UNKNOWN_KEY = "no key of the issuer has the token's kid"
    SIGNATURE = "the signature does not verify"
    ISSUER = "the token is from another issuer"
    AUDIENCE = "the token is for another audience"
    EXPIRED = "the token has expired"
    NOT_YET_VALID = "the token is not valid yet"
    TOKEN_USE = "the token is neither an access nor an ID token"
    NO_SUBJECT = "the token has no subject"
    KEYS_UNAVAILABLE = "the issuer's keys could not be read"


class TokenRefused(Exception):
    def __init__(self, reason: Refusal) -> None:
        super().__init__(reason.value)
        self.reason = reason


@dataclass(frozen=True)
class RsaKey:
    modulus: int
    exponent: int

    @property
    def size(self) -> int:
        return (self.modulus.bit_length() + 7) // 8


def _b64url(text: str) -> bytes:
    if not text or any(c not in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" for c in text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _int(text: object) -> int:
    return int.from_bytes(_b64url(text if isinstance(text, str) else ""), "big")


def rsa_keys(jwks: object) -> dict[str, RsaKey]:
    """The RSA signing keys of a JWKS by ``kid`` (others, and keys marked for encryption only, are left out)."""
    keys: dict[str, RsaKey] = {}
    entries = jwks.get("keys") if isinstance(jwks, Mapping) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping) or entry.get("kty") != "RSA" or entry.get("use", "sig") != "sig":
            continue
        kid = entry.get("kid")
        try:
            key = RsaKey(_int(entry.get("n")), _int(entry.get("e")))
        except (ValueError, binascii.Error):
            continue
        if isinstance(kid, str) and key.modulus.bit_length() >= MIN_MODULUS_BITS and key.exponent > 1:
            keys[kid] = key
    return keys


def rsa_signature_valid(key: RsaKey, algorithm: str, message: bytes, signature: bytes) -> bool:
    """RSASSA-PKCS1-v1_5 verification by encoding and comparing (RFC 8017, section 8.2.2)."""
    hash_name, prefix = _DIGEST_INFO[algorithm]
    size = key.size
    if len(signature) != size:
        return False
    value = int.from_bytes(signature, "big")
    if value >= key.modulus:
        return False
    encoded = pow(value, key.exponent, key.modulus).to_bytes(size, "big")
    digest_info = prefix + hashlib.new(hash_name, message).digest()
    padding = size - len(digest_info) - 3
    if padding < 8:
        return False
    expected = b"\x00\x01" + b"\xff" * padding + b"\x00" + digest_info
    return hmac.compare_digest(encoded, expected)


def fetch_json(url: str) -> Any:
    """GET ``url`` over HTTPS and parse it (bounded in time and size)."""
    if not url.startswith("https://"):
        raise ValueError(f"keys are read over HTTPS only, not from {url!r}")
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_SECONDS) as response:
        return json.loads(response.read(MAX_DOCUMENT_BYTES + 1)[:MAX_DOCUMENT_BYTES])


@dataclass
class IssuerKeys:
    """The issuer's signing keys, read through its discovery document and cached (per process).

    Read again after :data:`KEYS_TTL_SECONDS`, or sooner for a ``kid`` they lack (a rotation), never more often than
    :data:`REFETCH_INTERVAL_SECONDS`; a read that fails keeps the keys already held."""

    issuer: str
    fetch: FetchJson = fetch_json
    clock: Clock = time.monotonic
    _keys: dict[str, RsaKey] = field(default_factory=dict)
    _loaded_at: float | None = None
    _attempted_at: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def key(self, kid: str) -> RsaKey:
        with self._lock:
            now = self.clock()
            if self._due(kid, now):
                self._refresh(now)
            found = self._keys.get(kid)
            loaded = self._loaded_at is not None
        if found is None:
            raise TokenRefused(Refusal.UNKNOWN_KEY if loaded else Refusal.KEYS_UNAVAILABLE)
        return found

    def _due(self, kid: str, now: float) -> bool:
        if self._attempted_at is None:
            return True
        if now - self._attempted_at < REFETCH_INTERVAL_SECONDS:
            return False
        return kid not in self._keys or self._loaded_at is None or now - self._loaded_at >= KEYS_TTL_SECONDS

    def _refresh(self, now: float) -> None:
        self._attempted_at = now
        try:
            keys = rsa_keys(
                self.fetch(_jwks_uri(self.fetch(self.issuer.rstrip("/") + "/.well-known/openid-configuration")))
            )
        except (OSError, ValueError) as error:
            _log.warning("could not read the signing keys of %r: %s", self.issuer, error)
            return  # keep the keys held; the next request after the interval tries again
        self._keys, self._loaded_at = keys, now


def _jwks_uri(discovery: object) -> str:
    jwks_uri = discovery.get("jwks_uri") if isinstance(discovery, Mapping) else None
    if not isinstance(jwks_uri, str):
        raise ValueError("the discovery document names no jwks_uri")  # noqa: TRY004 (a bad document: ValueError)
    return jwks_uri


@dataclass(frozen=True)
class JwtVerifier:
    issuer: str
    audience: Sequence[str]
    keys: IssuerKeys
    #: Wall-clock seconds (``exp``/``nbf``/``iat`` are epoch seconds).
    now: Clock = time.time

    @classmethod
    def for_issuer(cls, issuer: str, audience: Sequence[str], *, fetch: FetchJson = fetch_json) -> JwtVerifier:
        return cls(issuer, tuple(audience), IssuerKeys(issuer, fetch))

    def verify(self, authorization: str | None) -> dict[str, str]:
        """The claims of a valid token, as API Gateway passes them on (strings); :class:`TokenRefused` otherwise."""
        token = bearer_token(authorization)
        header, claims, signed, signature = _decode(token)
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in _DIGEST_INFO:
            raise TokenRefused(Refusal.ALGORITHM)
        kid = header.get("kid")
        if not isinstance(kid, str):
            raise TokenRefused(Refusal.UNKNOWN_KEY)
        if not rsa_signature_valid(self.keys.key(kid), algorithm, signed, signature):
            raise TokenRefused(Refusal.SIGNATURE)
        self._check_claims(claims)
        return {name: _claim_text(value) for name, value in claims.items()}

    def _check_claims(self, claims: Mapping[str, Any]) -> None:
        if claims.get("iss") != self.issuer:
            raise TokenRefused(Refusal.ISSUER)
        audience = claims.get("aud") if "aud" in claims else claims.get("client_id")
        audiences = audience if isinstance(audience, list) else [audience]
        if not any(isinstance(a, str) and a in self.audience for a in audiences):
            raise TokenRefused(Refusal.AUDIENCE)
        now = self.now()
        expires = _seconds(claims.get("exp"))
        if expires is None or expires <= now:
            raise TokenRefused(Refusal.EXPIRED)
        for name in ("nbf", "iat"):
            since = _seconds(claims.get(name, now))
            if since is None or since > now:
                raise TokenRefused(Refusal.NOT_YET_VALID)
        if "token_use" in claims and claims["token_use"] not in TOKEN_USES:
            raise TokenRefused(Refusal.TOKEN_USE)
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise TokenRefused(Refusal.NO_SUBJECT)


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization`` header: the value itself or what follows ``Bearer`` (API Gateway's rule)."""
    value = (authorization or "").strip()
    scheme, _, rest = value.partition(" ")
    token = rest.strip() if scheme.lower() == "bearer" else value
    if not token:
        raise TokenRefused(Refusal.MISSING)
    return token


def _decode(token: str) -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
    parts = token.split(".")
    if len(token) > MAX_TOKEN_CHARS or len(parts) != 3:
        raise TokenRefused(Refusal.MALFORMED)
    try:
        header = json.loads(_b64url(parts[0]))
        claims = json.loads(_b64url(parts[1]))
        signature = _b64url(parts[2]) if parts[2] else b""
    except (ValueError, binascii.Error, RecursionError):
        # RecursionError: a header or payload nested thousands deep (a 16 KB token can be) is not a JWT either,
        # and it is read before any signature is checked, so anyone could send it.
        raise TokenRefused(Refusal.MALFORMED) from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise TokenRefused(Refusal.MALFORMED)
    return header, claims, f"{parts[0]}.{parts[1]}".encode("ascii"), signature


def _seconds(value: object) -> float | None:
    """A NumericDate claim (epoch seconds), or ``None`` for anything else."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _claim_text(value: object) -> str:
    """A claim as API Gateway hands it to the integration: strings as they are, anything else as JSON text."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + " ".join(_claim_text(item) for item in value) + "]"
    return json.dumps(value)
