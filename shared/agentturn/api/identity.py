"""Who is calling: only the verified JWT claims that API Gateway's JWT authorizer put in the event.

Never a header or the body. The resolver is a plain function so another entry point can choose how the
event carries identity; the local dev server does not replace it, it builds events whose authorizer
claims it synthesised itself, exactly as API Gateway does after verifying a token.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

#: ``event -> subject`` or ``None`` when the event carries no (usable) verified identity.
IdentityResolver = Callable[[Mapping[str, Any]], str | None]

MAX_SUBJECT_LENGTH: Final = 256


def valid_subject(value: object) -> bool:
    """A subject we can key data by: a non-blank string of printable characters, bounded in length."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_SUBJECT_LENGTH
        and value.strip() == value
        and value.isprintable()
    )


def _get(node: object, key: str) -> object:
    return node.get(key) if isinstance(node, Mapping) else None


def jwt_subject(event: Mapping[str, Any]) -> str | None:
    """``requestContext.authorizer.jwt.claims.sub`` of an HTTP API (payload 2.0) event."""
    claims = _get(_get(_get(_get(event, "requestContext"), "authorizer"), "jwt"), "claims")
    subject = _get(claims, "sub")
    return subject if isinstance(subject, str) and valid_subject(subject) else None


def jwt_groups(event: Mapping[str, Any], claim: str) -> frozenset[str]:
    """The caller's groups: the verified token's ``claim`` (``cognito:groups`` by default), and nothing else —
    never a header or the body. API Gateway's JWT authorizer hands an array claim over as one string
    (``"[finance oncall]"``); :func:`agentturn.state.approvers.groups_from_claim` reads every form."""
    from agentturn.state.approvers import groups_from_claim

    claims = _get(_get(_get(_get(event, "requestContext"), "authorizer"), "jwt"), "claims")
    return groups_from_claim(_get(claims, claim))
