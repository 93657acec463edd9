"""The request gate: what a body must be before anything parses or stores it.

Checked on the raw event, before routing validation: size (after base64 decoding, computed before
decoding), media type, UTF-8, and strict JSON — no duplicate keys (two parsers would disagree on which
one wins), no ``NaN``/``Infinity`` (not JSON), bounded nesting, no lone surrogates (they cannot be
stored as UTF-8). Each refusal is a :class:`ProblemError`; nothing has been read or written yet.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping
from email.message import Message
from typing import Any, Final

from agentturn.api import problems

#: Deeper than any form or metadata needs; keeps every later recursive walk (validation, storage) shallow.
MAX_JSON_DEPTH: Final = 32


class _Refused(ValueError):
    """A JSON document that parses in Python but is not one we accept."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Refused(f"duplicate key {key!r}")
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"number {text[:40]!r} is out of range")
    return value


def _check_tree(document: Any) -> None:
    """Depth and string checks, iteratively (a recursive walk would be the thing that overflows)."""
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            _check_text(node)
            continue
        if not isinstance(node, dict | list):
            continue
        if depth > MAX_JSON_DEPTH:
            raise _Refused(f"nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(node, dict):
            for key, value in node.items():
                _check_text(key)
                stack.append((value, depth + 1))
        else:
            stack.extend((item, depth + 1) for item in node)


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _Refused("a string holds a lone surrogate (\\ud800-\\udfff), which is not Unicode text") from None


def strict_loads(text: str | bytes) -> Any:
    """``json.loads`` that refuses what :mod:`agentturn.api.body` describes (``ValueError``)."""
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise _Refused(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    _check_tree(document)
    return document


def is_json_media_type(content_type: str | None) -> bool:
    """``application/json``, charset (if any) UTF-8.

    Not the ``application/*+json`` family: the resolver parses only ``application/json`` as JSON, and a
    type the gate accepted must never be refused (or parsed differently) further in.
    """
    if not content_type:
        return False
    media_type, *parameters = (part.strip() for part in content_type.split(";"))
    if media_type.lower() != "application/json":
        return False
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return False
    return True


def _decoded_size(encoded: str) -> int:
    """Bytes a base64 text decodes to, without decoding it."""
    stripped = encoded.rstrip()
    padding = len(stripped) - len(stripped.rstrip("="))
    return max(0, len(stripped) * 3 // 4 - padding)


def declared_length(headers: Message) -> int | None:
    """A raw HTTP request's body length as its headers declare it (0: none), for the servers that read bodies off
    a socket (the AG-UI streaming entry, the dev gateway); ``None`` when it cannot be known exactly: a
    ``Transfer-Encoding`` (not served), a Content-Length that is not one decimal number, or several that differ
    (a proxy and the server could each pick another: request smuggling)."""
    if headers.get("Transfer-Encoding") is not None:
        return None
    values = {value.strip() for value in headers.get_all("Content-Length") or []}
    if not values:
        return 0
    if len(values) > 1:
        return None
    (value,) = values
    return int(value) if value.isascii() and value.isdigit() else None


def header(event: Mapping[str, Any], name: str) -> str | None:
    """A request header (HTTP API lower-cases names; a hand-built event may not)."""
    headers = event.get("headers")
    if not isinstance(headers, Mapping):
        return None
    value = headers.get(name.lower())
    if value is None:
        value = next((v for k, v in headers.items() if isinstance(k, str) and k.lower() == name.lower()), None)
    return value if isinstance(value, str) else None


def read_json_body(event: Mapping[str, Any], *, max_bytes: int) -> Any | None:
    """The parsed body, ``None`` when there is none; :class:`ProblemError` (400/413/415) when refused."""
    raw = event.get("body")
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise problems.malformed_body("the event's body is not text")
    if event.get("isBase64Encoded") is True:
        size = _decoded_size(raw)
        if size > max_bytes:
            raise problems.payload_too_large(size, max_bytes)
        try:
            data = base64.b64decode(raw, validate=True)
        except binascii.Error:
            raise problems.malformed_body("the body is not valid base64") from None
    else:
        try:
            data = raw.encode("utf-8")
        except UnicodeEncodeError:
            raise problems.malformed_body("the body is not valid UTF-8 text") from None
    if len(data) > max_bytes:
        raise problems.payload_too_large(len(data), max_bytes)
    content_type = header(event, "content-type")
    if not is_json_media_type(content_type):
        raise problems.unsupported_media_type(content_type)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise problems.malformed_body(f"the body is not valid UTF-8 (byte {exc.start})") from None
    if not text.strip():
        return None
    try:
        return strict_loads(text)
    except json.JSONDecodeError as exc:
        raise problems.malformed_body(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:  # _Refused, and int() refusing a number with thousands of digits
        raise problems.malformed_body(f"refused JSON: {exc}") from None
