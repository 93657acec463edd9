"""Capability discovery (AG-UI's ``AgentCapabilities``), served at ``GET /ag-ui/{agentId}/capabilities``.

AG-UI defines the document (``AbstractAgent.getCapabilities()``), not an HTTP route for it; ``HttpAgent`` has no
built-in fetch of it, so a client reads this route (see the README's AG-UI section). Only what is supported is
declared: absent means not declared.
"""

from __future__ import annotations

from typing import Any

from agentturn.agents.agent import Agent


def capabilities(agent: Agent) -> dict[str, Any]:
    tools = [
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
        for tool in agent.tools.values()
    ]
    policy = agent.policy
    return {
        "identity": {"name": agent.id, "type": "agentturn", "version": agent.version},
        "transport": {"streaming": True, "websocket": False, "httpBinary": False, "resumable": False},
        "tools": {"supported": True, "items": tools, "parallelCalls": True, "clientProvided": False},
        "state": {"snapshots": True, "deltas": False, "persistentState": True},
        "execution": {"maxIterations": policy.max_iterations},
        "humanInTheLoop": {
            "supported": True,
            "approvals": True,
            "interrupts": True,
            "approveWithEdits": True,
            "interventions": False,
            "feedback": False,
        },
        "custom": {
            "agentturn": {
                "durableInterrupts": True,
                "interruptReasons": ["input_required", "tool_call"],
                "respondInToolsPlace": "tool_call interrupts accept {approved: false, respond: <result>}",
                "steerAway": policy.steer_away,
            }
        },
    }
