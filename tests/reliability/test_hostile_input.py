"""Hostile input through the submit HTTP entry point: never a 5xx, and nothing stored changes on a refusal.

* bodies generated (hypothesis, derandomized: the same examples every run) from each demo form's JSON Schema,
  valid and mutated — the handler's answer must agree with the schema (202 iff the data is valid);
* bodies over the size cap (refused 413 before parsing), deep nesting, invalid UTF-8, wrong media types;
* a catastrophic ``pattern`` in a registered form, validated within ``PATTERN_BUDGET_SECONDS``.
"""

from __future__ import annotations

import base64
import json
import time
from itertools import count
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentturn import Agent, FormDefinition, UserInputTool
from agentturn.demo.agents import MEETING_SCHEMA, SUPPORT_TICKET_SCHEMA
from agentturn.forms.validation import PATTERN_BUDGET_SECONDS, validate_form_data
from agentturn.ports.chat_model import ChatRequest, ScriptedChatModel
from agentturn.state.messages import AiMessage, ToolCall, ToolMessage
from tests.functional.harness import http_event
from tests.reliability.figures import record
from tests.reliability.kit import Stack, memory_stack

FORMS = {
    "support": ("support-agent", "create a login incident ticket", SUPPORT_TICKET_SCHEMA),
    "meeting": ("meeting-agent", "book a meeting room", MEETING_SCHEMA),
}
EXAMPLES = 150
_conversations = count()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _valid_value(spec: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "enum" in spec:
        return st.sampled_from(spec["enum"])
    if spec.get("format") == "date":
        return st.dates().map(lambda d: d.isoformat())
    if "pattern" in spec:
        return st.from_regex(spec["pattern"], fullmatch=True)
    if spec.get("type") == "integer":
        return st.integers(spec.get("minimum", -(2**31)), spec.get("maximum", 2**31))
    if spec.get("type") == "boolean":
        return st.booleans()
    return st.text(min_size=spec.get("minLength", 0), max_size=30)


def form_data(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Mostly schema-shaped objects (each field valid or anything at all, fields dropped, extra fields),
    sometimes any JSON value at all."""
    properties: dict[str, Any] = schema["properties"]
    field_values = {
        name: st.one_of(_valid_value(spec), _valid_value(spec), json_values) for name, spec in properties.items()
    }
    shaped = st.fixed_dictionaries({}, optional=field_values)
    extra = st.dictionaries(st.text(min_size=1, max_size=12), json_values, max_size=2)
    full = st.fixed_dictionaries({n: _valid_value(s) for n, s in properties.items()})
    return st.one_of(full, shaped, st.builds(lambda a, b: {**a, **b}, shaped, extra), json_values)


def bodies(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(lambda d: {"data": d}, form_data(schema)),
        st.builds(
            lambda d, x: {"data": d, **x},
            form_data(schema),
            st.dictionaries(st.text(max_size=8), json_values, max_size=2),
        ),
        json_values,
    )


@pytest.fixture(scope="module")
def shared_stack() -> Stack:
    return memory_stack()


def _waiting(stack: Stack, form: str) -> tuple[str, str]:
    agent_id, text, _ = FORMS[form]
    view = stack.start_ticket(f"hostile-{next(_conversations)}", agent_id=agent_id, text=text)
    return view["turnId"], view["suspension"]["actionId"]


@pytest.mark.parametrize("form", sorted(FORMS))
def test_generated_bodies_never_fail_the_server_and_rejections_change_nothing(shared_stack: Stack, form: str) -> None:
    schema = FORMS[form][2]
    tally = {"accepted": 0, "refused": 0}

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(body=bodies(schema))
    def check(body: Any) -> None:
        # GIVEN a turn waiting for this form
        turn_id, action = _waiting(shared_stack, form)
        before = shared_stack.stored(turn_id)
        # WHEN a generated body is submitted
        answer = shared_stack.submit(Stack.submit_event(turn_id, action, body, "k"))
        # THEN the server never fails, and it accepts exactly what the frozen schema accepts
        assert answer.status < 500, answer.body
        valid = isinstance(body, dict) and set(body) == {"data"} and not validate_form_data(schema, body["data"])
        assert answer.status == (202 if valid else answer.status), answer.body
        if valid:
            tally["accepted"] += 1
            assert answer.status == 202, answer.body
        else:
            tally["refused"] += 1
            assert 400 <= answer.status < 500, answer.body
            assert answer.headers["content-type"].startswith("application/problem+json")
            assert shared_stack.stored(turn_id) == before, "a refused submission changed what is stored"

    check()
    shared_stack.queue.drain()
    record(
        "hostile bodies",
        **{
            f"{form}_generated": EXAMPLES,
            f"{form}_accepted": tally["accepted"],
            f"{form}_refused": tally["refused"],
            "server_errors": 0,
            "changed_on_refusal": 0,
        },
    )
    assert tally["accepted"] and tally["refused"], tally  # both sides were exercised


def _raw_submit(stack: Stack, raw: str, *, headers: dict[str, str | None] | None = None, b64: bool = False) -> Any:
    turn_id, action = _waiting(stack, "support")
    before = stack.stored(turn_id)
    event = http_event(
        "http_submit_form.json",
        path=f"/turns/{turn_id}/actions/{action}/submit",
        raw_body=raw,
        headers={"idempotency-key": "k", **(headers or {})},
        base64_body=b64,
    )
    answer = stack.submit(event)
    assert stack.stored(turn_id) == before, f"{answer.status}: a refused body changed what is stored"
    return answer


def test_a_body_over_the_cap_is_refused_before_it_is_parsed(stack: Stack) -> None:
    # GIVEN bodies just over the cap: one not even JSON, one valid JSON, one base64-encoded
    cap = stack.services.settings.max_body_bytes
    not_json = "{" * (cap + 1)
    valid_json = json.dumps({"data": {"affectedSystem": "x" * cap, "impactScope": "ALL_USERS"}})
    # WHEN they are submitted THEN each is 413 (the unparsable one too: nothing parsed it) and nothing changed
    assert _raw_submit(stack, not_json).status == 413
    assert _raw_submit(stack, valid_json).status == 413
    answer = _raw_submit(stack, valid_json, b64=True)
    assert answer.status == 413, answer.body
    # AND a body exactly at the cap is parsed (here: refused as malformed, 400 — not 413)
    assert _raw_submit(stack, "{" * cap).status == 400
    record("hostile gate", over_cap_413=3)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("[" * 50_000 + "]" * 50_000, id="deep-array"),
        pytest.param('{"data":' * 5_000 + "{}" + "}" * 5_000, id="deep-object"),
        pytest.param('{"data": {"affectedSystem": "\\ud800", "impactScope": "ALL_USERS"}}', id="lone-surrogate"),
        pytest.param('{"data": {}, "data": {"affectedSystem": "a", "impactScope": "ALL_USERS"}}', id="duplicate-key"),
        pytest.param('{"data": {"affectedSystem": NaN}}', id="nan"),
        pytest.param('{"data": {"affectedSystem": 1e999}}', id="huge-number"),
        pytest.param("", id="empty"),
        pytest.param("null", id="null"),
        pytest.param('"just a string"', id="string"),
    ],
)
def test_malformed_json_is_a_client_error_and_changes_nothing(stack: Stack, raw: str) -> None:
    answer = _raw_submit(stack, raw)
    assert 400 <= answer.status < 500, answer.body
    record("hostile gate", malformed_refused=1)


def test_invalid_utf8_is_refused(stack: Stack) -> None:
    # GIVEN a base64 body whose bytes are not UTF-8
    raw = base64.b64encode(b'{"data": {"affectedSystem": "\xff\xfe", "impactScope": "ALL_USERS"}}').decode()
    turn_id, action = _waiting(stack, "support")
    before = stack.stored(turn_id)
    event = http_event(
        "http_submit_form.json", path=f"/turns/{turn_id}/actions/{action}/submit", headers={"idempotency-key": "k"}
    )
    event.update(body=raw, isBase64Encoded=True)
    event["headers"]["content-length"] = str(len(base64.b64decode(raw)))
    # WHEN it is submitted THEN it is a 400 and nothing changed
    answer = stack.submit(event)
    assert answer.status == 400, answer.body
    assert stack.stored(turn_id) == before
    record("hostile gate", invalid_utf8_refused=1)


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/xml",
        "application/x-www-form-urlencoded",
        "application/json; charset=latin-1",
        "multipart/form-data; boundary=x",
        None,
    ],
)
def test_a_body_that_is_not_json_by_its_media_type_is_refused(stack: Stack, content_type: str | None) -> None:
    body = json.dumps({"data": {"affectedSystem": "SSO", "impactScope": "ALL_USERS"}})
    answer = _raw_submit(stack, body, headers={"content-type": content_type})
    assert answer.status == 415, answer.body
    record("hostile gate", wrong_media_type_415=1)


MEETING_OK = {"topic": "Review", "date": "2026-12-01", "startTime": "10:00", "attendees": 6}


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"startTime": "10:00\n"}, "/startTime"),  # Python's `$` matched before a final newline: it was a 202
        ({"startTime": "１０:００"}, "/startTime"),  # full-width digits are not \d / [0-9]
        ({"date": "2026-02-30"}, "/date"),  # formats are asserted, in the deployed bundle too
        ({"isAdmin": True}, "/isAdmin"),
    ],
    ids=["trailing-newline", "full-width-digits", "impossible-date", "undeclared"],
)
def test_what_the_browser_refuses_the_server_refuses(shared_stack: Stack, change: dict[str, Any], path: str) -> None:
    # GIVEN a turn waiting for the meeting form
    turn_id, action = _waiting(shared_stack, "meeting")
    before = shared_stack.stored(turn_id)
    # WHEN data the console's Ajv would refuse is sent straight to the API
    answer = shared_stack.submit(Stack.submit_event(turn_id, action, {"data": {**MEETING_OK, **change}}, "k"))
    # THEN it is a 422 naming that field, and nothing stored changed
    assert answer.status == 422, answer.body
    assert [e["path"] for e in answer.json["errors"]] == [path]
    assert shared_stack.stored(turn_id) == before


# ---------------------------------------------------------------------- catastrophic patterns

CATASTROPHIC = "^(a|aa)+$"


def _code_model(request: ChatRequest) -> AiMessage:
    if request.messages and isinstance(request.messages[-1], ToolMessage):
        return AiMessage(content="thanks")
    return AiMessage(tool_calls=[ToolCall(id="call-1", name="request_user_input", arguments={"formKey": "code"})])


def _pattern_stack() -> Stack:
    form = FormDefinition("code", "a code", {"type": "object", "properties": {
        "code": {"type": "string", "pattern": CATASTROPHIC},
        "codes": {"type": "array", "items": {"type": "string", "pattern": CATASTROPHIC}},
    }, "required": ["code"]})  # fmt: skip
    agent = Agent(
        id="code-agent", instructions="", chat_model=ScriptedChatModel(_code_model), tools=[UserInputTool(forms=[form])]
    )
    base = memory_stack()
    return Stack(base.store, base.memory, base.clock, agents=[agent])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("count_", [1, 1000], ids=["one-value", "a-thousand-values"])
def test_a_catastrophic_pattern_is_validated_in_bounded_time(count_: int) -> None:
    # GIVEN a turn waiting on a form whose pattern backtracks exponentially ("a"*40+"!": ~2^40 steps in re)
    stack = _pattern_stack()
    view = stack.start_ticket("pattern", agent_id="code-agent", text="code please")
    before = stack.stored(view["turnId"])
    evil = "a" * 40 + "!"
    body = {"data": {"code": evil, "codes": [evil] * (count_ - 1)}}
    # WHEN it is submitted with values that trigger the backtracking
    started = time.monotonic()
    answer = stack.submit(Stack.submit_event(view["turnId"], view["suspension"]["actionId"], body, "k"))
    elapsed = time.monotonic() - started
    # THEN the answer is a 422 naming the field, within the budget (plus the request's own cost), nothing changed
    assert answer.status == 422, answer.body
    timeout = {"path": "/code", "message": "code could not be checked in time; please shorten it."}
    assert timeout in answer.json["errors"]
    assert elapsed < PATTERN_BUDGET_SECONDS + 1.0, elapsed
    assert stack.stored(view["turnId"]) == before
    # AND a value the pattern matches is still accepted
    ok = stack.submit(
        Stack.submit_event(view["turnId"], view["suspension"]["actionId"], {"data": {"code": "aaa"}}, "k2")
    )
    assert ok.status == 202, ok.body
    record(
        "catastrophic pattern",
        budget_ms=str(int(PATTERN_BUDGET_SECONDS * 1000)),
        **{f"worst_ms_{count_}_values": int(elapsed * 1000)},
    )


# ---------------------------------------------------------------------- formats under the budget


UNCHECKED = "could not be checked in time; please shorten it."
WEB_ADDRESS = "a web address such as https://example.com"


def _formats_stack() -> Stack:
    form = FormDefinition("code", "a rule and a site", {"type": "object", "properties": {
        "rule": {"type": "string", "format": "regex"},
        "site": {"type": "string", "format": "url"},
    }})  # fmt: skip
    agent = Agent(
        id="code-agent", instructions="", chat_model=ScriptedChatModel(_code_model), tools=[UserInputTool(forms=[form])]
    )
    base = memory_stack()
    return Stack(base.store, base.memory, base.clock, agents=[agent])


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("data", "error"),
    [
        # The ECMA regex parser recursed once per group: RecursionError, a 500 with a 250 KB traceback.
        ({"rule": "(" * 400 + ")" * 400}, {"path": "/rule", "message": f"rule {UNCHECKED}"}),
        # ajv-formats' url expression: 9.4 s of CPU on a 24 KB value in the submit Lambda.
        ({"site": "http://" + ":" * 24_000}, {"path": "/site", "message": f"site must be {WEB_ADDRESS}."}),
    ],
    ids=["nested-regex", "long-url"],
)  # fmt: skip
def test_a_format_value_built_to_exhaust_the_server_is_a_422_within_the_budget(
    data: dict[str, Any], error: dict[str, str]
) -> None:
    # GIVEN a turn waiting on a form with a "regex" and a "url" field
    stack = _formats_stack()
    view = stack.start_ticket("formats", agent_id="code-agent", text="rule please")
    before = stack.stored(view["turnId"])
    # WHEN a value shaped to exhaust the check is submitted
    started = time.monotonic()
    answer = stack.submit(Stack.submit_event(view["turnId"], view["suspension"]["actionId"], {"data": data}, "k"))
    elapsed = time.monotonic() - started
    # THEN it is a 422 naming the field, within the budget (plus the request's own cost), and nothing changed
    assert answer.status == 422, answer.body[:2000]
    assert answer.json["errors"] == [error]
    assert elapsed < 1.5, elapsed
    assert stack.stored(view["turnId"]) == before
