"""The demo agents: the seed's scenarios played by a deterministic demo model (not an LLM)."""

from __future__ import annotations

from agentturn.demo.agents import (
    DEMO_AGENT_ID,
    MEETING_FORM,
    SUPPORT_TICKET_FORM,
    TicketLedger,
    demo_agents,
    demo_model,
)

__all__ = [
    "DEMO_AGENT_ID",
    "MEETING_FORM",
    "SUPPORT_TICKET_FORM",
    "TicketLedger",
    "demo_agents",
    "demo_model",
]
