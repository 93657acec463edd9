"""The pure rules of approvals by other people: who may answer, quorum, one decision per person, the wording."""

from __future__ import annotations

import pytest

from agentturn import ExecutionPolicy, FormDefinition, ResumeCommand, ToolApprovalDecision, ToolCall, Turn, TurnStatus
from agentturn.engine.resume import apply_resume
from agentturn.engine.suspend import block, park_for_approval, park_for_form
from agentturn.errors import FormValidationError, InvalidResumeError, RefusalReason
from agentturn.state.approvers import Approvers, Principal, groups_from_claim
from agentturn.state.messages import ApprovalMessage, ApprovalStatus

NOW = 1_000.0
REQUESTER = Principal("requester", frozenset({"finance"}))
ANN = Principal("ann", frozenset({"finance"}))
BEN = Principal("ben", frozenset({"finance", "oncall"}))
OUTSIDER = Principal("eve", frozenset({"sales"}))


def _waiting(approvers: Approvers) -> Turn:
    call = ToolCall(id="a1", name="refund", arguments={"amount": 5})
    turn = Turn(
        id="t",
        conversation_id="requester/c",
        agent_id="a",
        agent_version="1",
        status=TurnStatus.RUNNING,
        metadata={"ownerId": "requester"},
    )
    turn.pending_tool_calls = [call]
    decision = ToolApprovalDecision.require_approval("refund?", approvers=approvers)
    park_for_approval(turn, call, decision, ExecutionPolicy(), NOW)
    block(turn)
    return turn


def _card(turn: Turn) -> ApprovalMessage:
    card = turn.cards[0]
    assert isinstance(card, ApprovalMessage)
    return card


QUORUM_2 = Approvers(groups=("finance",), quorum=2, exclude_requester=True)


def test_two_of_a_group_approve_and_each_decision_is_kept_as_made() -> None:
    # GIVEN a refund that waits for two of finance, the requester excluded
    turn = _waiting(QUORUM_2)
    assert _card(turn).people is not None and _card(turn).people.waiting_for == "waiting for finance (0 of 2)"
    # WHEN the first approver approves
    once = apply_resume(turn, ResumeCommand.approve_tool("a1").by(ANN), NOW)
    # THEN the turn still waits; the card shows the decision and "(1 of 2)" at its next version
    card = _card(once)
    assert once.status is TurnStatus.WAITING_FOR_APPROVAL and card.status is ApprovalStatus.PENDING
    assert card.people is not None and card.people.waiting_for == "waiting for finance (1 of 2)"
    assert [(d.subject, d.groups, d.verdict) for d in card.people.decisions] == [("ann", ["finance"], "approve")]
    assert card.version == _card(turn).version + 1
    # WHEN a second, different person approves THEN the call is approved and the turn runs
    twice = apply_resume(once, ResumeCommand.approve_tool("a1").by(BEN), NOW)
    card = _card(twice)
    assert twice.status is TurnStatus.RUNNING and card.status is ApprovalStatus.APPROVED
    assert card.people is not None and [d.subject for d in card.people.decisions] == ["ann", "ben"]
    assert card.decided_by == "ben" and twice.tool_state("a1").approved


def test_the_same_person_twice_is_refused_and_changes_nothing() -> None:
    once = apply_resume(_waiting(QUORUM_2), ResumeCommand.approve_tool("a1").by(ANN), NOW)
    before = once.to_wire()
    with pytest.raises(InvalidResumeError) as refused:
        apply_resume(once, ResumeCommand.approve_tool("a1").by(ANN), NOW)
    assert refused.value.reason is RefusalReason.ALREADY_DECIDED
    assert once.to_wire() == before


@pytest.mark.parametrize(
    "who",
    [REQUESTER, OUTSIDER, None],
    ids=["requester-excluded", "outsider", "nobody-named"],
)
def test_who_may_not_answer_is_told_the_action_does_not_exist(who: Principal | None) -> None:
    turn = _waiting(QUORUM_2)
    command = ResumeCommand.approve_tool("a1")
    if who is not None:
        command = command.by(who)
    with pytest.raises(InvalidResumeError) as refused:
        apply_resume(turn, command, NOW)
    # THEN the refusal reads like an unknown action's, and its reason lets the HTTP layer answer the same 404
    assert refused.value.reason is RefusalReason.NOT_PERMITTED
    assert str(refused.value) == "turn 't' has no action 'a1'"


def test_a_forged_group_in_the_metadata_is_only_what_the_caller_passed() -> None:
    # The library trusts its caller's Principal; the entry points build it from the verified token only
    # (tests/functional/test_people.py proves the HTTP side). A subject named as a user needs no group.
    turn = _waiting(Approvers(users=("ann",)))
    done = apply_resume(turn, ResumeCommand.approve_tool("a1").by(Principal("ann")), NOW)
    assert _card(done).status is ApprovalStatus.APPROVED


def test_one_rejection_rejects_unless_the_wait_asks_for_more() -> None:
    turn = _waiting(QUORUM_2)
    rejected = apply_resume(turn, ResumeCommand.reject_tool("a1", "no").by(ANN), NOW)
    assert _card(rejected).status is ApprovalStatus.REJECTED and rejected.status is TurnStatus.RUNNING
    two_needed = _waiting(Approvers(groups=("finance",), quorum=2, rejections=2))
    held = apply_resume(two_needed, ResumeCommand.reject_tool("a1", "no").by(ANN), NOW)
    assert _card(held).status is ApprovalStatus.PENDING
    assert _card(apply_resume(held, ResumeCommand.reject_tool("a1").by(BEN), NOW)).status is ApprovalStatus.REJECTED


def test_a_quorum_refuses_edits_and_answers_in_the_tools_place() -> None:
    turn = _waiting(QUORUM_2)
    with pytest.raises(FormValidationError) as edited:
        apply_resume(turn, ResumeCommand.approve_tool("a1", {"amount": 500}).by(ANN), NOW)
    assert edited.value.errors[0]["path"] == "/arguments"
    with pytest.raises(InvalidResumeError) as responded:
        apply_resume(turn, ResumeCommand.respond("a1", "done").by(ANN), NOW)
    assert responded.value.reason is RefusalReason.WRONG_COMMAND


def test_a_form_with_approvers_is_filled_in_by_one_of_them() -> None:
    form = FormDefinition(
        "shift",
        "who is on shift",
        {"type": "object", "properties": {"name": {"type": "string"}}},
        approvers=Approvers(groups=("oncall",)),
    )
    call = ToolCall(id="f1", name="handover", arguments={})
    turn = Turn(id="t", conversation_id="requester/c", agent_id="a", agent_version="1", status=TurnStatus.RUNNING)
    turn.pending_tool_calls = [call]
    park_for_form(turn, call, form, "TOOL", ExecutionPolicy(), NOW)
    block(turn)
    with pytest.raises(InvalidResumeError):
        apply_resume(turn, ResumeCommand.submit_form("f1", {"name": "x"}).by(ANN), NOW)
    done = apply_resume(turn, ResumeCommand.submit_form("f1", {"name": "x"}).by(BEN), NOW)
    assert done.status is TurnStatus.RUNNING
    with pytest.raises(ValueError, match="one person"):
        FormDefinition("f", "d", {"type": "object"}, approvers=Approvers(users=("a", "b"), quorum=2))


@pytest.mark.parametrize(
    ("claim", "groups"),
    [
        ("[finance oncall]", {"finance", "oncall"}),
        ("[finance]", {"finance"}),
        ("[]", set()),
        ('["finance","oncall"]', {"finance", "oncall"}),
        ("finance", {"finance"}),
        (["finance", "oncall"], {"finance", "oncall"}),
        (None, set()),
        (42, set()),
    ],
)
def test_the_group_claim_in_every_form_an_authorizer_hands_it_over(claim: object, groups: set[str]) -> None:
    assert groups_from_claim(claim) == groups


def test_approvers_refuse_what_cannot_be_met() -> None:
    with pytest.raises(ValueError, match="at least one user or group"):
        Approvers()
    with pytest.raises(ValueError, match="more than the 1 users"):
        Approvers(users=("a",), quorum=2)
    with pytest.raises(ValueError, match="must be >= 1"):
        Approvers(groups=("finance",), quorum=0)


def test_a_reminder_and_an_escalation_are_refused_when_they_cannot_happen() -> None:
    # GIVEN approvers with a reminder or an escalation that is not positive, or an escalation to nobody
    # WHEN they are built THEN each is refused, naming the field
    with pytest.raises(ValueError, match="remind_after must be > 0"):
        Approvers(groups=("finance",), remind_after=0)
    with pytest.raises(ValueError, match="escalate_after must be > 0"):
        Approvers(groups=("finance",), escalate_after=-1, escalate_to="managers")
    with pytest.raises(ValueError, match="escalate_after and Approvers\\.escalate_to go together"):
        Approvers(groups=("finance",), escalate_after=60)
    with pytest.raises(ValueError, match="escalate_after and Approvers\\.escalate_to go together"):
        Approvers(groups=("finance",), escalate_to="managers")
    with pytest.raises(ValueError, match="not a usable group name"):
        Approvers(groups=("finance",), escalate_after=60, escalate_to=" managers")


def test_an_escalation_keeps_the_rules_and_names_the_new_group_alone() -> None:
    # GIVEN two of finance, requester excluded, escalating to managers
    approvers = Approvers(
        groups=("finance",), users=("ann",), quorum=2, exclude_requester=True, escalate_after=60, escalate_to="managers"
    )
    # WHEN it escalates THEN managers alone answer, with the same quorum and exclusion, and nothing further is due
    moved = approvers.escalated()
    assert moved == Approvers(groups=("managers",), quorum=2, exclude_requester=True)
    assert moved.inbox_keys() == ["g#managers"]
