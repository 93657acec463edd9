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
CPU time, in the size and depth of the data, in pattern- and format-matching time and in the number of errors
reported.

The walk finds problems as data (:class:`agentturn.forms.problems.FormProblem`: a path, a code, its params) and
never words them; :mod:`agentturn.forms.wording` makes the sentences afterwards, once, in
:func:`validate_form_data` (or wherever a caller of :meth:`FormValidator.problems` needs them).
"""

from __future__ import annotations

import json
import math
import operator
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Final

import regex

from agentturn.forms import wording
from agentturn.forms.ecma_regex import compile_ecma
from agentturn.forms.formats import FORMATS, NotCheckedInTime
from agentturn.forms.formats import warm as warm_format
from agentturn.forms.problems import FORM, FormProblem, ProblemCode, Subject
from agentturn.forms.schema_rules import SchemaRefusedError, check_form_schema, resolve_pointer

#: All ``pattern``/``patternProperties`` and ``format`` matching of one submission shares this many seconds,
#: counted while matching only (never an import or a compilation: both happen before). A pattern that backtracks
#: badly costs at most this long; the value is then refused as "could not be checked in time".
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
#: What :func:`validate_form_data` answers per problem: ``{"path": JSON Pointer, "message"}``.
Problem = dict[str, str]
#: Integers beyond this are not exact as doubles: ``multipleOf`` judges them exactly.
_EXACT_DOUBLE: Final = 2**53


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

    def search(self, compiled: regex.Pattern[str], text: str) -> regex.Match[str] | None:
        """The first match of the pattern in ``text`` (the :class:`agentturn.forms.formats.Matcher` of this run);
        :class:`NotCheckedInTime` when the pattern budget runs out."""
        if self.pattern_left <= 0:
            raise NotCheckedInTime
        started = time.perf_counter()
        try:
            return compiled.search(text, timeout=self.pattern_left)
        except TimeoutError:
            self.pattern_left = 0
            raise NotCheckedInTime from None
        finally:
            self.pattern_left -= time.perf_counter() - started

    def seconds_left(self) -> float:
        """What is left of the submission's CPU budget (reading a ``regex`` value is not pattern matching)."""
        return max(0.0, self.deadline - time.thread_time())

    def matches(self, compiled: regex.Pattern[str], text: str) -> bool | None:
        """Whether the pattern matches somewhere in ``text``; ``None`` when the pattern budget ran out."""
        try:
            return self.search(compiled, text) is not None
        except NotCheckedInTime:
            return None


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


def _decimal(number: float) -> Fraction:
    """A JSON number's exact value as written in its shortest form (``repr``; JavaScript's ``String`` writes the
    same digits), so 0.1 is one tenth, as its author meant, not the double nearest to it."""
    return Fraction(number) if isinstance(number, int) else Fraction(repr(number))


def is_multiple(value: float, step: float) -> bool:
    """``multipleOf``: Ajv's answer with @rjsf's ``multipleOfPrecision: 8`` (0.07 is a multiple of 0.01: the
    quotient of the doubles is within 1e-8 of a whole number) wherever the doubles hold the numbers; exactly in
    decimal where they do not: an integer beyond 2^53 (the console cannot hold one; the server keeps what was
    sent, DISAGREEMENTS.md) and a quotient beyond the doubles (``1e308`` / ``0.123456789``, which Ajv passes as
    Infinity and JSON Schema refuses; the console's ``web/src/multiple_of.mjs`` judges it the same exact way)."""
    if isinstance(value, int) and abs(value) > _EXACT_DOUBLE:
        return (_decimal(value) / _decimal(step)).denominator == 1
    try:
        quotient = float(value) / float(step)
    except OverflowError:
        quotient = math.inf
    if not math.isfinite(quotient):
        return (_decimal(value) / _decimal(step)).denominator == 1
    return not abs(math.floor(quotient + 0.5) - quotient) > 1e-8


class _Result:
    __slots__ = ("declared", "errors", "items", "props")

    def __init__(self) -> None:
        self.errors: list[FormProblem] = []
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

    def known_title(self) -> str | None:
        """The title a person knows this value by: this node's, else that of what it refers to."""
        node: _Schema | None = self
        for _ in range(8):  # reference chains are acyclic (schema_rules); 8 hops is plenty for a title
            if node is None:
                break
            if node.title:
                return node.title
            node = node.target() if node.ref is not None else None
        return None

    def hint(self) -> dict[str, Any]:
        """The schema's own hints for a value that does not match its ``pattern``."""
        description = self.node.get("description")
        examples = self.node.get("examples")
        example = examples[0] if isinstance(examples, list) and examples else None
        return {"description": description if isinstance(description, str) else None, "example": example}


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


def _child(schema: _Schema, key: str | int, parent: Subject) -> Subject:
    """The subject of the value at ``key`` in ``parent``: a list entry by its schema's own title, a property by
    the title it is known by (through ``$ref`` too)."""
    return parent.child(key, schema.title if isinstance(key, int) else schema.known_title())


#: The number bounds: keyword, its problem, and when a value is out of it.
_BOUNDS: Final[tuple[tuple[str, ProblemCode, Callable[[Any, Any], bool]], ...]] = (
    ("maximum", ProblemCode.MAXIMUM, operator.gt),
    ("exclusiveMaximum", ProblemCode.EXCLUSIVE_MAXIMUM, operator.ge),
    ("minimum", ProblemCode.MINIMUM, operator.lt),
    ("exclusiveMinimum", ProblemCode.EXCLUSIVE_MINIMUM, operator.le),
)


class _Run:
    """One validation: the budget, and the walk."""

    def __init__(self) -> None:
        self.budget = _Budget()

    def check(self, s: _Schema, inst: Any, path: Path, subject: Subject, collect: bool) -> _Result:
        self.budget.tick()
        r = _Result()
        if s.always is True:
            return r
        if s.always is False:
            r.errors.append(FormProblem(path, ProblemCode.FALSE_SCHEMA, subject))
            return r
        n = s.node

        def fail(
            code: ProblemCode, params: dict[str, Any] | None = None, *, at: Path = path, about: Subject = subject
        ) -> bool:
            r.errors.append(FormProblem(at, code, about, params or {}))
            return not collect

        if s.ref is not None:
            sub = self.check(s.target(), inst, path, subject, collect)
            r.take(sub, annotations=not sub.errors, declared=True)
            if sub.errors and not collect:
                return r
        if (
            s.types is not None
            and not any(_is_type(inst, t) for t in s.types)
            and fail(ProblemCode.TYPE, {"types": s.types})
        ):
            return r
        if s.enum is not None and canonical(inst) not in s.enum and fail(ProblemCode.ENUM, {"values": n["enum"]}):
            return r
        if "const" in n and canonical(inst) != s.const and fail(ProblemCode.CONST, {"value": n["const"]}):
            return r
        if _is_number(inst) and self._number(s, inst, fail):
            return r
        if isinstance(inst, str) and self._string(s, inst, fail):
            return r
        if _is_number(inst) and self._number_format(s, inst, fail):
            return r
        if isinstance(inst, list) and self._array(s, inst, path, subject, collect, r, fail):
            return r
        if isinstance(inst, dict) and self._object(s, inst, path, subject, collect, r, fail):
            return r
        if self._in_place(s, inst, path, subject, collect, r, fail):
            return r
        if isinstance(inst, list) and s.unevaluated_items is not None:
            for index, item in enumerate(inst):
                if index not in r.items:
                    item_subject = _child(s.unevaluated_items, index, subject)
                    sub = self.check(s.unevaluated_items, item, (*path, index), item_subject, collect)
                    r.take(sub, annotations=False, declared=True)
                    if sub.errors and not collect:
                        return r
            r.items.update(range(len(inst)))
        if isinstance(inst, dict) and s.unevaluated_props is not None:
            for key, value in inst.items():
                if key in r.props:
                    continue
                if s.unevaluated_props.always is False:
                    if fail(ProblemCode.UNDECLARED, {"name": key}, at=(*path, key), about=subject.child(key, None)):
                        return r
                    continue
                sub = self.check(s.unevaluated_props, value, (*path, key), subject.child(key, None), collect)
                r.take(sub, annotations=False, declared=True)
                r.declare(path, [key])
                if sub.errors and not collect:
                    return r
            r.props.update(inst)
        return r

    @staticmethod
    def _number(s: _Schema, inst: float, fail: Callable[..., bool]) -> bool:
        n = s.node
        if (
            "multipleOf" in n
            and not is_multiple(inst, n["multipleOf"])
            and fail(ProblemCode.MULTIPLE_OF, {"multipleOf": n["multipleOf"]})
        ):
            return True
        for keyword, code, out_of_range in _BOUNDS:
            if keyword in n and out_of_range(inst, n[keyword]) and fail(code, {"limit": n[keyword]}):
                return True
        return False

    def _number_format(self, s: _Schema, inst: float, fail: Callable[..., bool]) -> bool:
        fmt = s.format
        return (
            fmt is not None
            and fmt.applies_to == "number"
            and not fmt.check(inst, self.budget)
            and fail(ProblemCode.FORMAT, {"format": s.node["format"]})
        )

    def _string(self, s: _Schema, inst: str, fail: Callable[..., bool]) -> bool:
        n = s.node
        if "minLength" in n and len(inst) < n["minLength"] and fail(ProblemCode.MIN_LENGTH, {"limit": n["minLength"]}):
            return True
        if "maxLength" in n and len(inst) > n["maxLength"] and fail(ProblemCode.MAX_LENGTH, {"limit": n["maxLength"]}):
            return True
        if s.pattern is not None:
            matched = self.budget.matches(s.pattern, inst)
            if matched is None and fail(ProblemCode.NOT_CHECKED_IN_TIME):
                return True
            if matched is False and fail(ProblemCode.PATTERN, s.hint()):
                return True
        if s.format is not None and s.format.applies_to == "string":
            try:
                valid = s.format.check(inst, self.budget)
            except NotCheckedInTime:
                return fail(ProblemCode.NOT_CHECKED_IN_TIME)
            if not valid:
                return fail(ProblemCode.FORMAT, {"format": n["format"]})
        return False

    def _array(
        self,
        s: _Schema,
        inst: list[Any],
        path: Path,
        subject: Subject,
        collect: bool,
        r: _Result,
        fail: Callable[..., bool],
    ) -> bool:
        n = s.node
        if "minItems" in n and len(inst) < n["minItems"] and fail(ProblemCode.MIN_ITEMS, {"limit": n["minItems"]}):
            return True
        if "maxItems" in n and len(inst) > n["maxItems"] and fail(ProblemCode.MAX_ITEMS, {"limit": n["maxItems"]}):
            return True
        if n.get("uniqueItems") is True:
            seen: dict[Any, int] = {}
            for index, item in enumerate(inst):
                self.budget.tick()
                first = seen.setdefault(canonical(item), index)
                if first != index:
                    if fail(ProblemCode.UNIQUE_ITEMS, {"first": first, "second": index}):
                        return True
                    break
        for index, item in enumerate(inst):
            if index < len(s.prefix_items):
                schema = s.prefix_items[index]
            elif s.items is not None:
                schema = s.items
            else:
                break
            sub = self.check(schema, item, (*path, index), _child(schema, index, subject), collect)
            r.take(sub, annotations=False, declared=True)
            r.items.add(index)
            if sub.errors and not collect:
                return True
        if s.contains is not None:
            matched = [
                i for i, item in enumerate(inst) if not self.check(s.contains, item, (*path, i), subject, False).errors
            ]
            r.items.update(matched)
            low = n.get("minContains", 1)
            if len(matched) < low and fail(ProblemCode.MIN_CONTAINS, {"limit": low}):
                return True
            if (
                "maxContains" in n
                and len(matched) > n["maxContains"]
                and fail(ProblemCode.MAX_CONTAINS, {"limit": n["maxContains"]})
            ):
                return True
        return False

    def _object(
        self,
        s: _Schema,
        inst: dict[str, Any],
        path: Path,
        subject: Subject,
        collect: bool,
        r: _Result,
        fail: Callable[..., bool],
    ) -> bool:
        n = s.node

        def field(name: str) -> Subject:
            schema = s.properties.get(name)
            return subject.child(name, schema.known_title() if schema else None)

        for name in n.get("required") or []:
            if name not in inst and fail(ProblemCode.REQUIRED, at=(*path, name), about=field(name)):
                return True
        if (
            "minProperties" in n
            and len(inst) < n["minProperties"]
            and fail(ProblemCode.MIN_PROPERTIES, {"limit": n["minProperties"]})
        ):
            return True
        if (
            "maxProperties" in n
            and len(inst) > n["maxProperties"]
            and fail(ProblemCode.MAX_PROPERTIES, {"limit": n["maxProperties"]})
        ):
            return True
        for trigger, needed in (n.get("dependentRequired") or {}).items():
            if trigger in inst:
                for name in needed:
                    if name not in inst and fail(
                        ProblemCode.DEPENDENT_REQUIRED, {"trigger": field(trigger)}, at=(*path, name), about=field(name)
                    ):
                        return True
        declared: set[str] = set()
        for key, value in inst.items():
            applying: list[_Schema] = []
            if key in s.properties:
                applying.append(s.properties[key])
            for compiled, schema in s.pattern_properties:
                matched = self.budget.matches(compiled, key)
                if matched is None and fail(ProblemCode.NAME_NOT_CHECKED_IN_TIME, {"name": key}, at=(*path, key)):
                    return True
                if matched:
                    applying.append(schema)
            if not applying and s.additional is not None:
                if s.additional.always is False:
                    if fail(ProblemCode.UNDECLARED, {"name": key}, at=(*path, key)):
                        return True
                    continue
                applying.append(s.additional)
            if applying:
                declared.add(key)
            for schema in applying:
                sub = self.check(schema, value, (*path, key), _child(schema, key, subject), collect)
                r.take(sub, annotations=False, declared=True)
                if sub.errors and not collect:
                    return True
            if s.property_names is not None:
                sub = self.check(s.property_names, key, (*path, key), subject.child(key, None), False)
                if sub.errors and fail(ProblemCode.PROPERTY_NAME, {"name": key}, at=(*path, key)):
                    return True
        r.props |= declared
        r.declare(path, declared)
        for trigger, schema in s.dependent_schemas.items():
            if trigger in inst:
                sub = self.check(schema, inst, path, subject, collect)
                r.take(sub, annotations=not sub.errors, declared=True)
                if sub.errors and not collect:
                    return True
        return False

    def _in_place(
        self,
        s: _Schema,
        inst: Any,
        path: Path,
        subject: Subject,
        collect: bool,
        r: _Result,
        fail: Callable[..., bool],
    ) -> bool:
        for schema in s.all_of:
            sub = self.check(schema, inst, path, subject, collect)
            r.take(sub, annotations=not sub.errors, declared=True)
            if sub.errors and not collect:
                return True
        for branches, one in ((s.any_of, False), (s.one_of, True)):
            if not branches:
                continue
            passed = 0
            for schema in branches:
                sub = self.check(schema, inst, path, subject, False)
                if not sub.errors:
                    passed += 1
                    r.take(sub, annotations=True, declared=True)
            if passed == 0 and fail(ProblemCode.ANY_OF):
                return True
            if one and passed > 1 and fail(ProblemCode.ONE_OF_MANY):
                return True
        if s.not_ is not None and not self.check(s.not_, inst, path, subject, False).errors and fail(ProblemCode.NOT):
            return True
        if s.if_ is not None:
            condition = self.check(s.if_, inst, path, subject, False)
            branch = s.then if not condition.errors else s.else_
            if not condition.errors:
                r.props |= condition.props
                r.items |= condition.items
            if branch is not None:
                sub = self.check(branch, inst, path, subject, collect)
                r.take(sub, annotations=not sub.errors, declared=True)
                if sub.errors and not collect:
                    return True
        return False


def _undeclared(data: Any, declared: dict[Path, set[str]], path: Path, problems: list[FormProblem]) -> None:
    if isinstance(data, dict):
        allowed = declared.get(path, set())
        for key, value in data.items():
            if key in allowed:
                _undeclared(value, declared, (*path, key), problems)
            else:
                problems.append(FormProblem((*path, key), ProblemCode.UNDECLARED, params={"name": key}))
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


def _distinct(problem: FormProblem) -> tuple[Any, ...]:
    """Two problems that are the same data (a field required by two ``allOf`` branches) are reported once."""
    params = json.dumps(problem.params, sort_keys=True, default=repr, ensure_ascii=False)
    return (problem.path, problem.code, problem.subject, params)


class FormValidator:
    """A frozen schema, checked (:func:`agentturn.forms.schema_rules.check_form_schema`) and compiled once."""

    def __init__(self, schema: dict[str, Any]) -> None:
        check_form_schema(schema)
        self._compiled = _Compiler(json.loads(json.dumps(schema))).top

    def problems(self, data: Any, *, refuse_undeclared: bool = True) -> list[FormProblem]:
        """Every problem with ``data``, as codes and their data, ordered by path; empty when it is accepted.

        ``refuse_undeclared=False`` checks part 1 of the rule alone (plain JSON Schema, what Ajv answers): the
        differential tests compare that with the browser.
        """
        if not isinstance(data, dict):
            return [FormProblem((), ProblemCode.NOT_AN_OBJECT)]
        try:
            size = len(json.dumps(data, ensure_ascii=False, allow_nan=False).encode())
        except (TypeError, ValueError):
            return [FormProblem((), ProblemCode.NOT_JSON)]
        if size > MAX_DATA_BYTES:
            return [FormProblem((), ProblemCode.TOO_LARGE, params={"limit": MAX_DATA_BYTES})]
        if _depth(data) > MAX_DATA_DEPTH:
            return [FormProblem((), ProblemCode.TOO_DEEP, params={"limit": MAX_DATA_DEPTH})]
        run = _Run()
        try:
            result = run.check(self._compiled, data, (), FORM, True)
            result.declare((), [])
            found = list(result.errors)
            if refuse_undeclared:
                _undeclared(data, result.declared, (), found)
        except _OutOfTime:
            return [FormProblem((), ProblemCode.OUT_OF_TIME)]
        problems: list[FormProblem] = []
        seen: set[tuple[Any, ...]] = set()
        for problem in sorted(found, key=lambda p: [str(part) for part in p.path]):
            key = _distinct(problem)
            if key not in seen:
                seen.add(key)
                problems.append(problem)
        if len(problems) > MAX_ERRORS:
            problems = [*problems[:MAX_ERRORS], FormProblem((), ProblemCode.TOO_MANY, params={"shown": MAX_ERRORS})]
        return problems

    def validate(self, data: Any, *, refuse_undeclared: bool = True) -> list[Problem]:
        """Every problem with ``data`` as ``{"path": JSON Pointer, "message"}``; empty when it is accepted."""
        return wording.messages(self.problems(data, refuse_undeclared=refuse_undeclared))


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


def form_problems(schema: dict[str, Any], data: Any) -> list[FormProblem]:
    """Every problem with ``data`` under ``schema`` (both parts of the rule), as codes with their data.

    A schema that :mod:`agentturn.forms.schema_rules` refuses (only possible for one frozen before those rules)
    accepts nothing: the answer is one problem that says so.
    """
    try:
        validator = form_validator(schema)
    except SchemaRefusedError as exc:
        return [FormProblem((), ProblemCode.UNUSABLE_SCHEMA, params={"reason": str(exc)})]
    return validator.problems(data)


def validate_form_data(schema: dict[str, Any], data: Any) -> list[Problem]:
    """Every problem with ``data`` as ``{"path": JSON Pointer, "message"}``; empty when it is accepted.

    One pass: :func:`form_problems` walks the data once and finds the problems as data; :mod:`agentturn.forms.wording`
    words them once, after the walk.
    """
    return wording.messages(form_problems(schema, data))
