"""The ``format`` checks the console's validator makes, made the same way on the server.

The console validates with Ajv 8 and ajv-formats 2.1.1 in its default ("full") mode, plus the ``data-url`` and
``color`` formats @rjsf/validator-ajv8 adds. Every one of those is asserted here with the same answer: the
regular expressions are ajv-formats' own (MIT, © Evgeny Poberezkin), run through the ECMA-262 translation of
:mod:`agentturn.forms.ecma_regex` so they mean what they mean in the browser, and the few checks that are code there
(dates, ``uri``, ``regex``, the number formats) are ported line for line. Pure Python, no dependency beyond
``regex``, so the Lambda bundle checks exactly what the tests check.

A format that is not in :data:`FORMATS` is checked nowhere, so a form that uses one is refused when it is built
(see :mod:`agentturn.forms.schema_rules`), rather than pretending to check it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

import regex

from agentturn.forms.ecma_regex import compile_ecma, is_valid_syntax


class _Js:
    """A format's ECMA-262 regular expression, compiled on first use or by :meth:`warm` (not at import: the
    biggest take tens of milliseconds, which a Lambda's cold start should not pay for formats no form uses)."""

    def __init__(self, pattern: str, *, ignore_case: bool = False, unicode: bool = False) -> None:
        self.pattern, self.ignore_case, self.unicode = pattern, ignore_case, unicode
        self._compiled: regex.Pattern[str] | None = None

    def compiled(self) -> regex.Pattern[str]:
        if self._compiled is None:
            self._compiled = compile_ecma(self.pattern, unicode=self.unicode, ignore_case=self.ignore_case)
        return self._compiled

    def __call__(self, value: str) -> bool:
        return self.compiled().search(value) is not None


_js = _Js


def _is_leap_year(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


_DATE: Final = _Js(r"^(\d\d\d\d)-(\d\d)-(\d\d)$")
_DAYS: Final = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _date(value: str) -> bool:
    match = _DATE.compiled().search(value)
    if match is None:
        return False
    year, month, day = (int(part) for part in match.groups())
    return 1 <= month <= 12 and 1 <= day <= (29 if month == 2 and _is_leap_year(year) else _DAYS[month])


_TIME: Final = _Js(r"^(\d\d):(\d\d):(\d\d)(\.\d+)?(z|[+-]\d\d(?::?\d\d)?)?$", ignore_case=True)


def _time(value: str, *, with_time_zone: bool = False) -> bool:
    match = _TIME.compiled().search(value)
    if match is None:
        return False
    hour, minute, second = int(match.group(1)), int(match.group(2)), int(match.group(3))
    time_zone = match.group(5)
    in_range = (hour <= 23 and minute <= 59 and second <= 59) or (hour == 23 and minute == 59 and second == 60)
    # ajv-formats: ``!withTimeZone || timeZone !== ""`` — an absent zone is ``undefined``, never "".
    return in_range and (not with_time_zone or time_zone != "")


_DATE_TIME_SEPARATOR: Final = _Js(r"t|\s", ignore_case=True)


def _date_time(value: str) -> bool:
    parts = _DATE_TIME_SEPARATOR.compiled().split(value)
    return len(parts) == 2 and _date(parts[0]) and _time(parts[1], with_time_zone=True)


_NOT_URI_FRAGMENT: Final = _js(r"\/|:")
_URI: Final = _js(
    r"^(?:[a-z][a-z0-9+\-.]*:)(?:\/?\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:){0,1}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?))|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)|[Vv][0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)|(?:[a-z0-9\-._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)(?:\?(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?$",
    ignore_case=True,
)


def _uri(value: str) -> bool:
    return _NOT_URI_FRAGMENT(value) and _URI(value)


_BYTE: Final = compile_ecma(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$", unicode=False)
# ajv-formats compiles BYTE with the ``m`` flag: ^ and $ also match at line terminators.
_BYTE_MULTILINE: Final = regex.compile(
    _BYTE.pattern.replace("\\A", "(?:\\A|(?<=[\\n\\r\\u2028\\u2029]))").replace(
        "\\Z", "(?:\\Z|(?=[\\n\\r\\u2028\\u2029]))"
    ),
    flags=regex.VERSION0,
)


def _byte(value: str) -> bool:
    return _BYTE_MULTILINE.search(value) is not None


def _int32(value: float) -> bool:
    return _is_integer(value) and -(2**31) <= value <= 2**31 - 1


def _is_integer(value: float) -> bool:
    return isinstance(value, int) or (math.isfinite(value) and value.is_integer())


_Z_ANCHOR: Final = _js(r"[^\\]\\Z")


def _regex(value: str) -> bool:
    # ajv-formats: `new RegExp(str)`, no flags: a syntax check by the same grammar, Annex B included.
    return not _Z_ANCHOR(value) and is_valid_syntax(value, unicode=False)


@dataclass(frozen=True)
class Format:
    """One format: what it applies to, the check, and how a person is told what is expected."""

    applies_to: Literal["string", "number"]
    check: Callable[[Any], bool]
    label: str


def _string(check: Callable[[str], bool], label: str) -> Format:
    return Format("string", check, label)


def _always(_: Any) -> bool:
    return True


#: Every format the console's validator knows, by name.
FORMATS: Final[dict[str, Format]] = {
    "date": _string(_date, "a date such as 2024-05-31"),
    "time": _string(_time, "a time such as 09:30:00"),
    "date-time": _string(_date_time, "a date and time such as 2024-05-31T09:30:00Z"),
    "duration": _string(
        _js(r"^P(?!$)((\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?|(\d+W)?)$"),
        "a duration such as P3DT4H",
    ),
    "uri": _string(_uri, "a full web address such as https://example.com/page"),
    "uri-reference": _string(
        _js(
            r"^(?:[a-z][a-z0-9+\-.]*:)?(?:\/?\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:){0,1}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?))|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)|[Vv][0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)|(?:[a-z0-9\-._~!$&'\"()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[a-z0-9\-._~!$&'\"()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[a-z0-9\-._~!$&'\"()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'\"()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[a-z0-9\-._~!$&'\"()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'\"()*+,;=:@]|%[0-9a-f]{2})*)*)?(?:\?(?:[a-z0-9\-._~!$&'\"()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[a-z0-9\-._~!$&'\"()*+,;=:@/?]|%[0-9a-f]{2})*)?$",
            ignore_case=True,
        ),
        "a web address or a part of one",
    ),
    "uri-template": _string(
        _js(
            r"^(?:(?:[^\x00-\x20\"'<>%\\^`{|}]|%[0-9a-f]{2})|\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?(?:,(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?)*\})*$",
            ignore_case=True,
        ),
        "a URI template such as /orders/{id}",
    ),
    "url": _string(
        _js(
            r"^(?:https?|ftp):\/\/(?:\S+(?::\S*)?@)?(?:(?!(?:10|127)(?:\.\d{1,3}){3})(?!(?:169\.254|192\.168)(?:\.\d{1,3}){2})(?!172\.(?:1[6-9]|2\d|3[0-1])(?:\.\d{1,3}){2})(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.(?:1?\d{1,2}|2[0-4]\d|25[0-5])){2}(?:\.(?:[1-9]\d?|1\d\d|2[0-4]\d|25[0-4]))|(?:(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)(?:\.(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)*(?:\.(?:[a-z\u{00a1}-\u{ffff}]{2,})))(?::\d{2,5})?(?:\/[^\s]*)?$",
            ignore_case=True,
            unicode=True,
        ),
        "a web address such as https://example.com",
    ),
    "email": _string(
        _js(
            r"^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$",
            ignore_case=True,
        ),
        "an email address such as name@example.com",
    ),
    "hostname": _string(
        _js(
            r"^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?$",
            ignore_case=True,
        ),
        "a host name such as example.com",
    ),
    "ipv4": _string(
        _js(r"^(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)$"),
        "an IPv4 address such as 192.0.2.1",
    ),
    "ipv6": _string(
        _js(
            r"^((([0-9a-f]{1,4}:){7}([0-9a-f]{1,4}|:))|(([0-9a-f]{1,4}:){6}(:[0-9a-f]{1,4}|((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9a-f]{1,4}:){5}(((:[0-9a-f]{1,4}){1,2})|:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9a-f]{1,4}:){4}(((:[0-9a-f]{1,4}){1,3})|((:[0-9a-f]{1,4})?:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){3}(((:[0-9a-f]{1,4}){1,4})|((:[0-9a-f]{1,4}){0,2}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){2}(((:[0-9a-f]{1,4}){1,5})|((:[0-9a-f]{1,4}){0,3}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){1}(((:[0-9a-f]{1,4}){1,6})|((:[0-9a-f]{1,4}){0,4}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(:(((:[0-9a-f]{1,4}){1,7})|((:[0-9a-f]{1,4}){0,5}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:)))$",
            ignore_case=True,
        ),
        "an IPv6 address such as 2001:db8::1",
    ),
    "regex": _string(_regex, "a regular expression"),
    "uuid": _string(
        _js(r"^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$", ignore_case=True),
        "an identifier such as 123e4567-e89b-12d3-a456-426614174000",
    ),
    "json-pointer": _string(_js(r"^(?:\/(?:[^~/]|~0|~1)*)*$"), "a JSON pointer such as /a/b"),
    "json-pointer-uri-fragment": _string(
        _js(r"^#(?:\/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*$", ignore_case=True),
        "a JSON pointer fragment such as #/a/b",
    ),
    "relative-json-pointer": _string(
        _js(r"^(?:0|[1-9][0-9]*)(?:#|(?:\/(?:[^~/]|~0|~1)*)*)$"), "a relative JSON pointer such as 1/a"
    ),
    "byte": _string(_byte, "base64-encoded data"),
    "int32": Format("number", _int32, "a whole number between -2147483648 and 2147483647"),
    "int64": Format("number", _is_integer, "a whole number"),
    "float": Format("number", _always, "a number"),
    "double": Format("number", _always, "a number"),
    "password": _string(_always, "a password"),
    "binary": _string(_always, "data"),
    # Added by @rjsf/validator-ajv8 (createAjvInstance.js).
    "data-url": _string(
        _js(r"^data:([a-z]+\/[a-z0-9-+.]+)?;(?:name=(.*);)?base64,(.*)$"), "a file (a data: URL with base64 data)"
    ),
    "color": _string(
        _js(
            r"^(#?([0-9A-Fa-f]{3}){1,2}\b|aqua|black|blue|fuchsia|gray|green|lime|maroon|navy|olive|orange|purple|red|silver|teal|white|yellow|(rgb\(\s*\b([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\b\s*,\s*\b([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\b\s*,\s*\b([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\b\s*\))|(rgb\(\s*(\d?\d%|100%)+\s*,\s*(\d?\d%|100%)+\s*,\s*(\d?\d%|100%)+\s*\)))$"
        ),
        "a colour such as #ff8800",
    ),
}


#: Values that take every format check down each of its paths, so that all its expressions get compiled.
_WARM_UP: Final = ("", "a:b", "2024-01-01T00:00:00Z", "00:00:00")


def warm(name: str) -> None:
    """Compile what format ``name`` needs now (a form's validator is built before any submission arrives)."""
    fmt = FORMATS[name]
    if fmt.applies_to == "string":
        for sample in _WARM_UP:
            fmt.check(sample)


def check_format(name: str, value: Any) -> bool:
    """Whether ``value`` satisfies format ``name``; values of a type the format does not apply to pass."""
    fmt = FORMATS[name]
    if fmt.applies_to == "string":
        return not isinstance(value, str) or fmt.check(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return True
    return bool(fmt.check(value))
