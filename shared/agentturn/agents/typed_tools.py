"""Tools from typed Python functions: the parameter JSON Schema comes from the type hints and the docstring.

``@tool`` (or :meth:`agentturn.Tool.from_function`) turns ``def reserve_room(topic: str, attendees: int) -> ...``
into a :class:`~agentturn.agents.tools.Tool` whose ``parameters`` tell the model exactly what to send, and whose
``function(arguments)`` validates the model's arguments with pydantic before calling the Python function with
typed keyword arguments. Arguments that do not fit come back to the model as a tool error naming each field
(:class:`ToolArgumentsError`), so it can correct itself; the function never sees them.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.json_schema import GenerateJsonSchema

from agentturn.agents.tools import Tool
from agentturn.errors import AgentTurnError

# Google style ("Args:" then "name (type): text"), reST (":param name: text") and NumPy style ("Parameters" over
# a dashed line, then "name : type" and the text indented below it).
_GOOGLE_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments):\s*$")
_GOOGLE_ENTRY = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_REST_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+):\s*(.*)$")
_NUMPY_ENTRY = re.compile(r"^(\w+)\s*(?::.*)?$")
_ANY_SECTION = re.compile(r"^([A-Z][A-Za-z ]*):\s*$|^:\w+")


class ToolArgumentsError(AgentTurnError):
    """The model called a typed tool with arguments its parameters refuse; ``errors`` names each problem."""

    def __init__(self, tool: str, errors: list[dict[str, str]]) -> None:
        summary = "; ".join(f"{e['path'] or '/'}: {e['message']}" for e in errors[:5])
        super().__init__(f"arguments of tool {tool!r} are invalid: {summary}")
        self.tool = tool
        self.errors = errors

    def __reduce__(self) -> tuple[type[ToolArgumentsError], tuple[str, list[dict[str, str]]]]:
        return type(self), (self.tool, self.errors)


@dataclass(frozen=True)
class Docstring:
    """What a tool function's docstring says: its summary and one text per parameter."""

    description: str
    parameters: Mapping[str, str]


def parse_docstring(text: str | None) -> Docstring:
    if not text:
        return Docstring("", {})
    lines = inspect.cleandoc(text).splitlines()
    description: list[str] = []
    parameters: dict[str, list[str]] = {}
    current: list[str] | None = None
    #: a Google section's entries sit at one indentation; deeper lines continue the entry above
    entry_indent: int | None = None
    mode = "description"
    for index, raw in enumerate(lines):
        line = raw.strip()
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if _GOOGLE_SECTION.match(line):
            mode, current, entry_indent = "google", None, None
            continue
        if line in ("Parameters", "Arguments") and set(following) == {"-"}:
            mode, current = "numpy", None
            continue
        if mode == "numpy" and set(line) == {"-"}:
            continue
        if line and set(following) == {"-"}:
            mode, current = "other", None  # another NumPy section (Returns, Raises, ...)
            continue
        rest = _REST_PARAM.match(line)
        if rest:
            mode = "rest"
            current = parameters.setdefault(rest.group(1), [])
            current.append(rest.group(2))
            continue
        if mode == "description":
            if _ANY_SECTION.match(line):
                mode = "other"
            else:
                description.append(line)
            continue
        if mode == "google":
            indent = len(raw) - len(raw.lstrip())
            if not line:
                continue
            if entry_indent is None:
                entry_indent = indent
            entry = _GOOGLE_ENTRY.match(line)
            if indent == entry_indent and entry:
                current = parameters.setdefault(entry.group(1).lstrip("*"), [])
                current.append(entry.group(2))
            elif indent > entry_indent and current is not None:
                current.append(line)
            else:
                mode, current = "other", None
            continue
        if mode == "numpy":
            indented = raw.startswith((" ", "\t"))
            entry = _NUMPY_ENTRY.match(line)
            if entry and not indented:
                current = parameters.setdefault(entry.group(1), [])
            elif line and indented and current is not None:
                current.append(line)
            elif line and not entry:
                mode, current = "other", None
            continue
        if mode == "rest" and line and current is not None and not line.startswith(":"):
            current.append(line)  # a reST field's continuation line
        elif line.startswith(":"):
            current = None
    summary = "\n".join(description).strip()
    texts = {name: " ".join(part for part in parts if part).strip() for name, parts in parameters.items()}
    return Docstring(summary, {name: text for name, text in texts.items() if text})


class _WithoutFieldTitles(GenerateJsonSchema):
    """The model reads a property's name and description; pydantic's generated "Topic"-style titles are noise."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def arguments_model(function: Callable[..., Any], name: str, docs: Docstring) -> type[BaseModel]:
    """A pydantic model of ``function``'s parameters: its hints as types, its docstring as descriptions."""
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except NameError as exc:
        raise TypeError(f"tool {name!r}: cannot resolve the type hints of {function.__qualname__!r}: {exc}") from None
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD, parameter.POSITIONAL_ONLY):
            raise TypeError(
                f"tool {name!r}: parameter {parameter.name!r} of {function.__qualname__!r} must be nameable by the "
                "model (no *args, **kwargs or positional-only parameters)"
            )
        if parameter.name not in hints:
            raise TypeError(
                f"tool {name!r}: parameter {parameter.name!r} of {function.__qualname__!r} needs a type hint"
            )
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (
            hints[parameter.name],
            Field(default, description=docs.parameters.get(parameter.name)),
        )
    model: type[BaseModel] = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    return model


def parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(schema_generator=_WithoutFieldTitles)
    schema.pop("title", None)
    return schema


def _pointer(location: tuple[int | str, ...]) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in location)


def tool_from_function(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    idempotent: bool = False,
) -> Tool:
    """See :meth:`agentturn.Tool.from_function`."""
    if not callable(function):
        raise TypeError(f"a tool needs a callable, not {function!r}")
    tool_name = name or getattr(function, "__name__", None)
    if not tool_name:
        raise TypeError(f"{function!r} has no __name__: give the tool a name")
    if inspect.iscoroutinefunction(function):
        # The runner calls tools synchronously; a coroutine would be returned unawaited as the "result".
        raise TypeError(f"tool {tool_name!r}: async functions are not supported; wrap it in a synchronous function")
    docs = parse_docstring(function.__doc__)
    text = description if description is not None else docs.description
    if not text or not text.strip():
        raise ValueError(f"tool {tool_name!r}: give a description, or a docstring to take it from")
    model = arguments_model(function, tool_name, docs)
    names = tuple(model.model_fields)

    def call(arguments: dict[str, Any]) -> Any:
        try:
            parsed = model.model_validate(arguments)
        except ValidationError as exc:
            errors = [{"path": _pointer(tuple(e["loc"])), "message": e["msg"]} for e in exc.errors()]
            raise ToolArgumentsError(tool_name, errors) from None
        return function(**{field: getattr(parsed, field) for field in names})

    call.__wrapped__ = function  # type: ignore[attr-defined]  # what the Tool calls, for introspection and tests
    return Tool(tool_name, text, call, parameters=parameters_schema(model), metadata=metadata, idempotent=idempotent)


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    idempotent: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    idempotent: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """``@tool`` or ``@tool(name=..., description=..., metadata=..., idempotent=...)``: the decorated function
    becomes a Tool (``idempotent``: see :attr:`agentturn.Tool.idempotent`).

    The parameter schema comes from the type hints (and ``Annotated[..., Field(...)]`` constraints), the
    description and per-parameter texts from the docstring (Google, NumPy or reST style).
    """
    if function is not None:
        return tool_from_function(
            function, name=name, description=description, metadata=metadata, idempotent=idempotent
        )

    def decorate(fn: Callable[..., Any]) -> Tool:
        return tool_from_function(fn, name=name, description=description, metadata=metadata, idempotent=idempotent)

    return decorate
