"""AG-UI 1.0 (https://docs.ag-ui.com): any AG-UI frontend drives an agentturn turn.

``POST /ag-ui/{agentId}`` (and ``POST /ag-ui`` for the default agent) takes a ``RunAgentInput`` and answers a
``text/event-stream`` of AG-UI events. One concern per module:

- :mod:`.input` — parsing ``RunAgentInput``: only the newest user message is input, ``resume`` entries;
- :mod:`.events` — the AG-UI events this server sends (pydantic, camelCase on the wire);
- :mod:`.mapping` — the timeline as ``MESSAGES_SNAPSHOT`` messages, a turn's saves and model deltas as events;
- :mod:`.interrupts` — pending cards as interrupts (``input_required`` forms, ``tool_call`` approvals);
- :mod:`.resume` — ``resume[]`` checked against the live cards, then the person's decisions;
- :mod:`.encoder` — server-sent events;
- :mod:`.capabilities` — what ``GET /ag-ui/{agentId}/capabilities`` reports;
- :mod:`.session` — one AG-UI run from the verified caller's input to its last event.

Server state is the truth: the client's history is never read back as decisions or as model context.
"""

from __future__ import annotations
