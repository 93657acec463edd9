"""The OpenAPI 3 document of the whole HTTP API, generated from the routes (built once, on first request)."""

from __future__ import annotations

import functools
import json
from typing import Any, Final

from agentturn.api.routes import ALL_GROUPS, ROUTES

TITLE: Final = "agentturn"
API_VERSION: Final = "1"
_SECURITY_SCHEME: Final = "jwt"


def _with_contract_details(document: dict[str, Any]) -> dict[str, Any]:
    """What the generator cannot know: the JWT security scheme and the ``Idempotency-Key`` header.

    The header is read by the routes themselves rather than declared as a Powertools parameter: the
    resolver splits header values at commas, and a key must reach the idempotency check exactly as sent.
    """
    components = document.setdefault("components", {})
    components.setdefault("securitySchemes", {})[_SECURITY_SCHEME] = {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": "Verified by API Gateway's JWT authorizer; the caller is the token's `sub` claim.",
    }
    document["security"] = [{_SECURITY_SCHEME: []}]
    key_parameter = {
        "name": "Idempotency-Key",
        "in": "header",
        "required": True,
        "description": "Unique per logical request; a retry with the same key and body replays the first "
        "answer, the same key with another body is refused (422).",
        "schema": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[!#-+\\--~]+$"},
    }
    for route in ROUTES:
        if not route.idempotent:
            continue
        operation = document["paths"][route.template][route.method.lower()]
        operation.setdefault("parameters", []).append(dict(key_parameter))
    return document


@functools.cache
def openapi_document() -> str:
    # Imported here: only the one route that serves the document pays for generating it.
    from agentturn.api.resolver import build_resolver

    resolver = build_resolver(ALL_GROUPS, openapi_document=openapi_document)
    generated = json.loads(resolver.get_openapi_json_schema(title=TITLE, version=API_VERSION))
    return json.dumps(_with_contract_details(generated), separators=(",", ":"), ensure_ascii=False)
