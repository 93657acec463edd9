"""Turns and timeline entries as the Runner makes them, for tests of stores, memories and adapters."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from agentturn.engine.clock import iso
from agentturn.state.messages import AiMessage, FormMessage, FormStatus, ToolCall, UserMessage
from agentturn.state.turn import Suspension, SuspensionType, Turn, TurnStatus
from agentturn.timeline.identity import stamp

T = TypeVar("T")

#: When every built turn was created (the default start of :class:`~agentturn.testing.FakeClock`).
CREATED_AT = 1_800_000_000.0


def unique(prefix: str) -> str:
    """``prefix`` and 12 random hex digits: a name no other test (or test run) uses."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def new_conversation_id() -> str:
    return unique("conversation")


def new_turn(*, conversation_id: str | None = None, status: TurnStatus = TurnStatus.READY, text: str = "hello") -> Turn:
    """A fresh turn as the Runner makes one: READY, the user's message stamped, nothing stored yet."""
    turn = Turn(
        id=uuid.uuid4().hex,
        conversation_id=conversation_id or new_conversation_id(),
        agent_id="agent",
        agent_version="1",
        status=status,
        input=text,
        created_at=iso(CREATED_AT),
        updated_at=iso(CREATED_AT),
    )
    turn.messages.append(stamp(turn, UserMessage(content=text)))
    return turn


def advanced(turn: Turn, status: TurnStatus, text: str = "step") -> Turn:
    """A copy of ``turn`` one step further, as the Runner would save it."""
    moved = turn.model_copy(deep=True)
    moved.status = status
    moved.messages.append(stamp(moved, AiMessage(content=text)))
    return moved


def waiting_until(turn: Turn, deadline: float | None) -> Turn:
    """``turn`` blocked on a form whose answer is due by ``deadline`` (epoch seconds; None: no deadline)."""
    blocked = advanced(turn, TurnStatus.WAITING_FOR_USER)
    blocked.suspension = Suspension(
        type=SuspensionType.USER_INPUT,
        correlation_id="call-1",
        metadata={"formKey": "support_ticket_details", "schema": {"type": "object"}},
        expires_at=deadline,
    )
    return blocked


def user(index: int, *, turn: str = "turn-1") -> UserMessage:
    """The user's message number ``index`` of ``turn``, with its timeline identity."""
    return UserMessage(
        message_id=f"{turn}:m:{index:05d}", turn_id=turn, sort_key=f"2026#{turn}#{index:05d}", content=f"u{index}"
    )


def ai(index: int, *, turn: str = "turn-1", call: str | None = None) -> AiMessage:
    """The model's message number ``index`` of ``turn`` (calling the ticket tool as ``call``, if given)."""
    calls = [ToolCall(id=call, name="create_support_ticket", arguments={"title": "登录故障"})] if call else []
    return AiMessage(
        message_id=f"{turn}:m:{index:05d}",
        turn_id=turn,
        sort_key=f"2026#{turn}#{index:05d}",
        content=f"a{index}",
        tool_calls=calls,
    )


def form(after_index: int, *, turn: str = "turn-1", call: str = "call-1", version: int = 1) -> FormMessage:
    """A pending form card placed after message ``after_index`` of ``turn``."""
    return FormMessage(
        message_id=f"{turn}:input:{call}",
        turn_id=turn,
        sort_key=f"2026#{turn}#{after_index:05d}.00",
        action_id=call,
        form_key="support_ticket_details",
        schema={"type": "object", "properties": {"affectedSystem": {"type": "string"}}},
        version=version,
    )


def submitted(card: FormMessage) -> FormMessage:
    """``card`` as a person's submit leaves it (the next version)."""
    return card.model_copy(
        update={
            "status": FormStatus.SUBMITTED,
            "actions": [],
            "submitted_values": {"affectedSystem": "统一登录系统"},
            "submitted_by": "user-1",
            "version": card.version + 1,
        }
    )


def race(count: int, action: Callable[[int], T]) -> list[T]:
    """Run ``action(i)`` in ``count`` threads released at the same moment; their results in order."""
    barrier = threading.Barrier(count, timeout=30)

    def contender(index: int) -> T:
        barrier.wait()
        return action(index)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(contender, range(count)))
