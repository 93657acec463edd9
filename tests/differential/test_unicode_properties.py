"""``\\p{...}`` means on the server what it means in JavaScript (ECMA-262's property names, exactly).

Every property name and value ECMA-262 accepts (agentturn/forms/ecma_properties.py), and a handful it refuses,
compiled on the server (:func:`agentturn.forms.ecma_regex.compile_ecma`) and by Node's own ``RegExp`` with the
``u`` flag: both accept or both refuse, and an accepted one matches the same code points, over a sample of
code points assigned in the Unicode version both sides know. Cases that may differ are the newest characters
only (DISAGREEMENTS.md).
"""

from __future__ import annotations

import json
import subprocess
import unicodedata
from pathlib import Path

import pytest
import regex

from agentturn import FormDefinition
from agentturn.forms.ecma_properties import BINARY, GENERAL_CATEGORY, SCRIPT
from agentturn.forms.ecma_regex import PatternError, compile_ecma
from tests.differential.test_ajv_agreement import ROOT, pytestmark  # noqa: F401 - same needs (node)

SCRIPT_PATH = Path(__file__).with_name("property_check.mjs")

#: Accepted by JavaScript, refused by the server (its ``regex`` module has no such property): a form using one
#: is refused when it is built, never checked differently.
SERVER_CANNOT: frozenset[str] = frozenset({r"\p{Changes_When_NFKC_Casefolded}", r"\p{CWKCF}"})

#: Names JavaScript refuses (loose spellings, blocks, scripts without ``sc=``, v-mode properties of strings).
REFUSED = [
    r"\p{lu}",
    r"\p{Greek}",
    r"\p{IsGreek}",
    r"\p{InBasicLatin}",
    r"\p{Block=Basic_Latin}",
    r"\p{sc=greek}",
    r"\p{Script=Hrkt}",
    r"\p{L&}",
    r"\p{Lowercase_letter}",
    r"\p{ID_continue}",
    r"\p{Basic_Emoji}",
    r"\p{gc=IDC}",
    r"\p{scx=Lu}",
]


def _sample() -> list[int]:
    # Code points assigned in the server's Unicode version (surrogates aside: a lone one is no text), spread
    # over every plane in use, plus the ones the issue named.
    picked = {c for c in range(0, 0x32000, 23) if unicodedata.category(chr(c)) not in ("Cn", "Cs")}
    picked |= {0x200C, 0x200D, 0xFE0F, 0xFE00, 0xE0100, 0x0345, 0x0BCD, 0x3041, 0x30FB, 0x1F600}
    return sorted(picked)


def _patterns() -> list[str]:
    out = [rf"\p{{{name}}}" for name in BINARY] + [rf"\P{{{name}}}" for name in ("IDC", "VS", "Any", "ASCII")]
    out += [rf"\p{{{value}}}" for value in GENERAL_CATEGORY] + [rf"\p{{gc={value}}}" for value in GENERAL_CATEGORY]
    out += [rf"\p{{sc={value}}}" for value in SCRIPT] + [rf"\p{{scx={value}}}" for value in SCRIPT]
    return out


def _node(patterns: list[str], sample: list[int]) -> list[dict[str, str]]:
    completed = subprocess.run(
        ["node", str(SCRIPT_PATH)],
        input=json.dumps({"patterns": patterns, "sample": sample}).encode(),
        capture_output=True,
        cwd=ROOT,
        timeout=240,
        check=True,
    )
    answers: list[dict[str, str]] = json.loads(completed.stdout)
    return answers


@pytest.mark.timeout(300)
def test_every_property_javascript_knows_means_the_same_on_the_server() -> None:
    # GIVEN every \p{...} name and value ECMA-262 accepts, and a sample of assigned code points
    sample = _sample()
    patterns = _patterns()
    texts = [chr(c) for c in sample]
    # WHEN Node's RegExp and the server both compile each and match it against every sampled code point
    differ: list[str] = []
    for pattern, node in zip(patterns, _node(patterns, sample), strict=True):
        assert "error" not in node, f"JavaScript refuses {pattern}: the table is wrong"
        try:
            compiled = compile_ecma(f"^(?:{pattern})$")
        except PatternError:
            assert pattern in SERVER_CANNOT, f"the server refuses {pattern}, which JavaScript accepts"
            continue
        ours = "".join("1" if compiled.search(text) else "0" for text in texts)
        if ours != node["matches"]:
            diff = [f"U+{sample[i]:04X}" for i in range(len(sample)) if ours[i] != node["matches"][i]]
            differ.append(f"{pattern}: {len(diff)} code points, e.g. {diff[:5]}")
    # THEN each matches exactly the same code points on both sides
    assert differ == [], "\n".join(differ)


def test_the_issue_examples_match_as_in_the_browser() -> None:
    # GIVEN \P{IDC} and \P{VS}, which Python's regex module read as blocks before
    node = _node([r"\P{IDC}", r"\P{VS}"], [0x61, 0x2FF0, 0xFE0F, 0x21])
    not_idc = compile_ecma(r"^\P{IDC}$")
    not_vs = compile_ecma(r"^\P{VS}$")
    # THEN "a" is an identifier character and U+FE0F a variation selector, as in the browser
    assert node == [{"matches": "0101"}, {"matches": "1101"}]
    assert [bool(not_idc.search(c)) for c in "a\u2ff0\ufe0f!"] == [False, True, False, True]
    assert [bool(not_vs.search(c)) for c in "a\u2ff0\ufe0f!"] == [True, True, False, True]


@pytest.mark.parametrize("pattern", REFUSED)
def test_a_name_javascript_refuses_is_refused_when_the_form_is_built(pattern: str) -> None:
    # GIVEN a property escape JavaScript does not know
    node = _node([pattern], [0x61])
    assert "error" in node[0], f"JavaScript accepts {pattern}"
    # (a property of strings such as Basic_Emoji exists in v mode only; patterns are read in u mode)
    assert node[0]["vMode"] == ("accepted" if pattern == r"\p{Basic_Emoji}" else "refused")
    # WHEN a form uses it / THEN the form is refused when it is built, naming the property
    with pytest.raises(ValueError, match="Unicode property"):
        FormDefinition("f", "d", {"type": "object", "properties": {"p": {"type": "string", "pattern": pattern}}})
    assert regex.compile(r"\p{Greek}")  # the regex module alone would have taken some of them
