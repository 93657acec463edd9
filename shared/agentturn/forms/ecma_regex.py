"""ECMA-262 regular expressions (as JSON Schema and the console's Ajv read them) for Python's ``regex`` engine.

JSON Schema says ``pattern`` is an ECMA-262 regular expression, and Ajv compiles it with the ``u`` flag. Python's
syntax looks the same and means something else: ``$`` also matches before a final newline, ``\\d``/``\\w``/``\\s``
and ``\\b`` are Unicode-wide, ``.`` matches ``\\r``, ``{,3}`` is a quantifier, ``(?i)`` is a flag. So a pattern is
parsed by the ECMA grammar here and written out again as a ``regex`` pattern whose every construct means what
it means in JavaScript: character classes become explicit code-point ranges, anchors become ``\\A``/``\\Z``.

What cannot be given the same meaning is refused with :class:`PatternError` (the form is then refused when it is
built, never when a person submits it): backreferences (ECMA and Python differ on a group that did not take
part, and they are the usual road to catastrophic backtracking), and nested unbounded repetition such as
``(a+)+`` or ``(\\w+\\s?)*`` whose body can repeat on its own — the shape of catastrophic backtracking that can
be seen in the text of a pattern. Anything subtler is still bounded: matching runs under a time budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

import regex

from agentturn.forms.ecma_properties import BINARY, GENERAL_CATEGORY, SCRIPT, WITH_VALUE

MAX_CODE_POINT: Final = 0x10FFFF
_INFINITE: Final = -1
#: An outer repetition above this many rounds over a body that can repeat on its own is refused.
_NESTED_REPEAT_LIMIT: Final = 10
#: Groups (and lookarounds) nested deeper than this are refused: the parser recurses once per level, and a
#: value of the ``regex`` format (an 800-character ``((((…))))``) must not be able to exhaust the stack.
MAX_NESTING: Final = 64

Ranges = list[tuple[int, int]]

_DIGITS: Final[Ranges] = [(0x30, 0x39)]
_WORD: Final[Ranges] = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
# WhiteSpace and LineTerminator of ECMA-262 (§12.2, §12.3): what \s means in JavaScript.
_SPACE: Final[Ranges] = [
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
]
_LINE_TERMINATORS: Final[Ranges] = [(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]
_SYNTAX_CHARACTERS: Final = frozenset("^$\\.*+?()[]{}|/")
_CONTROL_ESCAPES: Final = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}


class PatternError(ValueError):
    """A pattern that is not a valid ECMA-262 ``u``-mode regular expression, or one that cannot be run safely."""

    too_complex = False

    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(f"pattern {pattern!r}: {reason}")
        self.pattern = pattern
        self.reason = reason

    def __reduce__(self) -> tuple[type[PatternError], tuple[str, str]]:
        return (type(self), (self.pattern, self.reason))


def _complement(ranges: Ranges) -> Ranges:
    out: Ranges = []
    start = 0
    for low, high in sorted(ranges):
        if low > start:
            out.append((start, low - 1))
        start = max(start, high + 1)
    if start <= MAX_CODE_POINT:
        out.append((start, MAX_CODE_POINT))
    return out


def _cp(code: int) -> str:
    return f"\\U{code:08x}"


def _class(ranges: Ranges, properties: list[str], *, negate: bool = False) -> str:
    items = "".join(_cp(low) if low == high else f"{_cp(low)}-{_cp(high)}" for low, high in ranges)
    items += "".join(properties)
    if not items:
        return "[\\x00-\\U0010ffff]" if negate else "(?!)"
    return f"[{'^' if negate else ''}{items}]"


# The small lexical pieces, matched in place (``match(pattern, pos)``: never a copy of the rest of the pattern,
# which made a long pattern quadratic).
_QUANTIFIER: Final = regex.compile(r"\{([0-9]+)(?:(,)([0-9]*))?\}")
_GROUP_NAME: Final = regex.compile(r"[$_\p{ID_Start}][$\p{ID_Continue}\u200c\u200d]*>")
_BACKREFERENCE: Final = regex.compile(r"[0-9]+|k<[^>]*>")
_HEX2: Final = regex.compile(r"[0-9A-Fa-f]{2}")
_HEX4: Final = regex.compile(r"[0-9A-Fa-f]{4}")
_BRACED_HEX: Final = regex.compile(r"\{([0-9A-Fa-f]+)\}")
_LOW_SURROGATE: Final = regex.compile(r"\\u(D[C-F][0-9A-F]{2})", flags=regex.IGNORECASE)
_PROPERTY: Final = regex.compile(r"\{([A-Za-z_]+(?:=[A-Za-z_0-9]+)?)\}")

_WORD_CLASS: Final = _class(_WORD, [])
_DOT: Final = _class(_LINE_TERMINATORS, [], negate=True)
_BOUNDARY: Final = f"(?:(?<={_WORD_CLASS})(?!{_WORD_CLASS})|(?<!{_WORD_CLASS})(?={_WORD_CLASS}))"
_NOT_BOUNDARY: Final = f"(?:(?<={_WORD_CLASS})(?={_WORD_CLASS})|(?<!{_WORD_CLASS})(?!{_WORD_CLASS}))"


@dataclass
class _Node:
    """What the safety check needs to know of a term: can it match empty, can it repeat on its own."""

    text: str
    nullable: bool
    loops: bool


class _Parser:
    def __init__(self, pattern: str, *, unicode: bool, safe: bool = True, seconds: float | None = None) -> None:
        # A value of the ``regex`` format is parsed within what its submission has left (never a pattern of a
        # form: those are parsed once, when the form is built).
        self.deadline = None if seconds is None else time.perf_counter() + seconds
        self.terms = 0
        self.safe = safe  # False: a syntax check only (the ``regex`` format), nothing will be run
        self.source = pattern
        self.pattern = pattern
        self.unicode = unicode
        self.pos = 0
        self.depth = 0
        self.group_names: set[str] = set()

    # -- helpers
    def fail(self, reason: str) -> PatternError:
        return PatternError(self.source, reason)

    def peek(self, offset: int = 0) -> str:
        at = self.pos + offset
        return self.pattern[at] if at < len(self.pattern) else ""

    def enter(self) -> None:
        """One level deeper into groups; :class:`PatternError` (marked ``too_complex``) past :data:`MAX_NESTING`."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            error = self.fail(f"groups nested more than {MAX_NESTING} deep")
            error.too_complex = True
            raise error

    def eat(self, text: str) -> bool:
        if self.pattern.startswith(text, self.pos):
            self.pos += len(text)
            return True
        return False

    # -- grammar
    def parse(self) -> str:
        node = self.disjunction()
        if self.pos != len(self.pattern):
            raise self.fail(f"unexpected {self.peek()!r} at position {self.pos}")
        return node.text

    def disjunction(self) -> _Node:
        alternatives = [self.alternative()]
        while self.eat("|"):
            alternatives.append(self.alternative())
        return _Node(
            "|".join(a.text for a in alternatives),
            nullable=any(a.nullable for a in alternatives),
            loops=any(a.loops for a in alternatives),
        )

    def alternative(self) -> _Node:
        terms: list[_Node] = []
        while self.pos < len(self.pattern) and self.peek() not in "|)":
            terms.append(self.term())
        solid = sum(1 for t in terms if not t.nullable)
        nullable = solid == 0
        # The sequence repeats on its own when one term does and every other may match nothing (counted once,
        # not per term: a pattern of many terms costs linear time).
        loops = any(t.loops and solid - (0 if t.nullable else 1) == 0 for t in terms)
        return _Node("".join(t.text for t in terms), nullable=nullable, loops=loops)

    def term(self) -> _Node:
        self.terms += 1
        if self.deadline is not None and self.terms % 256 == 0 and time.perf_counter() > self.deadline:
            error = self.fail("too long to check in time")
            error.too_complex = True
            raise error
        char = self.peek()
        if char == "^":
            self.pos += 1
            return self.assertion("\\A")
        if char == "$":
            self.pos += 1
            return self.assertion("\\Z")
        if char == "\\" and self.peek(1) in ("b", "B"):
            self.pos += 2
            return self.assertion(_BOUNDARY if self.pattern[self.pos - 1] == "b" else _NOT_BOUNDARY)
        if char != "(" or self.peek(1) != "?":
            return self.quantified(self.atom())
        for opener, emitted in (("(?=", "(?="), ("(?!", "(?!"), ("(?<=", "(?<="), ("(?<!", "(?<!")):
            if self.eat(opener):
                self.enter()
                inner = self.disjunction()
                self.depth -= 1
                if not self.eat(")"):
                    raise self.fail("unterminated group")
                if not self.unicode and opener in ("(?=", "(?!"):
                    # Annex B: without the u flag a lookahead may be quantified.
                    return self.quantified(_Node(f"{emitted}{inner.text})", nullable=True, loops=False))
                return self.assertion(f"{emitted}{inner.text})")
        atom = self.atom()
        return self.quantified(atom)

    def assertion(self, text: str) -> _Node:
        if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self.quantifier_ahead()):
            raise self.fail("nothing to repeat: an assertion cannot be quantified")
        return _Node(text, nullable=True, loops=False)

    def quantifier_ahead(self) -> bool:
        return _QUANTIFIER.match(self.pattern, self.pos) is not None

    def quantified(self, atom: _Node) -> _Node:
        char = self.peek()
        if char in ("*", "+", "?"):
            self.pos += 1
            low, high = {"*": (0, _INFINITE), "+": (1, _INFINITE), "?": (0, 1)}[char]
        elif char == "{" and self.quantifier_ahead():
            match = _QUANTIFIER.match(self.pattern, self.pos)
            assert match is not None
            self.pos = match.end()
            low = int(match.group(1))
            high = low if match.group(2) is None else (int(match.group(3)) if match.group(3) else _INFINITE)
            if high != _INFINITE and high < low:
                raise self.fail("numbers out of order in {} quantifier")
            char = "{"
        else:
            if char == "{" and self.unicode:
                raise self.fail("lone '{' (write \\{ for the character)")
            return atom
        lazy = self.eat("?")
        if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self.quantifier_ahead()):
            raise self.fail("nothing to repeat")
        if self.safe and atom.loops and (high == _INFINITE or high > _NESTED_REPEAT_LIMIT):
            raise self.fail(
                "nested repetition of a part that can repeat on its own (e.g. (a+)+) backtracks catastrophically"
            )
        if char == "{":
            quantifier = f"{{{low}}}" if high == low else f"{{{low},{'' if high == _INFINITE else high}}}"
        else:
            quantifier = char
        return _Node(
            f"(?:{atom.text}){quantifier}{'?' if lazy else ''}",
            nullable=atom.nullable or low == 0,
            loops=atom.loops or high != low,
        )

    def atom(self) -> _Node:
        char = self.peek()
        if char == "":
            raise self.fail("unexpected end")
        if char == ".":
            self.pos += 1
            return _Node(_DOT, nullable=False, loops=False)
        if char == "[":
            return _Node(self.character_class(), nullable=False, loops=False)
        if char == "(":
            self.pos += 1
            opener = "("  # capturing, so that the format checks can read the parts of a match
            if self.eat("?:"):
                opener = "(?:"
            elif self.eat("?<"):
                name = _GROUP_NAME.match(self.pattern, self.pos)
                if name is None:
                    raise self.fail("invalid group name")
                if name.group(0) in self.group_names:
                    raise self.fail(f"duplicate group name {name.group(0)[:-1]!r}")
                self.group_names.add(name.group(0))
                self.pos = name.end()
            elif self.peek() == "?":
                raise self.fail("invalid group")
            self.enter()
            inner = self.disjunction()
            self.depth -= 1
            if not self.eat(")"):
                raise self.fail("unterminated group")
            return _Node(f"{opener}{inner.text})", nullable=inner.nullable, loops=inner.loops)
        if char == "\\":
            return _Node(self.atom_escape(), nullable=False, loops=False)
        if char in ("*", "+", "?"):
            raise self.fail("nothing to repeat")
        if char == "{":
            if self.unicode:
                raise self.fail("lone '{' (write \\{ for the character)")
        elif char in ")]}" and self.unicode:
            raise self.fail(f"lone {char!r}")
        self.pos += 1
        return _Node(char if char.isalnum() or char == "_" else "\\" + char, nullable=False, loops=False)

    # -- escapes
    def atom_escape(self) -> str:
        self.pos += 1  # the backslash
        char = self.peek()
        if (char.isdigit() and char != "0") or char == "k":
            if self.safe:
                raise self.fail("backreferences are not supported")
            backreference = _BACKREFERENCE.match(self.pattern, self.pos)
            if backreference is None:
                raise self.fail("invalid \\k escape")
            self.pos = backreference.end()
            return "(?:)"
        ranges, properties, negate = self.class_escape_set()
        if ranges is not None:
            return _class(ranges, properties, negate=negate)
        return _class([(self.character_escape(in_class=False),) * 2], [])

    def class_escape_set(self) -> tuple[Ranges | None, list[str], bool]:
        """\\d \\D \\s \\S \\w \\W \\p{..} \\P{..} at pos (after the backslash), or (None, ...) if not one."""
        char = self.peek()
        sets = {"d": _DIGITS, "s": _SPACE, "w": _WORD}
        if char.lower() in sets:
            self.pos += 1
            ranges = sets[char.lower()]
            return (ranges if char.islower() else _complement(ranges)), [], False
        if char in ("p", "P") and self.unicode:
            self.pos += 1
            match = _PROPERTY.match(self.pattern, self.pos)
            if match is None:
                raise self.fail("invalid Unicode property escape")
            self.pos = match.end()
            name = match.group(1)
            key, equals, value = name.partition("=")
            # ECMA-262's names exactly (no loose matching): what JavaScript refuses is refused here, and what it
            # accepts is handed to ``regex`` by its canonical name, which ``regex`` cannot read otherwise.
            if equals:
                canonical_key = WITH_VALUE.get(key)
                table = GENERAL_CATEGORY if canonical_key == "General_Category" else SCRIPT
                canonical = table.get(value) if canonical_key else None
                if canonical is None:
                    raise self.fail(f"unknown Unicode property {name!r}")
                canonical = f"{canonical_key}={canonical}"
            elif name in GENERAL_CATEGORY:
                canonical = f"General_Category={GENERAL_CATEGORY[name]}"
            elif name in BINARY:
                canonical = BINARY[name]
            else:
                raise self.fail(f"unknown Unicode property {name!r}")
            escape = f"\\{char}{{{canonical}}}"
            try:
                regex.compile(escape)
            except regex.error as exc:
                raise self.fail(f"Unicode property {name!r} is not supported on the server") from exc
            return [], [escape], False
        return None, [], False

    def character_escape(self, *, in_class: bool) -> int:
        char = self.peek()
        if char in _CONTROL_ESCAPES:
            self.pos += 1
            return _CONTROL_ESCAPES[char]
        if char == "c":
            letter = self.peek(1)
            if letter.isascii() and letter.isalpha():
                self.pos += 2
                return ord(letter) % 32
            if self.unicode:
                raise self.fail("invalid \\c escape")
            if in_class and (letter.isdigit() or letter == "_"):  # Annex B: ClassControlLetter
                self.pos += 2
                return ord(letter) % 32
            return ord("\\")  # Annex B: a backslash, and the c after it is a letter of its own
        if char == "0" and not self.peek(1).isdigit():
            self.pos += 1
            return 0
        if char == "x":
            match = _HEX2.match(self.pattern, self.pos + 1)
            if match is None:
                if not self.unicode:  # Annex B: the letter x
                    self.pos += 1
                    return ord("x")
                raise self.fail("invalid \\x escape")
            self.pos += 3
            return int(match.group(0), 16)
        if char == "u":
            return self.unicode_escape()
        if char == "b" and in_class:
            self.pos += 1
            return 0x08
        if char == "-" and in_class and self.unicode:
            self.pos += 1
            return ord("-")
        if char in _SYNTAX_CHARACTERS:
            self.pos += 1
            return ord(char)
        if char == "":
            raise self.fail("\\ at end of pattern")
        if not self.unicode and char != "c":
            # Annex B: without the u flag any other character may be escaped and means itself.
            self.pos += 1
            return ord(char)
        raise self.fail(f"invalid escape \\{char}")

    def unicode_escape(self) -> int:
        if self.unicode and self.pattern.startswith("{", self.pos + 1):
            match = _BRACED_HEX.match(self.pattern, self.pos + 1)
            if match is None or int(match.group(1), 16) > MAX_CODE_POINT:
                raise self.fail("invalid \\u{...} escape")
            self.pos = match.end()
            return int(match.group(1), 16)
        match = _HEX4.match(self.pattern, self.pos + 1)
        if match is None:
            if not self.unicode:  # Annex B: a \u that starts no escape is the letter u
                self.pos += 1
                return ord("u")
            raise self.fail("invalid \\u escape")
        self.pos += 5
        code = int(match.group(0), 16)
        # In u-mode an escaped surrogate pair is one code point, as JavaScript reads it.
        if self.unicode and 0xD800 <= code <= 0xDBFF:
            low = _LOW_SURROGATE.match(self.pattern, self.pos)
            if low is not None:
                self.pos += 6
                return 0x10000 + ((code - 0xD800) << 10) + (int(low.group(1), 16) - 0xDC00)
        return code

    # -- character classes
    def character_class(self) -> str:
        self.pos += 1  # [
        negate = self.eat("^")
        ranges: Ranges = []
        properties: list[str] = []
        while True:
            if self.pos >= len(self.pattern):
                raise self.fail("unterminated character class")
            if self.eat("]"):
                break
            first = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                second = self.class_atom()
                if isinstance(first, tuple) or isinstance(second, tuple):
                    if self.unicode:
                        raise self.fail("a class escape cannot bound a range")
                    # Annex B: the dash is a literal between a class escape and another atom.
                    for item in (first, ord("-"), second):
                        self.add_class_item(item, ranges, properties)
                    continue
                if second < first:
                    raise self.fail("range out of order in character class")
                ranges.append((first, second))
                continue
            self.add_class_item(first, ranges, properties)
        return _class(ranges, properties, negate=negate)

    @staticmethod
    def add_class_item(item: int | tuple[Ranges, list[str]], ranges: Ranges, properties: list[str]) -> None:
        if isinstance(item, tuple):
            ranges.extend(item[0])
            properties.extend(item[1])
        else:
            ranges.append((item, item))

    def class_atom(self) -> int | tuple[Ranges, list[str]]:
        char = self.peek()
        if char != "\\":
            self.pos += 1
            return ord(char)
        self.pos += 1
        found, properties, _ = self.class_escape_set()
        if found is not None:
            return (found, properties)
        if self.peek().isdigit() and self.peek() != "0":
            raise self.fail("invalid escape in character class")
        return self.character_escape(in_class=True)


def is_valid_syntax(pattern: str, *, unicode: bool, seconds: float | None = None) -> bool:
    """Whether JavaScript would compile ``pattern`` (backreferences and nested repetition included).

    Linear in the pattern's length; a pattern nested deeper than :data:`MAX_NESTING` cannot be judged here and
    raises its :class:`PatternError` (``too_complex``) rather than answering either way, and so does one that
    takes longer than ``seconds`` to read.
    """
    try:
        _Parser(pattern, unicode=unicode, safe=False, seconds=seconds).parse()
    except PatternError as exc:
        if exc.too_complex:
            raise
        return False
    return True


@lru_cache(maxsize=1024)
def translate(pattern: str, *, unicode: bool = True) -> str:
    """The ``regex``-module pattern that means what ``new RegExp(pattern, unicode ? "u" : "")`` means."""
    return _Parser(pattern, unicode=unicode).parse()


@lru_cache(maxsize=1024)
def compile_ecma(pattern: str, *, unicode: bool = True, ignore_case: bool = False) -> regex.Pattern[str]:
    """Compiled once per pattern; raises :class:`PatternError` for what JavaScript or this module refuses.

    ``ignore_case`` without ``unicode`` folds ASCII letters only, as JavaScript's ``i`` flag does without ``u``
    for the ranges these patterns use.
    """
    flags = regex.VERSION0
    if ignore_case:
        flags |= regex.IGNORECASE if unicode else regex.IGNORECASE | regex.ASCII
    try:
        return regex.compile(translate(pattern, unicode=unicode), flags=flags)
    except regex.error as exc:  # pragma: no cover - the translation only writes what regex accepts
        raise PatternError(pattern, str(exc)) from exc
