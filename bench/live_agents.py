"""The benchmark's agents for ``agentturn dev``: the demo agents, and ``streamer``, whose scripted model
waits ``BENCH_LIVE_FIRST_DELAY`` seconds (its time to first token) and then streams its answer 4
characters every ``BENCH_LIVE_PIECE_DELAY`` seconds."""

from __future__ import annotations

import os

from agentturn import Agent, AiMessage, ScriptedChatModel
from agentturn.demo import demo_agents

ANSWER = (
    "Here is the answer, streamed the way a model streams it: a few characters at a time, each piece "
    "published on the conversation's channel as it comes (at most ten publishes a second), rendered by the "
    "console as it arrives, and replaced by the saved reply once the turn has stored it."
)


def agents() -> list[Agent]:
    model = ScriptedChatModel(
        lambda request: AiMessage(content=ANSWER),
        chunk_chars=4,
        first_delay=float(os.environ.get("BENCH_LIVE_FIRST_DELAY", "1.0")),
        delta_delay=float(os.environ.get("BENCH_LIVE_PIECE_DELAY", "0.05")),
    )
    return [*demo_agents(), Agent(id="streamer", instructions="Answer.", chat_model=model)]
