"""Validation of submitted form data against the frozen schema.

The rule (README, "Validation rule"): a submission is accepted if and only if

1. it is valid under JSON Schema draft 2020-12, formats asserted (:mod:`agentturn.forms.formats`), ``pattern`` read
   as ECMA-262 (:mod:`agentturn.forms.ecma_regex`) — what the console's Ajv answers on the same input; and
2. every property it carries is *declared* where it sits: named by ``properties``, matched by
   ``patternProperties``, or let in by an ``additionalProperties``/``unevaluatedProperties`` schema other than
   ``false``, in a schema that applies to that value unconditionally (directly, through ``$ref`` or ``allOf``,
   through ``properties``/``items``/``prefixItems``/...) or through a branch that applied (``then``/``else`` as
   ``if`` chose, ``anyOf``/``oneOf`` branches the value matches, ``dependentSchemas`` whose property is there).
   ``not``, ``if`` and ``contains`` declare nothing: they are conditions, not declarations.

Each frozen schema is compiled once (:func:`form_validator`, cached); checking one submission is bounded in
CPU time, in the size and depth of the data, in pattern-matching time and in the number of errors reported.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

import regex

from agentturn.forms import wording as say
from agentturn.forms.ecma_regex import compile_ecma
from agentturn.forms.formats import FORMATS
from agentturn.forms.formats import warm as warm_format
from agentturn.forms.schema_rules import SchemaRefusedError, check_form_schema, resolve_pointer

#: All ``pattern``/``patternProperties`` matching of one submission shares this many seconds, counted while
#: matching only (never an import or a compilation: both happen before). A pattern that backtracks badly costs
#: at most this long; the value is then refused as "could not be checked in time".
PATTERN_BUDGET_SECONDS: Final = 0.1
#: CPU time (of the validating thread) one submission may take in all; over it, the submission is refused.
VALIDATION_CPU_SECONDS: Final = 0.5
#: Size of the submitted data as UTF-8 JSON, and its nesting depth.
MAX_DATA_BYTES: Final = 64 * 1024
MAX_DATA_DEPTH: Final = 32
#: At most this many problems are reported (then one more line says there are more).
MAX_ERRORS: Final = 50
#: Compiled validators kept (least recently used dropped first).
CACHE_SIZE: Final = 256

Path = tuple[str | int, ...]
Problem = dict[str, str]


class _OutOfTime(Exception):
    """The CPU budget of one validation ran out."""


class _Budget:
    """The running budget of one validation (one per call; validators are shared between threads)."""

    __slots__ = ("calls", "deadline", "pattern_left")

    def __init__(self) -> None:
        self.deadline = time.thread_time() + VALIDATION_CPU_SECONDS
        self.pattern_left = PATTERN_BUDGET_SECONDS
        self.calls = 0

    def tick(self) -> None:
        self.calls += 1
        if self.calls % 32 == 0 and time.thread_time() > self.deadline:
            raise _OutOfTime

    def search(self, compiled: regex.Pattern[str], text: str) -> bool | None:
        """Whether the pattern matches somewhere in ``text``; ``None`` when the pattern budget ran out."""
        if self.pattern_left <= 0:
            return None
        started = time.perf_counter()
        try:
            return compiled.search(text, timeout=self.pattern_left) is not None
        except TimeoutError:
            self.pattern_left = 0
            return None
        finally:
            self.pattern_left -= time.perf_counter() - started


def canonical(value: Any) -> Any:
    """A hashable key equal for JSON-equal values (1 and 1.0 alike, true and 1 not): linear ``uniqueItems``."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    if value is None:
        return ("z",)
    if isinstance(value, list):
        return ("a", tuple(canonical(v) for v in value))
    return ("o", frozenset((k, canonical(v)) for k, v in value.items()))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_type(value: Any, name: str) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "number":
        return _is_number(value)
    if name == "integer":
        return _is_number(value) and (isinstance(value, int) or value.is_integer())
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "boolean":
        return isinstance(value, bool)
    return value is None


def _js_multiple(value: float, step: float) -> bool:
    """Ajv's ``multipleOf`` with @rjsf's ``multipleOfPrecision: 8``: 0.07 is a multiple of 0.01."""
    try:
        quotient = float(value) / float(step)
    except OverflowError:
        return True  # JavaScript reads such a number as Infinity, and Infinity passes there
    if not math.isfinite(quotient):
        return True
    return not abs(math.floor(quotient + 0.5) - quotient) > 1e-8


class _Result:
    __slots__ = ("declared", "errors", "items", "props")

    def __init__(self) -> None:
        self.errors: list[tuple[Path, str]] = []
        self.props: set[str] = set()
        self.items: set[int] = set()
        self.declared: dict[Path, set[str]] = {}

    def declare(self, path: Path, keys: set[str] | list[str]) -> None:
        self.declared.setdefault(path, set()).update(keys)

    def take(self, other: _Result, *, annotations: bool, declared: bool) -> None:
        self.errors.extend(other.errors)
        if annotations:
            self.props |= other.props
            self.items |= other.items
        if declared:
            for path, keys in other.declared.items():
                self.declare(path, keys)


class _Schema:
    """One compiled schema node: its keywords, with patterns compiled and enum values made hashable."""

    def __init__(self, compiler: _Compiler, node: Any) -> None:
        self.always: bool | None = node if isinstance(node, bool) else None
        self.node: dict[str, Any] = node if isinstance(node, dict) else {}
        n = self.node
        sub = compiler.compile
        self.title: str | None = n.get("title") if isinstance(n.get("title"), str) else None
        self.ref: str | None = n.get("$ref")
        self.compiler = compiler
        self.types: list[str] | None = [n["type"]] if isinstance(n.get("type"), str) else n.get("type")
        self.enum: set[Any] | None = {canonical(v) for v in n["enum"]} if "enum" in n else None
        self.const: Any = canonical(n["const"]) if "const" in n else None
        self.pattern = compile_ecma(n["pattern"]) if "pattern" in n else None
        self.properties = {k: sub(v) for k, v in (n.get("properties") or {}).items()}
        self.pattern_properties = [(compile_ecma(p), sub(v)) for p, v in (n.get("patternProperties") or {}).items()]
        self.additional = sub(n["additionalProperties"]) if "additionalProperties" in n else None
        self.unevaluated_props = sub(n["unevaluatedProperties"]) if "unevaluatedProperties" in n else None
        self.property_names = sub(n["propertyNames"]) if "propertyNames" in n else None
        self.dependent_schemas = {k: sub(v) for k, v in (n.get("dependentSchemas") or {}).items()}
        self.prefix_items = [sub(v) for v in n.get("prefixItems") or []]
        self.items = sub(n["items"]) if "items" in n else None
        self.contains = sub(n["contains"]) if "contains" in n else None
        self.unevaluated_items = sub(n["unevaluatedItems"]) if "unevaluatedItems" in n else None
        self.all_of = [sub(v) for v in n.get("allOf") or []]
        self.any_of = [sub(v) for v in n.get("anyOf") or []]
        self.one_of = [sub(v) for v in n.get("oneOf") or []]
        self.not_ = sub(n["not"]) if "not" in n else None
        self.if_ = sub(n["if"]) if "if" in n else None
        self.then = sub(n["then"]) if "then" in n else None
        self.else_ = sub(n["else"]) if "else" in n else None
        self.format = FORMATS.get(n["format"]) if isinstance(n.get("format"), str) else None
        if self.format is not None:
            warm_format(n["format"])

    def target(self) -> _Schema:
        assert self.ref is not None
        return self.compiler.pointer(self.ref)

    def label_for(self, fallback: str) -> str:
        """The title a person knows this value by: this node's, else that of what it refers to."""
        node: _Schema | None = self
        for _ in range(8):  # reference chains are acyclic (schema_rules); 8 hops is plenty for a title
            if node is None:
                break
            if node.title:
                return node.title
            node = node.target() if node.ref is not None else None
        return fallback

    def hint(self) -> tuple[str | None, Any | None]:
        description = self.node.get("description")
        examples = self.node.get("examples")
        example = examples[0] if isinstance(examples, list) and examples else None
        return (description if isinstance(description, str) else None), example


class _Compiler:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self._by_id: dict[int, _Schema] = {}
        self.top = self.compile(root)
        # Every reference target too, now: a submission never pays for compiling (patterns included).
        done = 0
        while done != len(self._by_id):
            done = len(self._by_id)
            for compiled in list(self._by_id.values()):
                if compiled.ref is not None:
                    compiled.target()

    def compile(self, node: Any) -> _Schema:
        # $ref is resolved lazily (``_Schema.target``), so compiling never follows a reference cycle.
        compiled = self._by_id.get(id(node))
        if compiled is None:
            compiled = self._by_id[id(node)] = _Schema(self, node)
        return compiled

    def pointer(self, ref: str) -> _Schema:
        return self.compile(resolve_pointer(self.root, ref))


def _child_label(schema: _Schema, key: str | int, parent_label: str) -> str:
    if isinstance(key, int):
        return schema.title + f" {key + 1}" if schema.title else f"{parent_label}, entry {key + 1}"
    return schema.label_for(key)


class _Run:
    """One validation: the budget, and the walk."""

    def __init__(self) -> None:
        self.budget = _Budget()

    def check(self, s: _Schema, inst: Any, path: Path, label: str, collect: bool) -> _Result:
        self.budget.tick()
        r = _Result()
        if s.always is True:
            return r
        if s.always is False:
            r.errors.append((path, say.not_allowed(label)))
            return r
        n = s.node

        def fail(message: str, at: Path = path) -> bool:
            r.errors.append((at, message))
            return not collect

        if s.ref is not None:
            sub = self.check(s.target(), inst, path, label, collect)
            r.take(sub, annotations=not sub.errors, declared=True)
            if sub.errors and not collect:
                return r
        if s.types is not None and not any(_is_type(inst, t) for t in s.types) and fail(say.wrong_type(label, s.types)):
            return r
        if s.enum is not None and canonical(inst) not in s.enum and fail(say.enum(label, n["enum"])):
            return r
        if "const" in n and canonical(inst) != s.const and fail(say.const(label, n["const"])):
            return r
        if _is_number(inst) and self._number(s, inst, label, fail):
            return r
        if isinstance(inst, str) and self._string(s, inst, label, fail):
            return r
        if _is_number(inst) and self._number_format(s, inst, label, fail):
            return r
        if isinstance(inst, list) and self._array(s, inst, path, label, collect, r, fail):
            return r
        if isinstance(inst, dict) and self._object(s, inst, path, label, collect, r, fail):
            return r
        if self._in_place(s, inst, path, label, collect, r, fail):
            return r
        if isinstance(inst, list) and s.unevaluated_items is not None:
            for index, item in enumerate(inst):
                if index not in r.items:
                    item_label = _child_label(s.unevaluated_items, index, label)
                    sub = self.check(s.unevaluated_items, item, (*path, index), item_label, collect)
                    r.take(sub, annotations=False, declared=True)
                    if sub.errors and not collect:
                        return r
            r.items.update(range(len(inst)))
        if isinstance(inst, dict) and s.unevaluated_props is not None:
            for key, value in inst.items():
                if key in r.props:
                    continue
                if s.unevaluated_props.always is False:
                    if fail(say.undeclared(key), (*path, key)):
                        return r
                    continue
                sub = self.check(s.unevaluated_props, value, (*path, key), key, collect)
                r.take(sub, annotations=False, declared=True)
                r.declare(path, [key])
                if sub.errors and not collect:
                    return r
            r.props.update(inst)
        return r

    def _number(self, s: _Schema, inst: float, label: str, fail: Callable[..., bool]) -> bool:
        n = s.node
        if (
            "multipleOf" in n
            and not _js_multiple(inst, n["multipleOf"])
            and fail(say.multiple_of(label, n["multipleOf"]))
        ):
            return True
        if "maximum" in n and inst > n["maximum"] and fail(say.maximum(label, n["maximum"], exclusive=False)):
            return True
        if (
            "exclusiveMaximum" in n
            and inst >= n["exclusiveMaximum"]
            and fail(say.maximum(label, n["exclusiveMaximum"], exclusive=True))
        ):
            return True
        if "minimum" in n and inst < n["minimum"] and fail(say.minimum(label, n["minimum"], exclusive=False)):
            return True
        return (
            "exclusiveMinimum" in n
            and inst <= n["exclusiveMinimum"]
            and fail(say.minimum(label, n["exclusiveMinimum"], exclusive=True))
        )

    @staticmethod
    def _number_format(s: _Schema, inst: float, label: str, fail: Callable[..., bool]) -> bool:
        fmt = s.format
        return (
            fmt is not None
            and fmt.applies_to == "number"
            and not fmt.check(inst)
            and fail(say.format_(label, fmt.label))
        )

    def _string(self, s: _Schema, inst: str, label: str, fail: Callable[..., bool]) -> bool:
        n = s.node
        if "minLength" in n and len(inst) < n["minLength"] and fail(say.min_length(label, n["minLength"])):
            return True
        if "maxLength" in n and len(inst) > n["maxLength"] and fail(say.max_length(label, n["maxLength"])):
            return True
        if s.pattern is not None:
            matched = self.budget.search(s.pattern, inst)
            if matched is None and fail(say.pattern_timeout(label)):
                return True
            if matched is False and fail(say.pattern(label, *s.hint())):
                return True
        if s.format is not None and s.format.applies_to == "string" and not s.format.check(inst):
            return fail(say.format_(label, s.format.label))
        return False

    def _array(
        self, s: _Schema, inst: list[Any], path: Path, label: str, collect: bool, r: _Result, fail: Callable[..., bool]
    ) -> bool:
        n = s.node
        if "minItems" in n and len(inst) < n["minItems"] and fail(say.min_items(label, n["minItems"])):
            return True
        if "maxItems" in n and len(inst) > n["maxItems"] and fail(say.max_items(label, n["maxItems"])):
            return True
        if n.get("uniqueItems") is True:
            seen: dict[Any, int] = {}
            for index, item in enumerate(inst):
                self.budget.tick()
                first = seen.setdefault(canonical(item), index)
                if first != index:
                    if fail(say.unique_items(label, first, index)):
                        return True
                    break
        for index, item in enumerate(inst):
            if index < len(s.prefix_items):
                schema = s.prefix_items[index]
            elif s.items is not None:
                schema = s.items
            else:
                break
            sub = self.check(schema, item, (*path, index), _child_label(schema, index, label), collect)
            r.take(sub, annotations=False, declared=True)
            r.items.add(index)
            if sub.errors and not collect:
                return True
        if s.contains is not None:
            matched = [
                i for i, item in enumerate(inst) if not self.check(s.contains, item, (*path, i), label, False).errors
            ]
            r.items.update(matched)
            low = n.get("minContains", 1)
            if len(matched) < low and fail(say.min_contains(label, low)):
                return True
            if (
                "maxContains" in n
                and len(matched) > n["maxContains"]
                and fail(say.max_contains(label, n["maxContains"]))
            ):
                return True
        return False

    def _object(
        self,
        s: _Schema,
        inst: dict[str, Any],
        path: Path,
        label: str,
        collect: bool,
        r: _Result,
        fail: Callable[..., bool],
    ) -> bool:
        n = s.node
        for name in n.get("required") or []:
            if name not in inst:
                sub_schema = s.properties.get(name)
                if fail(say.required(sub_schema.label_for(name) if sub_schema else name), (*path, name)):
                    return True
        if (
            "minProperties" in n
            and len(inst) < n["minProperties"]
            and fail(say.min_properties(label, n["minProperties"]))
        ):
            return True
        if (
            "maxProperties" in n
            and len(inst) > n["maxProperties"]
            and fail(say.max_properties(label, n["maxProperties"]))
        ):
            return True
        for trigger, needed in (n.get("dependentRequired") or {}).items():
            if trigger in inst:
                for name in needed:
                    if name not in inst:
                        sub_schema = s.properties.get(name)
                        trigger_schema = s.properties.get(trigger)
                        message = say.dependent_required(
                            sub_schema.label_for(name) if sub_schema else name,
                            trigger_schema.label_for(trigger) if trigger_schema else trigger,
                        )
                        if fail(message, (*path, name)):
                            return True
        declared: set[str] = set()
        for key, value in inst.items():
            applying: list[_Schema] = []
            if key in s.properties:
                applying.append(s.properties[key])
            for compiled, schema in s.pattern_properties:
                matched = self.budget.search(compiled, key)
                if matched is None and fail(say.pattern_timeout(f"“{key}”"), (*path, key)):
                    return True
                if matched:
                    applying.append(schema)
            if not applying and s.additional is not None:
                if s.additional.always is False:
                    if fail(say.undeclared(key), (*path, key)):
                        return True
                    continue
                applying.append(s.additional)
            if applying:
                declared.add(key)
            for schema in applying:
                sub = self.check(schema, value, (*path, key), schema.label_for(key), collect)
                r.take(sub, annotations=False, declared=True)
                if sub.errors and not collect:
                    return True
            if s.property_names is not None:
                sub = self.check(s.property_names, key, (*path, key), f"“{key}”", False)
                if sub.errors and fail(say.property_name(key), (*path, key)):
                    return True
        r.props |= declared
        r.declare(path, declared)
        for trigger, schema in s.dependent_schemas.items():
            if trigger in inst:
                sub = self.check(schema, inst, path, label, collect)
                r.take(sub, annotations=not sub.errors, declared=True)
                if sub.errors and not collect:
                    return True
        return False

    def _in_place(
        self, s: _Schema, inst: Any, path: Path, label: str, collect: bool, r: _Result, fail: Callable[..., bool]
    ) -> bool:
        for schema in s.all_of:
            sub = self.check(schema, inst, path, label, collect)
            r.take(sub, annotations=not sub.errors, declared=True)
            if sub.errors and not collect:
                return True
        for branches, one in ((s.any_of, False), (s.one_of, True)):
            if not branches:
                continue
            passed = 0
            for schema in branches:
                sub = self.check(schema, inst, path, label, False)
                if not sub.errors:
                    passed += 1
                    r.take(sub, annotations=True, declared=True)
            if passed == 0 and fail(say.any_of(label)):
                return True
            if one and passed > 1 and fail(say.one_of_many(label)):
                return True
        if s.not_ is not None and not self.check(s.not_, inst, path, label, False).errors and fail(say.not_(label)):
            return True
        if s.if_ is not None:
            condition = self.check(s.if_, inst, path, label, False)
            branch = s.then if not condition.errors else s.else_
            if not condition.errors:
                r.props |= condition.props
                r.items |= condition.items
            if branch is not None:
                sub = self.check(branch, inst, path, label, collect)
                r.take(sub, annotations=not sub.errors, declared=True)
                if sub.errors and not collect:
                    return True
        return False


def _undeclared(data: Any, declared: dict[Path, set[str]], path: Path, problems: list[tuple[Path, str]]) -> None:
    if isinstance(data, dict):
        allowed = declared.get(path, set())
        for key, value in data.items():
            if key in allowed:
                _undeclared(value, declared, (*path, key), problems)
            else:
                problems.append(((*path, key), say.undeclared(key)))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            _undeclared(item, declared, (*path, index), problems)


def _depth(data: Any) -> int:
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_DATA_DEPTH:
            return level
        if isinstance(value, dict):
            stack.extend((v, level + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, level + 1) for v in value)
    return deepest


def pointer(path: Path) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


class FormValidator:
    """A frozen schema, checked (:func:`agentturn.forms.schema_rules.check_form_schema`) and compiled once."""

    def __init__(self, schema: dict[str, Any]) -> None:
        check_form_schema(schema)
        self._compiled = _Compiler(json.loads(json.dumps(schema))).top
        self._label = "The form"

    def validate(self, data: Any, *, refuse_undeclared: bool = True) -> list[Problem]:
        """Every problem with ``data`` as ``{"path": JSON Pointer, "message"}``; empty when it is accepted.

        ``refuse_undeclared=False`` checks part 1 of the rule alone (plain JSON Schema, what Ajv answers): the
        differential tests compare that with the browser.
        """
        if not isinstance(data, dict):
            return [{"path": "", "message": say.not_an_object()}]
        try:
            size = len(json.dumps(data, ensure_ascii=False, allow_nan=False).encode())
        except (TypeError, ValueError):
            return [{"path": "", "message": say.not_json()}]
        if size > MAX_DATA_BYTES:
            return [{"path": "", "message": say.too_large(MAX_DATA_BYTES)}]
        if _depth(data) > MAX_DATA_DEPTH:
            return [{"path": "", "message": say.too_deep(MAX_DATA_DEPTH)}]
        run = _Run()
        try:
            result = run.check(self._compiled, data, (), self._label, True)
            result.declare((), [])
            found = list(result.errors)
            if refuse_undeclared:
                _undeclared(data, result.declared, (), found)
        except _OutOfTime:
            return [{"path": "", "message": say.out_of_time()}]
        problems: list[Problem] = []
        seen: set[tuple[str, str]] = set()
        for path, message in sorted(found, key=lambda e: [str(p) for p in e[0]]):
            key = (pointer(path), message)
            if key not in seen:
                seen.add(key)
                problems.append({"path": key[0], "message": message})
        if len(problems) > MAX_ERRORS:
            problems = [*problems[:MAX_ERRORS], {"path": "", "message": say.too_many(MAX_ERRORS)}]
        return problems


_cache: OrderedDict[str, FormValidator | SchemaRefusedError] = OrderedDict()
_cache_lock = threading.Lock()


def form_validator(schema: dict[str, Any]) -> FormValidator:
    """The compiled validator of ``schema``, built once per distinct schema and kept (LRU)."""
    try:
        key = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        raise SchemaRefusedError("", "the schema must be plain JSON") from None
    with _cache_lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
    if found is None:
        try:
            found = FormValidator(schema)
        except SchemaRefusedError as exc:
            found = exc
        with _cache_lock:
            _cache[key] = found
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    if isinstance(found, SchemaRefusedError):
        raise found
    return found


def validate_form_data(schema: dict[str, Any], data: Any) -> list[Problem]:
    """Every problem with ``data`` as ``{"path": JSON Pointer, "message"}``; empty when it is accepted.

    A schema that :mod:`agentturn.forms.schema_rules` refuses (only possible for one frozen before those rules) accepts
    nothing: the answer is one problem that says so.
    """
    try:
        validator = form_validator(schema)
    except SchemaRefusedError as exc:
        return [{"path": "", "message": say.unusable_schema(str(exc))}]
    return validator.validate(data)
