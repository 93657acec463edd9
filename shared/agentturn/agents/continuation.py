"""Whether a later version of an agent can continue a turn an earlier one started (``Agent(continues=...)``).

A deploy replaces an agent's version while its turns wait for people, for days. The new version takes them
over only if it says so, and only where what the turn waits on is still there: every tool a pending call or
wait names, and every form the model asked for in the turn, under its key with the very schema frozen with the
question (the person answers the frozen schema; the model then reads the answer as one to the form it knows).
"""

from __future__ import annotations

from agentturn.agents.agent import Agent
from agentturn.state.messages import FormMessage
from agentturn.state.turn import Turn


def continuation_problems(agent: Agent, turn: Turn) -> list[str]:
    """Why ``agent`` cannot continue ``turn``, in words a person can act on; empty when it can."""
    tools = agent.tools
    problems: list[str] = []
    named = [call.name for call in turn.pending_tool_calls]
    named += [s.tool_name for s in turn.suspensions if s.tool_name]
    for name in dict.fromkeys(named):
        if name not in tools:
            problems.append(f"tool {name!r} is gone")
    # Forms the model asked for in this turn (its cards keep the frozen schema): the model goes on to read their
    # answers as answers to the form it knows under that key.
    asked = {
        card.form_key: card.schema
        for card in turn.cards
        if isinstance(card, FormMessage) and card.input_target == "MODEL"
    }
    for suspension in turn.suspensions:
        if suspension.input_target == "MODEL" and suspension.form_key is not None:
            asked[suspension.form_key] = suspension.schema or {}
    asking = agent.user_input_tool
    for form_key, schema in asked.items():
        form = asking.form(form_key) if asking is not None else None
        if form is None:
            problems.append(f"form {form_key!r} is gone")
        elif form.schema != schema:
            problems.append(f"form {form_key!r} has another schema than the one the person was shown")
    return problems
