"""A server's ``inputRequests`` as cards, and the person's answers as ``inputResponses``.

A form-mode request becomes a form whose schema is the server's ``requestedSchema`` once it is found inside
MCP's restricted subset (a flat object of primitive properties: strings with the four formats, numbers,
integers, booleans, single- and multi-select enums), titled with the server that asks and described by its
message. Anything else is refused before a person sees it. Answers map one to one: submit → ``accept`` with
the values, decline → ``decline``, a wait that expired → ``cancel``.
"""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import urlsplit

from agentturn.forms.definitions import FormDefinition
from agentturn.forms.rounds import InputRequest, RoundAction, RoundAnswer
from agentturn.mcp.server import MCPServer

_FORMATS = frozenset({"email", "uri", "date", "date-time"})
_COMMON = frozenset({"type", "title", "description", "default"})
_ALLOWED: dict[str, frozenset[str]] = {
    "string": _COMMON | {"minLength", "maxLength", "format", "enum", "enumNames", "oneOf"},
    "number": _COMMON | {"minimum", "maximum"},
    "integer": _COMMON | {"minimum", "maximum"},
    "boolean": _COMMON,
    "array": _COMMON | {"minItems", "maxItems", "items"},
}
_TOP = frozenset({"type", "properties", "required", "$schema", "title", "description"})


class ElicitationRefused(ValueError):
    """A request agentturn will not show a person; the message says why (it reaches the model)."""


def _titled_consts(options: Any, where: str) -> None:
    if not isinstance(options, list) or not options:
        raise ElicitationRefused(f"{where} must be a non-empty list of {{const, title}}")
    for option in options:
        if not isinstance(option, dict) or set(option) - {"const", "title"} or not isinstance(option.get("const"), str):
            raise ElicitationRefused(f"{where} may hold only {{const: string, title}} options")


def _check_property(name: str, schema: Any) -> None:
    where = f"property {name!r}"
    if not isinstance(schema, dict):
        raise ElicitationRefused(f"{where} is not a schema object")
    kind = schema.get("type")
    if kind not in _ALLOWED:
        raise ElicitationRefused(f"{where} has type {kind!r}; MCP forms hold only primitive fields")
    extra = set(schema) - _ALLOWED[kind]
    if extra:
        raise ElicitationRefused(f"{where} uses {sorted(extra)!r}, outside MCP's form subset")
    if kind == "string":
        if "format" in schema and schema["format"] not in _FORMATS:
            raise ElicitationRefused(f"{where} has format {schema['format']!r}; MCP allows {sorted(_FORMATS)!r}")
        if "enum" in schema and (
            not isinstance(schema["enum"], list) or not all(isinstance(v, str) for v in schema["enum"])
        ):
            raise ElicitationRefused(f"{where}: enum must list strings")
        if "oneOf" in schema:
            _titled_consts(schema["oneOf"], f"{where}: oneOf")
    if kind == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            raise ElicitationRefused(f"{where}: a multi-select needs items")
        if "anyOf" in items and set(items) <= {"anyOf"}:
            _titled_consts(items["anyOf"], f"{where}: items.anyOf")
        elif items.get("type") == "string" and set(items) <= {"type", "enum"} and isinstance(items.get("enum"), list):
            if not all(isinstance(v, str) for v in items["enum"]):
                raise ElicitationRefused(f"{where}: items.enum must list strings")
        else:
            raise ElicitationRefused(f"{where}: arrays are allowed only as multi-select enums of strings")


def check_requested_schema(schema: Any) -> dict[str, Any]:
    """``schema`` if it is inside MCP's restricted subset, else :class:`ElicitationRefused`."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ElicitationRefused('requestedSchema must be an object schema ("type": "object")')
    extra = set(schema) - _TOP
    if extra:
        raise ElicitationRefused(f"requestedSchema uses {sorted(extra)!r}, outside MCP's form subset")
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise ElicitationRefused("requestedSchema.properties must be an object")
    for name, prop in properties.items():
        _check_property(name, prop)
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) and r in properties for r in required):
        raise ElicitationRefused("requestedSchema.required must name its properties")
    return schema


def form_request(server: MCPServer, key: str, params: dict[str, Any], previous: RoundAnswer | None) -> InputRequest:
    """The card for one form-mode request (``previous``: this key's answer in the last round, pre-filled)."""
    message = params.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ElicitationRefused(f"input request {key!r} has no message")
    schema = copy.deepcopy(check_requested_schema(params.get("requestedSchema")))
    schema.pop("$schema", None)  # the subset is the same in every draft; our validator reads 2020-12
    # The card says who asks (MCP: a client must make clear which server requests information).
    label = f"{server.name} (MCP server)"
    schema["title"] = f"{label}: {schema['title']}" if isinstance(schema.get("title"), str) else label
    schema["description"] = message
    if previous is not None and previous.action is RoundAction.ACCEPT and previous.content:
        for name, value in previous.content.items():
            if name in schema.get("properties", {}):
                schema["properties"][name]["default"] = value
    try:
        form = FormDefinition(key, message, schema)
    except ValueError as exc:
        raise ElicitationRefused(f"input request {key!r}: {exc}") from None
    return InputRequest(key=key, form=form, origin={"kind": "mcp", "server": server.name, "mode": "form"})


def url_request(server: MCPServer, key: str, params: dict[str, Any]) -> InputRequest:
    """The card for one URL-mode request: no field to fill in, the domain in plain view, consent by "accept".

    The card shows the message, the domain and the whole URL as text (the person opens it; the client never
    does); submitting it is consent and retries the call, declining it says no. A link that is not HTTPS
    (plain HTTP only to loopback) or that hides credentials is refused before anyone sees it.
    """
    from agentturn.mcp.server import is_loopback  # the one rule for plain HTTP

    message = params.get("message")
    url = params.get("url")
    if not isinstance(message, str) or not message.strip():
        raise ElicitationRefused(f"input request {key!r} has no message")
    if not isinstance(url, str) or len(url) > 2048:
        raise ElicitationRefused(f"input request {key!r} has no usable url")
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme not in ("https", "http") or not host or (parts.scheme == "http" and not is_loopback(host)):
        raise ElicitationRefused(f"input request {key!r} links to {url[:200]!r}, which is not an https:// URL")
    if parts.username or parts.password:
        raise ElicitationRefused(f"input request {key!r} links to a URL with credentials in it")
    schema = {
        "type": "object",
        "title": f"{server.name} asks you to open {host}",
        "description": f"{message}\n\nOpens {host}: {url}\nSubmit once you are done there, or decline.",
        "properties": {},
    }
    form = FormDefinition(key, message, schema)
    origin = {"kind": "mcp", "server": server.name, "mode": "url", "url": url, "domain": host}
    return InputRequest(key=key, form=form, origin=origin)


def input_response(answer: RoundAnswer, mode: str = "form") -> dict[str, Any]:
    """An ``ElicitResult`` for one answer (a URL-mode accept is consent: it carries no content)."""
    if answer.action is RoundAction.ACCEPT and mode == "form":
        return {"action": "accept", "content": dict(answer.content or {})}
    return {"action": answer.action.value}
