"""What a form's schema may hold: checked once, when the form is built, so that no submission can meet a schema
that cannot be checked safely or the same way in the browser.

Refused, each with a :class:`SchemaRefusedError` that says where and why:

- anything that is not valid JSON Schema draft 2020-12, or that declares another ``$schema``;
- a ``$ref`` that is not a JSON Pointer into the same document (``#/...``), or that points at nothing;
- a ``$ref`` cycle that never moves into the data (``{"$ref": "#"}`` at the root, ``a → b → a`` through
  ``$ref``/``allOf``/``anyOf``/``oneOf``/``not``/``if``/``then``/``else``/``dependentSchemas``): checking any
  submission against it would never end. Recursion through ``properties`` or ``items`` is fine: each round
  moves one level into the data, whose depth is limited;
- ``$id``, ``$anchor``, ``$dynamicRef``, ``$dynamicAnchor``, ``$recursiveRef``, ``$recursiveAnchor``: they
  change what a reference means, and the browser's validator caches schemas by ``$id``;
- ``pattern``/``patternProperties`` that are not ECMA-262 ``u``-mode expressions, use backreferences, or nest
  unbounded repetition (see :mod:`agentturn.forms.ecma_regex`);
- a ``format`` that neither the server nor the console checks (anything outside
  :data:`agentturn.forms.formats.FORMATS`): silently not checking it would accept what its author meant to refuse;
- keywords that mean something else to the console's validator than to draft 2020-12 (``dependencies``,
  ``additionalItems``, and ajv-formats' ``formatMinimum``-family).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from agentturn.forms.checked import checked_at_build, passed_meta_check, schema_digest
from agentturn.forms.ecma_regex import PatternError, compile_ecma
from agentturn.forms.formats import FORMATS

DRAFT_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator


@functools.cache
def _meta() -> Draft202012Validator:
    """The meta-schema's validator, built when the first schema is checked: jsonschema (≈ 0.1 s to import) is
    then loaded only by a process that defines a form or checks a submission, not by every one that imports
    the runtime (the sweeper, the reads)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(Draft202012Validator.META_SCHEMA)


_FORBIDDEN: Final = {
    "$id": "$id is not supported: forms are identified by their formKey",
    "$anchor": "$anchor is not supported: use a JSON Pointer $ref such as #/$defs/name",
    "$dynamicRef": "$dynamicRef is not supported",
    "$dynamicAnchor": "$dynamicAnchor is not supported",
    "$recursiveRef": "$recursiveRef is not supported",
    "$recursiveAnchor": "$recursiveAnchor is not supported",
    "dependencies": "dependencies is a draft-07 keyword: use dependentRequired or dependentSchemas",
    "additionalItems": "additionalItems is a draft-07 keyword: use prefixItems and items",
    "formatMinimum": "formatMinimum is not JSON Schema and is not checked on the server",
    "formatMaximum": "formatMaximum is not JSON Schema and is not checked on the server",
    "formatExclusiveMinimum": "formatExclusiveMinimum is not JSON Schema and is not checked on the server",
    "formatExclusiveMaximum": "formatExclusiveMaximum is not JSON Schema and is not checked on the server",
}

#: Keywords whose value is one subschema / a list of them / a map of them.
SINGLE: Final = (
    "additionalProperties",
    "unevaluatedProperties",
    "items",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
)
LISTS: Final = ("allOf", "anyOf", "oneOf", "prefixItems")
MAPS: Final = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
#: Keywords that apply their subschemas to the same value as the schema that holds them.
IN_PLACE_SINGLE: Final = ("not", "if", "then", "else")
IN_PLACE_LISTS: Final = ("allOf", "anyOf", "oneOf")


class SchemaRefusedError(ValueError):
    """A form schema that cannot be checked safely, or not the same way on the server and in the browser."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{reason} (at {where or '/'})" if where else reason)
        self.where = where
        self.reason = reason

    def __reduce__(self) -> tuple[type[SchemaRefusedError], tuple[str, str]]:
        return (type(self), (self.where, self.reason))


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def subschemas(node: dict[str, Any], where: str) -> Iterator[tuple[str, Any]]:
    """Every direct subschema of ``node`` with its JSON Pointer in the document."""
    for key in SINGLE:
        if key in node:
            yield f"{where}/{key}", node[key]
    for key in LISTS:
        for index, child in enumerate(node.get(key) or []):
            yield f"{where}/{key}/{index}", child
    for key in MAPS:
        for name, child in (node.get(key) or {}).items():
            yield f"{where}/{key}/{_escape(name)}", child


def resolve_pointer(root: Any, ref: str) -> Any:
    """The node a local ``$ref`` points at; :class:`KeyError` when it points at nothing."""
    node = root
    if ref in ("#", ""):
        return node
    for escaped in ref[2:].split("/"):
        part = escaped.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(ref)
    return node


def _check_node(root: dict[str, Any], node: Any, where: str) -> None:
    if not isinstance(node, dict):
        return
    for keyword, reason in _FORBIDDEN.items():
        if keyword in node:
            raise SchemaRefusedError(where, reason)
    if "$schema" in node and (where or node["$schema"] != DRAFT_2020_12):
        raise SchemaRefusedError(where, f"$schema must be {DRAFT_2020_12!r} (at the root only)")
    ref = node.get("$ref")
    if ref is not None:
        if not (ref == "#" or ref.startswith("#/")):
            raise SchemaRefusedError(where, f"remote $ref {ref!r} is not allowed: only local references (#/...)")
        try:
            target = resolve_pointer(root, ref)
        except KeyError:
            raise SchemaRefusedError(where, f"$ref {ref!r} points at nothing") from None
        if not isinstance(target, dict | bool):
            raise SchemaRefusedError(where, f"$ref {ref!r} does not point at a schema")
    patterns = [("pattern", node["pattern"])] if "pattern" in node else []
    patterns += [("patternProperties", p) for p in node.get("patternProperties") or {}]
    for keyword, pattern in patterns:
        try:
            compile_ecma(pattern)
        except PatternError as exc:
            raise SchemaRefusedError(where, f"{keyword} {pattern!r}: {exc.reason}") from None
    fmt = node.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise SchemaRefusedError(
            where, f"format {fmt!r} is checked neither in the console nor on the server; known: {sorted(FORMATS)}"
        )
    for child_where, child in subschemas(node, where):
        _check_node(root, child, child_where)


def _in_place_targets(root: dict[str, Any], node: Any) -> Iterator[tuple[str, Any]]:
    """Where the same value goes next: through ``$ref`` and the in-place applicators."""
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if ref is not None:
        yield ref, resolve_pointer(root, ref)
    for key in IN_PLACE_SINGLE:
        if key in node:
            yield "", node[key]
    for key in IN_PLACE_LISTS:
        for child in node.get(key) or []:
            yield "", child
    for child in (node.get("dependentSchemas") or {}).values():
        yield "", child


def _check_cycles(root: dict[str, Any]) -> None:
    """A ``$ref`` reached again without moving into the data is a cycle no submission can get out of."""
    done: set[int] = set()

    def visit(node: Any, stack: list[int], refs: list[str]) -> None:
        if not isinstance(node, dict) or id(node) in done:
            return
        if id(node) in stack:
            raise SchemaRefusedError("", f"$ref cycle that never moves into the data: {' -> '.join(refs)}")
        stack.append(id(node))
        for ref, child in _in_place_targets(root, node):
            visit(child, stack, [*refs, ref] if ref else refs)
        stack.pop()
        done.add(id(node))

    def every(node: Any, where: str) -> Iterator[Any]:
        if isinstance(node, dict):
            yield node
            for child_where, child in subschemas(node, where):
                yield from every(child, child_where)

    for node in every(root, ""):
        visit(node, [], [])


def _check_against_meta_schema(schema: dict[str, Any]) -> None:
    # Without the meta-schema's format checks: those would judge ``pattern`` by Python's syntax.
    from jsonschema.exceptions import best_match

    error = best_match(_meta().iter_errors(schema))
    if error is not None:
        where = "".join(f"/{_escape(str(p))}" for p in error.absolute_path)
        raise SchemaRefusedError(where, f"invalid JSON Schema: {error.message}")


def check_form_schema(schema: dict[str, Any]) -> None:
    """Raise :class:`SchemaRefusedError` unless ``schema`` can be checked safely and like the console does.

    The meta-schema part (jsonschema) is skipped for a schema the asset's build already checked
    (:mod:`agentturn.forms.checked`): a cold process that defines or checks only those never imports jsonschema.
    """
    digest = schema_digest(schema)
    if not checked_at_build(digest):
        _check_against_meta_schema(schema)
        passed_meta_check(digest)
    _check_node(schema, schema, "")
    _check_cycles(schema)
