"""The OpenAPI 3 document of the whole HTTP API, generated from the routes (built once, on first request)."""

from __future__ import annotations

import functools
import json
from typing import Any, Final

from agentturn.api.problems import PROBLEM_CONTENT_TYPE
from agentturn.api.routes import ALL_GROUPS, ROUTES

TITLE: Final = "agentturn"
API_VERSION: Final = "1"
_SECURITY_SCHEME: Final = "jwt"


#: API Gateway answers some requests itself, before any handler runs, and not with a problem document.
_GATEWAY_MESSAGE: Final = {
    "type": "object",
    "required": ["message"],
    "properties": {"message": {"type": "string"}},
    "description": "API Gateway's own error body (`application/json`, not `application/problem+json`): it "
    "answers before any handler of this API runs.",
}
_GATEWAY_REF: Final = {"$ref": "#/components/schemas/GatewayMessage"}
_REF_VALIDATION_ERROR: Final = "#/components/schemas/HTTPValidationError"
_GENERATOR_ERRORS: Final = ("HTTPValidationError", "ResponseValidationError", "ValidationError")
_INVALID_REQUEST: Final = "Request invalid (one entry per problem in `errors`)"


def _gateway_answers(operation: dict[str, Any], *, secured: bool) -> None:
    """Document the 401 of the JWT authorizer and the 429 of API Gateway's throttling with their real bodies."""
    responses = operation.setdefault("responses", {})
    if secured:
        ours = responses.get("401", {}).get("content", {})
        responses["401"] = {
            "description": "No valid token. API Gateway's JWT authorizer refuses a missing, malformed, expired or "
            'foreign token itself, with `{"message": "Unauthorized"}` as `application/json` (not a problem '
            "document); only a request that reached a handler without a verified identity gets a problem.",
            "content": {
                "application/json": {"schema": dict(_GATEWAY_REF), "example": {"message": "Unauthorized"}},
                **ours,
            },
        }
    responses["429"] = {
        "description": "API Gateway's throttling (the stage's or route's rate or burst limit): its own body "
        '`{"message": "Too Many Requests"}` as `application/json`, not a problem document. Retry with backoff.',
        "content": {"application/json": {"schema": dict(_GATEWAY_REF), "example": {"message": "Too Many Requests"}}},
    }


def _with_contract_details(document: dict[str, Any]) -> dict[str, Any]:
    """What the generator cannot know: the JWT security scheme, the ``Idempotency-Key`` header, and the answers
    API Gateway gives itself (401, 429), which are not problem documents.

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
        "description": "Unique per logical request (1 to 128 visible ASCII characters other than ',' and "
        "'\"'; a UUID is one); a retry with the same key and body replays the first answer, the same key with "
        "another body is refused (422). A missing or malformed key is a 400 whose `errors` name the header.",
        "schema": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[!#-+\\--~]+$"},
    }
    schemas = components.setdefault("schemas", {})
    schemas["GatewayMessage"] = dict(_GATEWAY_MESSAGE)
    problem = {PROBLEM_CONTENT_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for route in ROUTES:
        operation = document["paths"][route.template][route.method.lower()]
        responses = operation.setdefault("responses", {})
        if route.public:
            # No authorizer on this route: no token is asked for, none is refused.
            operation["security"] = []
        _gateway_answers(operation, secured=not route.public)
        if route.idempotent:
            operation.setdefault("parameters", []).append(dict(key_parameter))
        # The generator's default 422 (its HTTPValidationError, as application/json) is not what any route
        # answers: every refusal of this API is a problem document.
        if _REF_VALIDATION_ERROR in json.dumps(responses.get("422", {})):
            responses["422"] = {"description": _INVALID_REQUEST, "content": dict(problem)}
        # Any path can be one no route can mean (a control character, a broken escape): a 400 problem, refused
        # before routing (the local gateway; the handlers' own path checks).
        responses.setdefault(
            "400", {"description": "A request path no route can mean, or a malformed request", "content": problem}
        )
    # The generator's own error models, now referenced by no operation, go with it.
    paths = json.dumps(document["paths"])
    if not any(f"#/components/schemas/{name}" in paths for name in _GENERATOR_ERRORS):
        for name in _GENERATOR_ERRORS:
            schemas.pop(name, None)
    return document


@functools.cache
def openapi_document() -> str:
    # Imported here: only the one route that serves the document pays for generating it.
    from agentturn.api.resolver import build_resolver

    resolver = build_resolver(ALL_GROUPS, openapi_document=openapi_document)
    generated = json.loads(resolver.get_openapi_json_schema(title=TITLE, version=API_VERSION))
    return json.dumps(_with_contract_details(generated), separators=(",", ":"), ensure_ascii=False)
