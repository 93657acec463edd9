"""``agentturn`` command line: ``agentturn demo`` plays a seed scenario in the terminal."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from agentturn.commands import ResumeCommand
from agentturn.errors import FormValidationError
from agentturn.memory import InMemoryChatMemory
from agentturn.messages import AiMessage, ApprovalMessage, FormMessage, ToolMessage, UserMessage
from agentturn.runner import Runner
from agentturn.state import SuspensionType, Turn
from agentturn.worker import Worker

SCENARIOS = {
    "support": ("support-agent", "帮我创建一个高优先级的登录故障工单 (create a high priority login incident ticket)"),
    "meeting": ("meeting-agent", "帮我预定一个会议室 (book a meeting room)"),
    "refund": ("refund-agent", "please refund order O-1001"),
}

Prompt = Callable[[str], str]


def _coerce(value: str, field: dict[str, Any]) -> Any:
    kind = field.get("type")
    if value == "":
        return None
    if kind == "integer":
        return int(value)
    if kind == "number":
        return float(value)
    if kind == "boolean":
        return value.strip().lower() in ("y", "yes", "true", "1", "是")
    return value


def _ask_form(schema: dict[str, Any], ask: Prompt, out: TextIO) -> dict[str, Any]:
    required = set(schema.get("required", []))
    data: dict[str, Any] = {}
    out.write(f"\n== {schema.get('title', 'Form')} ==\n")
    for name, field in schema.get("properties", {}).items():
        label = field.get("title", name) + (" *" if name in required else "")
        options = field.get("enum")
        hint = f" [{'/'.join(map(str, options))}]" if options else ""
        while True:
            raw = ask(f"{label}{hint}: ")
            try:
                value = _coerce(raw.strip(), field)
            except ValueError:
                out.write(f"  expected {field.get('type')}; try again\n")
                continue
            break
        if value is not None:
            data[name] = value
    return data


def _show(turn: Turn, memory: InMemoryChatMemory, out: TextIO, seen: set[str]) -> None:
    for message in memory(turn.conversation_id).get_messages():
        if message.message_id in seen and not isinstance(message, FormMessage | ApprovalMessage):
            continue
        seen.add(message.message_id)
        if isinstance(message, UserMessage):
            out.write(f"user  > {message.content}\n")
        elif isinstance(message, AiMessage):
            for call in message.tool_calls:
                out.write(f"model > calls {call.name}({json.dumps(call.arguments, ensure_ascii=False)})\n")
            if message.content:
                out.write(f"model > {message.content}\n")
        elif isinstance(message, ToolMessage):
            out.write(f"tool  < {message.tool_name}: {json.dumps(message.content, ensure_ascii=False)}\n")


def play(scenario: str, ask: Prompt | None = None, out: TextIO | None = None) -> Turn:
    """Run one scenario: the turn suspends, the person answers at the prompt, a worker resumes it."""
    ask = ask or input
    out = out or sys.stdout
    from agentturn.demo import demo_agents

    agent_id, text = SCENARIOS[scenario]
    memory = InMemoryChatMemory()
    agents = {agent.id: agent for agent in demo_agents()}
    runner = Runner(chat_memory=memory, agents=list(agents.values()))
    worker = Worker(runner)
    seen: set[str] = set()
    turn = runner.run(agents[agent_id], f"demo-{scenario}", text)
    while True:
        _show(turn, memory, out, seen)
        suspension = turn.suspension
        if turn.status.is_terminal or suspension is None:
            break
        out.write(f"\n[turn {turn.id[:8]}… {turn.status.value}, phase {turn.phase.value}]\n")
        if suspension.type is SuspensionType.TOOL_APPROVAL:
            out.write(f"approval needed: {suspension.message}\n")
            answer = ask("approve? [y/N]: ").strip().lower()
            if answer in ("y", "yes"):
                command = ResumeCommand.approve_tool(suspension.correlation_id)
            else:
                command = ResumeCommand.reject_tool(suspension.correlation_id, ask("reason: ") or None)
        else:
            data = _ask_form(suspension.metadata["schema"], ask, out)
            command = ResumeCommand.user_input(suspension.correlation_id, data)
        try:
            runner.submit_resume(turn.id, command.with_metadata("submittedBy", "terminal-user"))
        except FormValidationError as exc:
            for problem in exc.errors:
                out.write(f"  {problem['path'] or '(form)'}: {problem['message']}\n")
            continue
        result = worker.process(turn.id)
        assert result.turn is not None
        turn = result.turn
    out.write(f"\n[turn {turn.id[:8]}… {turn.status.value}]\n")
    return turn


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentturn", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="play a seed scenario in the terminal (deterministic demo model)")
    demo.add_argument("scenario", nargs="?", choices=sorted(SCENARIOS), default="support")
    args = parser.parse_args(argv)
    if args.command == "demo":
        try:
            turn = play(args.scenario)
        except (EOFError, KeyboardInterrupt):
            return 130
        return 0 if turn.status.value == "COMPLETED" else 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
