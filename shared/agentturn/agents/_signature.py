"""Keyword-only parameters that still accept the positional calls written before they became keyword-only."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast, overload

F = TypeVar("F", bound=Callable[..., Any])


@overload
def keyword_only_with_positional_fallback(function: F, /) -> F: ...


@overload
def keyword_only_with_positional_fallback(*, through: str) -> Callable[[F], F]: ...


def keyword_only_with_positional_fallback(function: F | None = None, /, *, through: str | None = None) -> Any:
    """Let callers still pass ``function``'s keyword-only parameters positionally, with a DeprecationWarning.

    The signature is the contract (type checkers and ``help()`` see keyword-only parameters); at run time an
    old call such as ``Tool(name, description, fn, parameters)`` keeps working: the extra positional values
    go, in order, to the keyword-only parameters, which were declared in the order they used to have.
    ``through``: the last parameter that ever was positional; those declared after it never take a positional
    value (``@keyword_only_with_positional_fallback(through="metadata")``).
    """
    if function is None:
        return lambda decorated: _with_fallback(decorated, through)
    return _with_fallback(function, through)


def _with_fallback(function: F, through: str | None) -> F:
    parameters = inspect.signature(function).parameters.values()
    # Counted as the caller sees them: the instance a method is bound to is not one of its arguments.
    bound = 1 if next(iter(parameters)).name == "self" else 0
    positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
    keyword_only = [p.name for p in parameters if p.kind is p.KEYWORD_ONLY]
    if through is not None:
        keyword_only = keyword_only[: keyword_only.index(through) + 1]
    owner = function.__qualname__.removesuffix(".__init__")

    @functools.wraps(function)
    def accept(*args: Any, **kwargs: Any) -> Any:
        if len(args) > positional:
            extra = args[positional:]
            if len(extra) > len(keyword_only):
                most, given = positional + len(keyword_only) - bound, len(args) - bound
                raise TypeError(f"{owner}() takes at most {most} positional arguments ({given} given)")
            names = keyword_only[: len(extra)]
            for name in names:
                if name in kwargs:
                    raise TypeError(f"{owner}() got multiple values for argument {name!r}")
            warnings.warn(
                f"passing {', '.join(names)} to {owner}() positionally is deprecated; pass "
                + ", ".join(f"{name}=..." for name in names),
                DeprecationWarning,
                stacklevel=2,
            )
            kwargs.update(zip(names, extra, strict=True))
            args = args[:positional]
        return function(*args, **kwargs)

    return cast("F", accept)  # the same signature as `function` (functools.wraps carries it)
