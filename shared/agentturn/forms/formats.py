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
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

import regex

from agentturn.forms.ecma_regex import PatternError, compile_ecma, is_valid_syntax

#: How long a check made outside a validation (:func:`check_format`) may match; a validation gives its own.
DEFAULT_BUDGET_SECONDS: Final = 0.1


class NotCheckedInTime(Exception):
    """A check's matching ran out of the time its submission had left: the value is refused as unchecked."""


class Matcher(Protocol):
    """Runs a compiled expression within a budget (:class:`agentturn.forms.validation` passes the submission's):
    every regular expression a format check runs goes through one, so no value can make a check run longer than
    the submission may."""

    def search(self, compiled: regex.Pattern[str], text: str) -> regex.Match[str] | None:
        """The first match of ``compiled`` in ``text``, or :class:`NotCheckedInTime`."""
        ...

    def seconds_left(self) -> float:
        """How long a check that is not a regular expression (reading a ``regex`` value) may still take."""
        ...


class TimedMatcher:
    """A :class:`Matcher` with a budget of its own, for a check made outside a validation."""

    def __init__(self, seconds: float = DEFAULT_BUDGET_SECONDS) -> None:
        self.seconds = seconds

    def search(self, compiled: regex.Pattern[str], text: str) -> regex.Match[str] | None:
        try:
            return compiled.search(text, timeout=self.seconds)
        except TimeoutError:
            raise NotCheckedInTime from None

    def seconds_left(self) -> float:
        return self.seconds


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

    def search(self, value: str, m: Matcher) -> regex.Match[str] | None:
        return m.search(self.compiled(), value)

    def __call__(self, value: str, m: Matcher) -> bool:
        return m.search(self.compiled(), value) is not None


_js = _Js


def _is_leap_year(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


_DATE: Final = _Js(r"^(\d\d\d\d)-(\d\d)-(\d\d)$")
_DAYS: Final = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _date(value: str, m: Matcher) -> bool:
    match = _DATE.search(value, m)
    if match is None:
        return False
    year, month, day = (int(part) for part in match.groups())
    return 1 <= month <= 12 and 1 <= day <= (29 if month == 2 and _is_leap_year(year) else _DAYS[month])


_IPV4: Final = _js(r"^(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)$")
_IPV6: Final = _js(
    r"^((([0-9a-f]{1,4}:){7}([0-9a-f]{1,4}|:))|(([0-9a-f]{1,4}:){6}(:[0-9a-f]{1,4}|((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9a-f]{1,4}:){5}(((:[0-9a-f]{1,4}){1,2})|:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9a-f]{1,4}:){4}(((:[0-9a-f]{1,4}){1,3})|((:[0-9a-f]{1,4})?:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){3}(((:[0-9a-f]{1,4}){1,4})|((:[0-9a-f]{1,4}){0,2}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){2}(((:[0-9a-f]{1,4}){1,5})|((:[0-9a-f]{1,4}){0,3}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){1}(((:[0-9a-f]{1,4}){1,6})|((:[0-9a-f]{1,4}){0,4}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(:(((:[0-9a-f]{1,4}){1,7})|((:[0-9a-f]{1,4}){0,5}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:)))$",
    ignore_case=True,
)

# RFC 3339 Appendix A: a duration's units in their order, weeks alone, and never a "T" with nothing after it;
# a unit may be left out only at the ends (years and days without months are not a duration).
_DURATION: Final = _js(
    r"^P(?:(?:\d+Y(?:\d+M(?:\d+D)?)?|\d+M(?:\d+D)?|\d+D)(?:T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S))?"
    r"|T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)|\d+W)$"
)

# E-mail (RFC 5321 Mailbox): a dot-string or a quoted string, "@", then a domain or an address literal in
# brackets (an IPv4 address, or "IPv6:" and an IPv6 address).
_EMAIL_DOT_STRING: Final = _js(r"^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@", ignore_case=True)
_EMAIL_QUOTED: Final = _js(r'^"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"@')
# A domain: dot-separated labels of letters, digits and hyphens, two or more, no label starting or ending with a
# hyphen; said as two unambiguous expressions (the one-expression form backtracks quadratically).
_EMAIL_DOMAIN: Final = _js(r"^[a-z0-9-]+(?:\.[a-z0-9-]+)+$", ignore_case=True)
_EMAIL_HYPHEN_AT_EDGE: Final = _js(r"(?:^|\.)-|-(?:\.|$)")
_IPV6_TAG: Final = _js(r"^IPv6:", ignore_case=True)


def _email(value: str, m: Matcher) -> bool:
    local = _EMAIL_QUOTED.search(value, m) or _EMAIL_DOT_STRING.search(value, m)
    if local is None:
        return False
    domain = value[local.end() :]
    if domain.startswith("[") and domain.endswith("]"):
        literal = domain[1:-1]
        tag = _IPV6_TAG.search(literal, m)
        return _IPV6(literal[tag.end() :], m) if tag else _IPV4(literal, m)
    return _EMAIL_DOMAIN(domain, m) and not _EMAIL_HYPHEN_AT_EDGE(domain, m)


# Host names (RFC 1123 labels, at most 253 characters, no trailing dot), and an "xn--" label only when it is a
# valid A-label: Punycode that decodes (RFC 3492) to a U-label IDNA2008 allows (RFC 5891 §4.2, RFC 5892).
_HOST_LABEL: Final = _js(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$", ignore_case=True)
_PUNY_BASE, _PUNY_TMIN, _PUNY_TMAX, _PUNY_SKEW, _PUNY_DAMP = 36, 1, 26, 38, 700


def punycode_decode(encoded: str) -> str | None:
    """RFC 3492 §6.2, strictly (no case folding of basic code points, overflow refused); ``None`` if invalid."""
    basic, delimiter, extended = encoded.rpartition("-")
    if not delimiter:
        basic, extended = "", encoded
    if any(ord(c) >= 0x80 for c in basic):
        return None
    output = [ord(c) for c in basic]
    n, i, bias, pos, first = 0x80, 0, 72, 0, True
    while pos < len(extended):
        old_i, w, k = i, 1, _PUNY_BASE
        while True:
            if pos >= len(extended):
                return None
            c = extended[pos].lower()
            pos += 1
            digit = ord(c) - 0x61 if "a" <= c <= "z" else ord(c) - 0x30 + 26 if "0" <= c <= "9" else -1
            if digit < 0:
                return None
            i += digit * w
            t = _PUNY_TMIN if k <= bias else _PUNY_TMAX if k >= bias + _PUNY_TMAX else k - bias
            if digit < t:
                break
            w *= _PUNY_BASE - t
            k += _PUNY_BASE
            if i > 0x10FFFF * (len(output) + 1):  # a sure overflow: stop before the numbers grow
                return None
        length = len(output) + 1
        delta = (i - old_i) // (_PUNY_DAMP if first else 2)
        delta += delta // length
        k = 0
        while delta > ((_PUNY_BASE - _PUNY_TMIN) * _PUNY_TMAX) // 2:
            delta //= _PUNY_BASE - _PUNY_TMIN
            k += _PUNY_BASE
        bias = k + ((_PUNY_BASE - _PUNY_TMIN + 1) * delta) // (delta + _PUNY_SKEW)
        n += i // length
        i %= length
        if n > 0x10FFFF or 0xD800 <= n <= 0xDFFF:
            return None
        output.insert(i, n)
        i += 1
        first = False
    return "".join(map(chr, output))


# RFC 5892: code points whose IDNA2008 status is fixed by hand (§2.6), those valid only in context (Appendix A),
# and the letters, marks and digits that are PVALID when case folding and NFKC leave them as they are.
_IDNA_PVALID_EXCEPTIONS: Final = frozenset("\u00df\u03c2\u06fd\u06fe\u0f0b\u3007")
_IDNA_DISALLOWED_EXCEPTIONS: Final = frozenset("\u0640\u07fa\u302e\u302f\u3031\u3032\u3033\u3034\u3035\u303b")
_IDNA_LETTER_DIGIT: Final = _js(r"^[\p{Ll}\p{Lo}\p{Lm}\p{Mn}\p{Mc}\p{Nd}]$", unicode=True)
_IDNA_MARK: Final = _js(r"^\p{M}", unicode=True)
_GREEK: Final = _js(r"^\p{Script=Greek}$", unicode=True)
_HEBREW: Final = _js(r"^\p{Script=Hebrew}$", unicode=True)
_KANA_HAN: Final = _js(r"[\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Han}]", unicode=True)
_LETTER: Final = _js(r"^\p{L}$", unicode=True)
#: Canonical_Combining_Class=Virama (Unicode 14), which JavaScript's \p{} cannot name: the same list is in
#: web/src/formats.mjs.
_VIRAMA: Final = _js(
    r"^[\u{94d}\u{9cd}\u{a4d}\u{acd}\u{b4d}\u{bcd}\u{c4d}\u{ccd}\u{d3b}-\u{d3c}\u{d4d}\u{dca}\u{e3a}\u{eba}\u{f84}"
    r"\u{1039}-\u{103a}\u{1714}-\u{1715}\u{1734}\u{17d2}\u{1a60}\u{1b44}\u{1baa}-\u{1bab}\u{1bf2}-\u{1bf3}\u{2d7f}"
    r"\u{a806}\u{a82c}\u{a8c4}\u{a953}\u{a9c0}\u{aaf6}\u{abed}\u{10a3f}\u{11046}\u{11070}\u{1107f}\u{110b9}"
    r"\u{11133}-\u{11134}\u{111c0}\u{11235}\u{112ea}\u{1134d}\u{11442}\u{114c2}\u{115bf}\u{1163f}\u{116b6}"
    r"\u{1172b}\u{11839}\u{1193d}-\u{1193e}\u{119e0}\u{11a34}\u{11a47}\u{11a99}\u{11c3f}\u{11d44}-\u{11d45}\u{11d97}]$",
    unicode=True,
)
_ARABIC_INDIC: Final = frozenset(map(chr, range(0x0660, 0x066A)))
_EXTENDED_ARABIC_INDIC: Final = frozenset(map(chr, range(0x06F0, 0x06FA)))


def _idna_char_ok(label: str, at: int, m: Matcher) -> bool:
    c = label[at]
    before = label[at - 1] if at > 0 else ""
    after = label[at + 1] if at + 1 < len(label) else ""
    if c in _IDNA_PVALID_EXCEPTIONS:
        return True
    if c in _IDNA_DISALLOWED_EXCEPTIONS:
        return False
    if c == "\u00b7":  # MIDDLE DOT: between two "l"
        return before == "l" and after == "l"
    if c == "\u0375":  # GREEK LOWER NUMERAL SIGN (KERAIA): before a Greek character
        return after != "" and _GREEK(after, m)
    if c in "\u05f3\u05f4":  # HEBREW GERESH, GERSHAYIM: after a Hebrew character
        return before != "" and _HEBREW(before, m)
    if c == "\u30fb":  # KATAKANA MIDDLE DOT: in a label with Hiragana, Katakana or Han
        return _KANA_HAN(label, m)
    if c in _ARABIC_INDIC:
        return not any(d in _EXTENDED_ARABIC_INDIC for d in label)
    if c in _EXTENDED_ARABIC_INDIC:
        return not any(d in _ARABIC_INDIC for d in label)
    if c == "\u200d":  # ZERO WIDTH JOINER: after a virama
        return before != "" and _VIRAMA(before, m)
    if c == "\u200c":  # ZERO WIDTH NON-JOINER: after a virama, or between joining letters (approximated)
        return before != "" and (_VIRAMA(before, m) or (_LETTER(before, m) and after != "" and _LETTER(after, m)))
    if c == "-" or ("a" <= c <= "z") or ("0" <= c <= "9"):
        return True
    return _IDNA_LETTER_DIGIT(c, m) and unicodedata.normalize("NFKC", c).lower() == c


def _a_label(label: str, m: Matcher) -> bool:
    u_label = punycode_decode(label[4:])
    if not u_label or u_label.isascii():
        return False
    if u_label[2:4] == "--" or u_label.startswith("-") or u_label.endswith("-") or _IDNA_MARK(u_label, m):
        return False
    return all(_idna_char_ok(u_label, at, m) for at in range(len(u_label)))


def _hostname(value: str, m: Matcher) -> bool:
    if not 1 <= len(value) <= 253:
        return False
    for label in value.split("."):
        if not _HOST_LABEL(label, m):
            return False
        if label[:4].lower() == "xn--" and not _a_label(label, m):
            return False
    return True


# ajv-formats' "url" (the widely copied web-address expression), checked in parts: its userinfo, host labels
# and port are each unambiguous, so the check is linear where the single expression backtracks for seconds.
_URL_SCHEME: Final = _js(r"^(?:https?|ftp):\/\/", ignore_case=True)
_URL_IP: Final = _js(
    r"^(?!(?:10|127)(?:\.\d{1,3}){3})(?!(?:169\.254|192\.168)(?:\.\d{1,3}){2})(?!172\.(?:1[6-9]|2\d|3[0-1])(?:\.\d{1,3}){2})"
    r"(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.(?:1?\d{1,2}|2[0-4]\d|25[0-5])){2}(?:\.(?:[1-9]\d?|1\d\d|2[0-4]\d|25[0-4]))$"
)
_URL_LABEL: Final = _js(r"^[a-zA-Z0-9\u{a1}-\u{ffff}]+(?:-[a-zA-Z0-9\u{a1}-\u{ffff}]+)*$", unicode=True)
_URL_TLD: Final = _js(r"^[a-zA-Z\u{a1}-\u{ffff}]{2,}$", unicode=True)
_URL_PORT: Final = _js(r"^\d{2,5}$")
_JS_SPACE: Final = _js(r"\s", unicode=True)


def _url_host(host: str, m: Matcher) -> bool:
    if _URL_IP(host, m):
        return True
    *names, tld = host.split(".")
    return bool(names) and _URL_TLD(tld, m) and all(_URL_LABEL(name, m) for name in names)


def _url(value: str, m: Matcher) -> bool:
    scheme = _URL_SCHEME.search(value, m)
    if scheme is None:
        return False
    rest = value[scheme.end() :]
    space = _JS_SPACE.search(rest, m)
    first_space = space.start() if space else len(rest)
    last_space = -1
    if space is not None:
        reversed_space = _JS_SPACE.search(rest[::-1], m)
        last_space = len(rest) - 1 - reversed_space.start() if reversed_space else -1
    # Where the host can start: at once, or just after the last "@" of a run without "/" (the host and port
    # hold neither "@" nor "/"; a userinfo may hold both). Each run is looked at once: linear.
    starts = [0]
    run_start = 0
    while run_start <= len(rest):
        run_end = rest.find("/", run_start)
        run_end = len(rest) if run_end < 0 else run_end
        at = rest.rfind("@", run_start, run_end)
        if at >= 0:
            starts.append(at + 1)
        run_start = run_end + 1
    for start in starts:
        end = rest.find("/", start)
        end = len(rest) if end < 0 else end
        authority = rest[start:end]
        if "@" in authority:
            continue
        if start > 0 and (start - 1 == 0 or first_space < start - 1):  # userinfo: one or more non-spaces
            continue
        if last_space >= end:  # the path: no spaces
            continue
        host, colon, port = authority.partition(":")
        if colon and not _URL_PORT(port, m):
            continue
        if _url_host(host, m):
            return True
    return False


# RFC 3339 partial-time with its time-offset (JSON Schema's "time" is RFC 3339's full-time: the offset is part
# of it, and is "Z" or ±hh:mm, never ±hh alone).
_TIME: Final = _Js(r"^(\d\d):(\d\d):(\d\d)(?:\.\d+)?(?:z|([+-])(\d\d):(\d\d))$", ignore_case=True)


def _time(value: str, m: Matcher) -> bool:
    match = _TIME.search(value, m)
    if match is None:
        return False
    hour, minute, second = int(match.group(1)), int(match.group(2)), int(match.group(3))
    sign, offset_hour, offset_minute = match.group(4), int(match.group(5) or 0), int(match.group(6) or 0)
    if hour > 23 or minute > 59 or second > 60 or offset_hour > 23 or offset_minute > 59:
        return False
    if second < 60:
        return True
    # A leap second is inserted at 23:59:60 UTC (RFC 3339 §5.7): in local time, that minute moved by the offset.
    offset = (offset_hour * 60 + offset_minute) * (-1 if sign == "-" else 1)
    return (hour * 60 + minute - offset) % (24 * 60) == 23 * 60 + 59


_DATE_TIME_SEPARATOR: Final = _Js(r"t|\s", ignore_case=True)


def _date_time(value: str, m: Matcher) -> bool:
    # A one-character expression: splitting is linear whatever the value.
    parts = _DATE_TIME_SEPARATOR.compiled().split(value, maxsplit=2)
    return len(parts) == 2 and _date(parts[0], m) and _time(parts[1], m)


# RFC 3986, as its own Appendix B splits a reference (linear: each part is a run of what it may not contain),
# then each part checked by its own grammar (each a run of allowed characters: linear too). ajv-formats' single
# expression backtracks quadratically on long values and lets ``http://example.com:abc`` pass as a path.
_URI_PARTS: Final = _Js(r"^(?:([^:/?#]+):)?(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$")
_SCHEME: Final = _Js(r"^[a-z][a-z0-9+\-.]*$", ignore_case=True)
_USERINFO: Final = _Js(r"^(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*$", ignore_case=True)
_REG_NAME: Final = _Js(r"^(?:[a-z0-9\-._~!$&'()*+,;=]|%[0-9a-f]{2})*$", ignore_case=True)
_PORT: Final = _Js(r"^[0-9]*$")
_IP_FUTURE: Final = _Js(r"^v[0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+$", ignore_case=True)
_PATH: Final = _Js(r"^(?:[a-z0-9\-._~!$&'()*+,;=:@/]|%[0-9a-f]{2})*$", ignore_case=True)
_QUERY: Final = _Js(r"^(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*$", ignore_case=True)


def _authority(authority: str, m: Matcher) -> bool:
    userinfo, at, host_port = authority.rpartition("@")
    if at and not _USERINFO(userinfo, m):
        return False
    if host_port.startswith("["):
        host, bracket, port = host_port[1:].partition("]")
        if not bracket or not (_IPV6(host, m) or _IP_FUTURE(host, m)):
            return False
        return port == "" or (port.startswith(":") and _PORT(port[1:], m))
    host, _, port = host_port.partition(":")
    return _REG_NAME(host, m) and _PORT(port, m)


def _uri_reference(value: str, m: Matcher, *, absolute: bool = False) -> bool:
    parts = _URI_PARTS.search(value, m)
    if parts is None:
        return False
    scheme, authority, path, query, fragment = parts.groups()
    if scheme is None:
        # A relative reference: its first segment cannot hold a colon (it would read as a scheme).
        if absolute or ":" in path.partition("/")[0]:
            return False
    elif not _SCHEME(scheme, m):
        return False
    if authority is not None and not _authority(authority, m):
        return False
    return _PATH(path, m) and (query is None or _QUERY(query, m)) and (fragment is None or _QUERY(fragment, m))


def _uri(value: str, m: Matcher) -> bool:
    return _uri_reference(value, m, absolute=True)


# RFC 6570 level 4, read literal run by literal run and expression by expression (each checked alone: linear).
# Literals: any character but controls, space and "%<>\\^`{|}" (a "%" only as a percent-encoded triplet); the
# JSON Schema Test Suite takes the apostrophe as a literal too.
_URI_TEMPLATE_LITERALS: Final = _Js(
    r"^(?:[\x21\x23\x24\x26-\x3b\x3d\x3f-\x5b\x5d\x5f\x61-\x7a\x7e\u{a0}-\u{d7ff}\u{e000}-\u{fdcf}\u{fdf0}-\u{ffef}"
    r"\u{10000}-\u{1fffd}\u{20000}-\u{2fffd}\u{30000}-\u{3fffd}\u{40000}-\u{4fffd}\u{50000}-\u{5fffd}\u{60000}-\u{6fffd}"
    r"\u{70000}-\u{7fffd}\u{80000}-\u{8fffd}\u{90000}-\u{9fffd}\u{a0000}-\u{afffd}\u{b0000}-\u{bfffd}\u{c0000}-\u{cfffd}"
    r"\u{d0000}-\u{dfffd}\u{e1000}-\u{efffd}\u{f0000}-\u{ffffd}\u{100000}-\u{10fffd}]|%[0-9a-f]{2})*$",
    ignore_case=True,
    unicode=True,
)
_URI_TEMPLATE_EXPRESSION: Final = _Js(
    r"^\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})(?:\.?(?:[a-z0-9_]|%[0-9a-f]{2}))*(?::[1-9][0-9]{0,3}|\*)?"
    r"(?:,(?:[a-z0-9_]|%[0-9a-f]{2})(?:\.?(?:[a-z0-9_]|%[0-9a-f]{2}))*(?::[1-9][0-9]{0,3}|\*)?)*\}$",
    ignore_case=True,
)


def _uri_template(value: str, m: Matcher) -> bool:
    pos = 0
    while True:
        opening = value.find("{", pos)
        if not _URI_TEMPLATE_LITERALS(value[pos : opening if opening >= 0 else len(value)], m):
            return False
        if opening < 0:
            return True
        closing = value.find("}", opening)
        if closing < 0 or not _URI_TEMPLATE_EXPRESSION(value[opening : closing + 1], m):
            return False
        pos = closing + 1


# ajv-formats compiles BYTE, ``^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$``, with the ``m``
# flag: a value passes when any one of its lines is base64. Said here line by line, in linear time (the expression
# backtracks quadratically on a long line that is not).
_BYTE_LINES: Final = _js(r"[\n\r\u2028\u2029]")
_BASE64_CHARACTERS: Final = _js(r"^[A-Za-z0-9+/]*$")


def _byte(value: str, m: Matcher) -> bool:
    for line in _BYTE_LINES.compiled().split(value):
        body = line.rstrip("=")
        padding = len(line) - len(body)
        if padding <= 2 and (len(body) + padding) % 4 == 0 and _BASE64_CHARACTERS(body, m):
            return True
    return False


def _int32(value: float, _: Matcher) -> bool:
    return _is_integer(value) and -(2**31) <= value <= 2**31 - 1


def _int64(value: float, _: Matcher) -> bool:
    return _is_integer(value)


def _is_integer(value: float) -> bool:
    return isinstance(value, int) or (math.isfinite(value) and value.is_integer())


_Z_ANCHOR: Final = _js(r"[^\\]\\Z")


def _regex(value: str, m: Matcher) -> bool:
    # ajv-formats: `new RegExp(str)`, no flags: a syntax check by the same grammar, Annex B included.
    try:
        return not _Z_ANCHOR(value, m) and is_valid_syntax(value, unicode=False, seconds=m.seconds_left())
    except PatternError:
        raise NotCheckedInTime from None  # too deep or too long to judge: refused as unchecked, never a crash


@dataclass(frozen=True)
class Format:
    """One format: what it applies to and the check (what a person is told it expects is words, and lives in
    :data:`agentturn.forms.wording.FORMAT_EXPECTED`)."""

    applies_to: Literal["string", "number"]
    check: Callable[[Any, Matcher], bool]


def _string(check: Callable[[str, Matcher], bool]) -> Format:
    return Format("string", check)


def _always(_: Any, __: Matcher) -> bool:
    return True


#: Every format the console's validator knows, by name.
FORMATS: Final[dict[str, Format]] = {
    "date": _string(_date),
    "time": _string(_time),
    "date-time": _string(_date_time),
    "duration": _string(_DURATION),
    "uri": _string(_uri),
    "uri-reference": _string(_uri_reference),
    "uri-template": _string(_uri_template),
    "url": _string(_url),
    "email": _string(_email),
    "hostname": _string(_hostname),
    "ipv4": _string(_IPV4),
    "ipv6": _string(_IPV6),
    "regex": _string(_regex),
    "uuid": _string(_js(r"^[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$", ignore_case=True)),
    "json-pointer": _string(_js(r"^(?:\/(?:[^~/]|~0|~1)*)*$")),
    "json-pointer-uri-fragment": _string(
        _js(r"^#(?:\/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*$", ignore_case=True)
    ),
    "relative-json-pointer": _string(_js(r"^(?:0|[1-9][0-9]*)(?:#|(?:\/(?:[^~/]|~0|~1)*)*)$")),
    "byte": _string(_byte),
    "int32": Format("number", _int32),
    "int64": Format("number", _int64),
    "float": Format("number", _always),
    "double": Format("number", _always),
    "password": _string(_always),
    "binary": _string(_always),
    # Added by @rjsf/validator-ajv8 (createAjvInstance.js).
    "data-url": _string(_js(r"^data:([a-z]+\/[a-z0-9-+.]+)?;(?:name=(.*);)?base64,(.*)$")),
    "color": _string(
        _js(
            r"^(#?([0-9A-Fa-f]{3}){1,2}\b|aqua|black|blue|fuchsia|gray|green|lime|maroon|navy|olive|orange|purple|red|silver|teal|white|yellow|(rgb\(\s*\b([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\b\s*,\s*\b([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\b\s*,\s*\b([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\b\s*\))|(rgb\(\s*(\d?\d%|100%)+\s*,\s*(\d?\d%|100%)+\s*,\s*(\d?\d%|100%)+\s*\)))$"
        )
    ),
}


#: Values that take every format check down each of its paths, so that all its expressions get compiled.
_WARM_UP: Final = (
    "",
    "a:b",
    "2024-01-01T00:00:00Z",
    "00:00:60Z",
    "http://u@a.com:80/p",
    "//[v1.a]:80/p?q#f",
    '"a"@[IPv6:::1]',
    "a@[127.0.0.1]",
    "xn--9n2bp8q.xn--ll-0ea.xn--wva3je.xn--4dbc5h.xn--k8j5u.xn--11b2ezcw70k.xn--ngba5hb2804a",
    "{+a}b",
)


def warm(name: str) -> None:
    """Compile what format ``name`` needs now (a form's validator is built before any submission arrives)."""
    fmt = FORMATS[name]
    if fmt.applies_to == "string":
        for sample in _WARM_UP:
            fmt.check(sample, TimedMatcher())


def check_format(name: str, value: Any, matcher: Matcher | None = None) -> bool:
    """Whether ``value`` satisfies format ``name``; values of a type the format does not apply to pass.

    :class:`NotCheckedInTime` when the check runs out of the matcher's budget (its own by default).
    """
    fmt = FORMATS[name]
    m = matcher or TimedMatcher()
    if fmt.applies_to == "string":
        return not isinstance(value, str) or fmt.check(value, m)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return True
    return bool(fmt.check(value, m))
