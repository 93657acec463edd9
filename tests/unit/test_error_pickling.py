"""Every public error survives ``pickle`` (a process pool, a multiprocessing test) with equal attributes."""

from __future__ import annotations

import inspect
import pickle

import pytest

from agentturn import errors
from agentturn.agents.typed_tools import ToolArgumentsError
from agentturn.api.problems import ProblemError
from agentturn.api.settings import SettingsError
from agentturn.aws.chat_memory import TimelineWriteError
from agentturn.aws.resume_queue import InvalidResumeMessageError
from agentturn.aws.retention import RetentionError
from agentturn.forms.ecma_regex import PatternError
from agentturn.forms.schema_rules import SchemaRefusedError

EXAMPLES: list[BaseException] = [
    errors.AgentTurnError("something went wrong"),
    errors.StorageError("TurnStore.load failed: AccessDenied: no", code="AccessDenied"),
    errors.StorageUnavailableError("throttled", code="ThrottlingException"),
    errors.BodyTooLargeError("snapshot of turn 't' is 500000 bytes compressed"),
    errors.BodyMissingError("the S3 body 'k' is gone", key="turns/t/1-ab.json.gz"),
    errors.TurnNotFoundError("t-1"),
    errors.VersionConflictError("t-1", 3, 4),
    errors.LeaseLostError("t-1", "lease-9"),
    errors.HandoffLostError("t-1", 4),
    errors.SnapshotUnreadableError(
        "t-1", "zlib.error: bad", status="RUNNING", version=4, conversation_id="c", attempts=2, not_before=9.5
    ),
    errors.SnapshotRoundTripError("t-1", "tool_states"),
    errors.InvalidResumeError("turn 't' is COMPLETED", reason="turn_terminal"),
    errors.FormValidationError([{"path": "/amount", "message": "must be a number"}]),
    errors.ToolArgumentsInvalidError("issue_refund", [{"path": "/amount", "message": "must be a number"}]),
    errors.ConversationBusyError("c-1", "t-2"),
    errors.UnknownAgentError("support", "3"),
    errors.AgentChangedError("support", "1", "2", ["tool 'refund' is gone"]),
    errors.AnswersQueuedError("t-1", ["an answer"]),
    errors.ToolProtocolError("raised FormRequired again", tool="refund", action_id="a-1"),
    errors.IdempotencyConflictError("t-1", "req-1"),
    errors.ModelError(
        "slow down",
        kind=errors.ModelErrorKind.THROTTLED,
        provider="bedrock",
        model="m",
        status=429,
        code="ThrottlingException",
        retryable=True,
        retry_after=2.0,
    ),
    TimelineWriteError("3 timeline entries were still unprocessed"),
    RetentionError("could not delete 2 objects"),
    InvalidResumeMessageError("not json", "{oops", [{"path": "$", "message": "bad"}]),
    ToolArgumentsError("refund", [{"path": "/amount", "message": "required"}]),
    PatternError("(?<=a)", "lookbehind"),
    SchemaRefusedError("/properties/x", "unsupported keyword"),
    SettingsError("AGENTTURN_TABLE is not set"),
    ProblemError(409, "turn-terminal", "Turn already finished", "turn 't' is COMPLETED", headers={"Retry-After": "1"}),
]


def test_every_error_class_of_agentturn_errors_has_an_example() -> None:
    # GIVEN the error classes agentturn.errors defines / WHEN compared with the examples below
    # THEN none is left out (a new error gets a pickling check by being added here)
    defined = {
        value
        for value in vars(errors).values()
        if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == errors.__name__
    }
    assert defined - {type(e) for e in EXAMPLES} == set()


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: type(e).__name__)
def test_an_error_survives_pickling_with_equal_attributes(error: BaseException) -> None:
    # GIVEN an error as it is raised
    # WHEN it is pickled and unpickled
    copy = pickle.loads(pickle.dumps(error))

    # THEN it is the same type with the same message, args and attributes
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert copy.args == error.args
    assert vars(copy) == vars(error)


def test_a_refusal_reason_is_an_enum_that_still_compares_with_its_text() -> None:
    # GIVEN a refusal made with the reason's text
    refused = errors.InvalidResumeError("late", reason="input_expired")

    # THEN its reason is the enum member, equal to the text existing code compares with
    assert refused.reason is errors.RefusalReason.INPUT_EXPIRED
    assert refused.reason == "input_expired"
    assert f"{refused.reason}" == "input_expired"

    # WHEN a reason that is no member is given, THEN it is refused at once
    with pytest.raises(ValueError, match="no_such_reason"):
        errors.InvalidResumeError("?", reason="no_such_reason")
