"""An MCP server's token read from Secrets Manager or SSM (moto's server) and sent on each request."""

from __future__ import annotations

import uuid
from typing import Any

import boto3

from agentturn import Agent, InMemoryChatMemory, InMemoryTurnStore, MCPServer, Runner, ScriptedChatModel, ToolMessage
from agentturn.aws.mcp_secrets import SecretHeaders
from agentturn.mcp.listing import clear_cache
from tests.scenarios.scripts import ai_calls, final_from_last_tool, reply_after_tools
from tests.support.clock import FakeClock
from tests.support.emulators import Emulator
from tests.support.mcp_server import RunningServer


def _lookup(server: MCPServer) -> Any:
    clear_cache()
    agent = Agent(
        id="a",
        instructions="",
        chat_model=ScriptedChatModel(
            reply_after_tools(ai_calls(("c1", "desk__lookup", {"ticket": "T-1"})), final_from_last_tool)
        ),
        mcp_servers=[server],
    )
    clock = FakeClock()
    done = Runner(store=InMemoryTurnStore(clock=clock), chat_memory=InMemoryChatMemory(), agents=[agent], clock=clock)
    turn = done.run(agent, f"conv-{uuid.uuid4().hex[:6]}", "look")
    return next(m.content for m in turn.messages if isinstance(m, ToolMessage))


def test_a_token_from_secrets_manager_is_sent_and_read_again_after_its_ttl(
    moto_server: Emulator, desk: RunningServer
) -> None:
    # GIVEN a secret holding the server's token, and headers read from it at most every 300 s
    client = boto3.client("secretsmanager", endpoint_url=moto_server.endpoint_url)
    name = f"mcp-token-{uuid.uuid4().hex[:8]}"
    client.create_secret(Name=name, SecretString="first-token")
    now = [0.0]
    headers = SecretHeaders(secret_id=name, client=client, clock=lambda: now[0])
    server = MCPServer(desk.url, name="desk", headers=headers)
    # WHEN a turn calls the server, THEN the token goes with each request
    assert _lookup(server)["structuredContent"] == {"ticket": "T-1", "state": "open"}
    assert desk.recorder.calls("lookup")[-1].headers["authorization"] == "Bearer first-token"
    # WHEN the secret rotates, THEN the old token is used until the TTL passes, then the new one
    client.put_secret_value(SecretId=name, SecretString="second-token")
    _lookup(server)
    assert desk.recorder.calls("lookup")[-1].headers["authorization"] == "Bearer first-token"
    now[0] = 301.0
    _lookup(server)
    assert desk.recorder.calls("lookup")[-1].headers["authorization"] == "Bearer second-token"
    assert "token" not in repr(headers).replace("mcp-token", "")


def test_a_token_from_ssm_parameter_store(moto_server: Emulator, desk: RunningServer) -> None:
    client = boto3.client("ssm", endpoint_url=moto_server.endpoint_url)
    name = f"/mcp/{uuid.uuid4().hex[:8]}/token"
    client.put_parameter(Name=name, Value="ssm-token", Type="SecureString")
    server = MCPServer(
        desk.url, name="desk", headers=SecretHeaders(parameter=name, client=client, header="X-Api-Key", prefix="")
    )
    _lookup(server)
    assert desk.recorder.calls("lookup")[-1].headers["x-api-key"] == "ssm-token"


def test_a_secret_that_cannot_be_read_is_a_tool_error_not_a_failed_turn(
    moto_server: Emulator, desk: RunningServer
) -> None:
    # GIVEN headers naming a secret that does not exist (or that the function may not read)
    client = boto3.client("secretsmanager", endpoint_url=moto_server.endpoint_url)
    server = MCPServer(desk.url, name="desk", headers=SecretHeaders(secret_id="missing", client=client))
    # WHEN a turn uses the server, THEN its tools cannot be listed and the model is told, without the secret's text
    result = _lookup(server)
    assert result["error"] == "unknown_tool"
