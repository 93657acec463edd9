"""What validation finds, as data: a code and its parameters per problem, no words.

:mod:`agentturn.forms.validation` returns a list of :class:`FormProblem`; :mod:`agentturn.forms.wording` alone
turns them into the sentences a person reads (and the console's ``web/src/form_messages.mjs`` says the same
sentences for the same codes; ``tests/differential/test_messages_agree.py`` holds the two together). Keeping the
words out of the walk means validation never calls back into wording while it checks, and a caller that wants
to react to a problem (an agent, a test) reads its code instead of parsing an English sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ProblemCode(StrEnum):
    """What is wrong. Keyword problems are named after the JSON Schema keyword that refuses the value."""

    # The submission as a whole.
    NOT_AN_OBJECT = "notAnObject"
    NOT_JSON = "notJson"
    TOO_LARGE = "tooLarge"  # params: limit (bytes)
    TOO_DEEP = "tooDeep"  # params: limit (levels)
    OUT_OF_TIME = "outOfTime"
    TOO_MANY = "tooMany"  # params: shown
    UNUSABLE_SCHEMA = "unusableSchema"  # params: reason
    # One value.
    FALSE_SCHEMA = "falseSchema"
    TYPE = "type"  # params: types
    ENUM = "enum"  # params: values
    CONST = "const"  # params: value
    MULTIPLE_OF = "multipleOf"  # params: multipleOf
    MAXIMUM = "maximum"  # params: limit
    EXCLUSIVE_MAXIMUM = "exclusiveMaximum"  # params: limit
    MINIMUM = "minimum"  # params: limit
    EXCLUSIVE_MINIMUM = "exclusiveMinimum"  # params: limit
    MIN_LENGTH = "minLength"  # params: limit
    MAX_LENGTH = "maxLength"  # params: limit
    PATTERN = "pattern"  # params: description, example (the schema's hints, either may be None)
    FORMAT = "format"  # params: format (its name)
    NOT_CHECKED_IN_TIME = "notCheckedInTime"  # a pattern or format check ran out of its time
    NAME_NOT_CHECKED_IN_TIME = "nameNotCheckedInTime"  # params: name (a property name patternProperties met)
    MIN_ITEMS = "minItems"  # params: limit
    MAX_ITEMS = "maxItems"  # params: limit
    UNIQUE_ITEMS = "uniqueItems"  # params: first, second (0-based indexes of the two equal entries)
    MIN_CONTAINS = "minContains"  # params: limit
    MAX_CONTAINS = "maxContains"  # params: limit
    REQUIRED = "required"  # the subject is the missing field
    DEPENDENT_REQUIRED = "dependentRequired"  # the subject is the missing field; params: trigger (a Subject)
    MIN_PROPERTIES = "minProperties"  # params: limit
    MAX_PROPERTIES = "maxProperties"  # params: limit
    UNDECLARED = "undeclared"  # params: name
    PROPERTY_NAME = "propertyNames"  # params: name
    ANY_OF = "anyOf"
    ONE_OF_MANY = "oneOf"
    NOT = "not"


@dataclass(frozen=True, slots=True)
class Subject:
    """The value a problem is about, as the schema names it: the names only, never a sentence.

    ``key`` is where the value sits in its parent (``None`` for the submitted form itself), ``title`` the
    schema's title for it (following ``$ref``), ``parent`` the value that holds it (needed to name an untitled
    list entry after its list).
    """

    title: str | None = None
    key: str | int | None = None
    parent: Subject | None = None

    def child(self, key: str | int, title: str | None) -> Subject:
        return Subject(title, key, self)


FORM: Subject = Subject()


@dataclass(frozen=True, slots=True)
class FormProblem:
    """One problem with submitted data: where (a path into the data), what (the code) and its data."""

    path: tuple[str | int, ...]
    code: ProblemCode
    subject: Subject = FORM
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def pointer(self) -> str:
        """``path`` as a JSON Pointer (RFC 6901), the ``path`` of the error items the API answers."""
        return pointer(self.path)


def pointer(path: tuple[str | int, ...]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)
