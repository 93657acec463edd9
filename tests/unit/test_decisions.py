"""The pure rules of several pending decisions: parking, blocking, answering one of several, fingerprints."""

from __future__ import annotations

import hashlib
import json

import pytest

from agentturn import ExecutionPolicy, FormDefinition, ResumeCommand, ToolApprovalDecision, ToolCall, Turn, TurnStatus
from agentturn.engine.resume import apply_resume, expire_wait
from agentturn.engine.suspend import block, next_runnable_call, park_for_approval, park_for_form
from agentturn.errors import InvalidResumeError, RefusalReason
from agentturn.ports.store import wait_deadline
from agentturn.state.turn import arguments_fingerprint

NOW = 1_000.0
FORM = FormDefinition(
    "address",
    "where to ship",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
PARAMETERS = {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}


def _turn(*calls: ToolCall) -> Turn:
    turn = Turn(id="t", conversation_id="c", agent_id="a", agent_version="1", status=TurnStatus.RUNNING)
    turn.pending_tool_calls = list(calls)
    return turn


def _waiting(policy: ExecutionPolicy | None = None) -> Turn:
    """A turn parked on an approval and a tool's form, with a free call between them already run."""
    approval = ToolCall(id="a1", name="refund", arguments={"amount": 5})
    form = ToolCall(id="f1", name="ship", arguments={})
    turn = _turn(approval, form)
    policy = policy or ExecutionPolicy()
    park_for_approval(turn, approval, ToolApprovalDecision.require_approval("ok?"), policy, NOW, PARAMETERS)
    park_for_form(turn, form, FORM, "TOOL", policy, NOW)
    block(turn)
    return turn


def test_parked_calls_are_skipped_and_block_gives_every_wait_its_card_at_once() -> None:
    # GIVEN three pending calls, the first two parked
    calls = [ToolCall(id=f"c{n}", name="t", arguments={}) for n in range(3)]
    turn = _turn(*calls)
    park_for_approval(turn, calls[0], ToolApprovalDecision.require_approval(), ExecutionPolicy(), NOW)
    park_for_form(turn, calls[1], FORM, "MODEL", ExecutionPolicy(), NOW)
    # WHEN the next call is chosen THEN it is the first one that needs nobody; no card exists yet
    assert next_runnable_call(turn) == calls[2]
    assert turn.cards == [] and turn.status is TurnStatus.RUNNING
    # WHEN the turn blocks THEN both waits get their cards, in order, and the status is the first's
    block(turn)
    assert [(c.type, c.action_id) for c in turn.cards] == [("agent_approval", "c0"), ("agent_form", "c1")]
    assert turn.status is TurnStatus.WAITING_FOR_APPROVAL
    # AND blocking again adds no second card
    block(turn)
    assert len(turn.cards) == 2


def test_answering_one_of_several_keeps_the_turn_waiting_and_leaves_the_original_alone() -> None:
    # GIVEN a turn waiting on an approval and a form
    turn = _waiting()
    # WHEN the approval is answered
    after = apply_resume(turn, ResumeCommand.approve_tool("a1"), NOW)
    # THEN the copy waits on the form alone (its status now the form's); the original is unchanged
    assert [s.action_id for s in after.suspensions] == ["f1"]
    assert after.status is TurnStatus.WAITING_FOR_USER
    assert [s.action_id for s in turn.suspensions] == ["a1", "f1"]
    # WHEN the form is answered as well THEN the turn runs
    done = apply_resume(after, ResumeCommand.submit_form("f1", {"city": "Oslo"}), NOW)
    assert done.status is TurnStatus.RUNNING and done.suspensions == []


def test_resume_after_each_runs_only_when_the_answer_left_something_to_run() -> None:
    # GIVEN a turn waiting on two decisions under resume_after="each"
    turn = _waiting(ExecutionPolicy(resume_after="each"))
    # WHEN the approval is given THEN the approved call can run now: the turn runs
    assert apply_resume(turn, ResumeCommand.approve_tool("a1"), NOW).status is TurnStatus.RUNNING
    # WHEN it is rejected instead THEN nothing is left to run: the turn keeps waiting on the form
    assert apply_resume(turn, ResumeCommand.reject_tool("a1"), NOW).status is TurnStatus.WAITING_FOR_USER


def test_the_earliest_wait_is_the_turns_deadline_and_each_expired_wait_closes() -> None:
    # GIVEN two waits with different deadlines
    turn = _waiting(ExecutionPolicy(input_timeout=60))
    turn.suspensions[1].expires_at = NOW + 120
    # THEN the sweeper's index keys on the earliest
    assert wait_deadline(turn) == NOW + 60
    # WHEN only the first has expired THEN it alone closes, and the turn waits on the other
    expired = expire_wait(turn, NOW + 90)
    assert [s.action_id for s in expired.suspensions] == ["f1"]
    assert expired.status is TurnStatus.WAITING_FOR_USER
    assert [c.status.value for c in expired.cards] == ["EXPIRED", "PENDING"]


def test_the_fingerprint_is_sha256_of_canonical_json_as_a_client_computes_it() -> None:
    # GIVEN arguments with keys out of order and non-ASCII text
    arguments = {"b": [1, 2], "a": "Zürich"}
    # THEN the fingerprint is that of the sorted, space-free UTF-8 JSON, whatever the key order
    canonical = '{"a":"Zürich","b":[1,2]}'.encode()
    assert arguments_fingerprint(arguments) == hashlib.sha256(canonical).hexdigest()
    assert arguments_fingerprint({"a": "Zürich", "b": [1, 2]}) == arguments_fingerprint(arguments)


def test_a_wrong_fingerprint_is_refused_before_anything_changes() -> None:
    # GIVEN a turn waiting on an approval
    turn = _waiting()
    before = turn.model_dump(mode="json")
    # WHEN approved, rejected or answered for other arguments THEN each is refused, the turn unchanged
    for command in (
        ResumeCommand.approve_tool("a1", arguments_fingerprint="f" * 64),
        ResumeCommand.approve_tool("a1", {"amount": 1}, arguments_fingerprint="f" * 64),
    ):
        with pytest.raises(InvalidResumeError) as refused:
            apply_resume(turn, command, NOW)
        assert refused.value.reason is RefusalReason.ARGUMENTS_CHANGED
    assert turn.model_dump(mode="json") == before


def test_an_edit_identical_to_the_shown_arguments_is_a_plain_approval() -> None:
    # GIVEN a turn waiting on an approval WHEN it is "edited" to the same arguments
    after = apply_resume(_waiting(), ResumeCommand.approve_tool("a1", {"amount": 5}), NOW)
    # THEN nothing is marked as edited
    assert after.tool_states["a1"].edited_arguments is None
    assert after.cards[0].edited_arguments is None  # type: ignore[union-attr]


def test_request_fingerprints_of_the_earlier_answers_are_unchanged() -> None:
    # GIVEN answers of the kinds that existed before edits (their fingerprints are stored in accepted requests)
    command = ResumeCommand.approve_tool("a1")
    body = {"kind": "APPROVE_TOOL", "actionId": "a1", "content": None, "data": None, "reason": None}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # THEN a retry after this deployment still matches the first attempt's fingerprint
    assert command.fingerprint() == hashlib.sha256(canonical.encode()).hexdigest()
    # AND an edit is another request
    assert ResumeCommand.approve_tool("a1", {"amount": 1}).fingerprint() != command.fingerprint()


def test_a_turn_copy_is_equal_and_shares_nothing_mutable() -> None:
    # GIVEN a turn waiting on an approval and a form (frozen schema, arguments, cards, metadata)
    turn = _waiting()
    turn.metadata["nested"] = {"list": [1, {"deep": True}]}
    before = turn.model_dump_json(by_alias=True)

    # WHEN it is copied and every mutable part of the copy is changed
    copied = turn.deep_copy()
    assert copied == turn and copied.model_dump_json(by_alias=True) == before
    copied.metadata["nested"]["list"][1]["deep"] = False
    copied.suspensions[1].metadata["schema"]["properties"]["city"]["type"] = "number"
    copied.suspensions[0].metadata["arguments"]["amount"] = 6
    copied.pending_tool_calls[0].arguments["amount"] = 7
    copied.cards[0].status = copied.cards[1].status
    copied.tool_state("a1").form_requested = True

    # THEN the original is exactly as it was
    assert turn.model_dump_json(by_alias=True) == before
