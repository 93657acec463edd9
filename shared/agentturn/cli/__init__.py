"""``agentturn`` command line: ``agentturn dev`` runs the whole system locally with the browser console;
``agentturn demo`` plays a seed scenario in the terminal."""

from __future__ import annotations

import argparse
import errno
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from agentturn.engine.runner import Runner
from agentturn.engine.worker import Worker
from agentturn.errors import FormValidationError
from agentturn.ports.chat_model import ChatModel
from agentturn.ports.memory import InMemoryChatMemory
from agentturn.state.commands import ResumeCommand
from agentturn.state.messages import AiMessage, ApprovalMessage, FormMessage, ToolMessage, UserMessage
from agentturn.state.turn import SuspensionType, Turn

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


def play(
    scenario: str, ask: Prompt | None = None, out: TextIO | None = None, *, chat_model: ChatModel | None = None
) -> Turn:
    """Run one scenario: the turn suspends, the person answers at the prompt, a worker resumes it.

    ``chat_model``: the model the agents run on (``None``: the deterministic demo model).
    """
    ask = ask or input
    out = out or sys.stdout
    from agentturn.demo import demo_agents

    agent_id, text = SCENARIOS[scenario]
    memory = InMemoryChatMemory()
    agents = {agent.id: agent for agent in demo_agents(chat_model=chat_model)}
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
            command = ResumeCommand.submit_form(suspension.action_id, data)
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


def _add_dev_parser(commands: Any) -> None:
    from agentturn.local.server import DEFAULT_PORT, DEFAULT_USER

    dev = commands.add_parser(
        "dev",
        help="run the Lambda handlers on an embedded AWS emulator, with the browser console",
        description="Serves the console and the HTTP API on 127.0.0.1, with moto as DynamoDB/SQS/S3, a worker "
        "loop on the resume queue and the sweeper on a timer. Ctrl-C stops it.",
    )
    dev.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free)"
    )
    dev.add_argument(
        "--persist",
        metavar="DIR",
        type=Path,
        help="keep tables and snapshots in DIR/state.json across restarts (default: in memory only)",
    )
    dev.add_argument("--user", default=DEFAULT_USER, help=f"the default dev user (default {DEFAULT_USER!r})")
    dev.add_argument("--quiet", action="store_true", help="do not log each API request")
    dev.add_argument(
        "--agents",
        metavar="MODULE:FUNCTION",
        help="serve the agents this function returns (default: $AGENTTURN_AGENTS, else the demo agents)",
    )
    dev.add_argument(
        "--events-port",
        type=int,
        default=None,
        metavar="PORT",
        help="the live timeline over TLS (self-signed) for AWS Amplify's Events client, whose API.Events.endpoint "
        "is then https://127.0.0.1:PORT/event (default: the port after --port; 0: any free; -1: off)",
    )
    dev.add_argument(
        "--code",
        metavar="PATH",
        type=Path,
        action="append",
        default=[],
        help="your code, importable as in the deployed bundle (AgentTurn's code=...; repeatable; the "
        "current folder is always importable)",
    )


def _dev(args: argparse.Namespace) -> int:
    from agentturn.api.agents import AgentLoadError
    from agentturn.local.functions import FunctionsNotFoundError
    from agentturn.local.gateway import DEV_USER_PATTERN
    from agentturn.local.server import DevConfig, serve

    if not DEV_USER_PATTERN.match(args.user):
        sys.stderr.write("agentturn dev: --user must be 1-64 letters, digits, '.', '_', '@' or '-'\n")
        return 2
    if not 0 <= args.port <= 65535:
        sys.stderr.write("agentturn dev: --port must be within 0..65535\n")
        return 2
    if args.events_port is not None and not -1 <= args.events_port <= 65535:
        sys.stderr.write("agentturn dev: --events-port must be within 0..65535, or -1 (off)\n")
        return 2
    missing = [str(path) for path in args.code if not path.exists()]
    if missing:
        sys.stderr.write(f"agentturn dev: --code {', '.join(missing)} does not exist\n")
        return 2
    config = DevConfig(
        port=args.port,
        user=args.user,
        persist=args.persist,
        log_requests=not args.quiet,
        agents=args.agents,
        code=tuple(args.code),
        events_port=args.events_port,
    )
    try:
        return serve(config)
    except (FunctionsNotFoundError, AgentLoadError) as exc:
        sys.stderr.write(f"agentturn dev: {exc}\n")
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] not in ("moto", "boto3", "botocore", "aws_lambda_powertools"):
            raise
        sys.stderr.write(f"agentturn dev: {exc.name} is not installed; python -m pip install -e '.[local]'\n")
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            sys.stderr.write(f"agentturn dev: cannot listen on 127.0.0.1:{args.port} ({exc.strerror}); try --port\n")
        else:
            raise
    return 1


def _init(args: argparse.Namespace) -> int:
    from agentturn.cli.scaffold import ProjectNames, ScaffoldError, init_project, next_steps

    try:
        names = ProjectNames.from_name(args.name or args.directory.resolve().name)
        written = init_project(args.directory, name=args.name)
    except ScaffoldError as exc:
        sys.stderr.write(f"agentturn init: {exc}\n")
        return 2
    steps = "".join(f"  {step}\n" for step in [f"cd {args.directory}", *next_steps(names)])
    sys.stdout.write(
        f"wrote {len(written)} files to {args.directory}/ (package {names.package}). Next, in this Python "
        "environment (it has agentturn, which the project needs and no package index has):\n" + steps
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentturn", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo", help="play a seed scenario in the terminal (the demo model, or the one AGENTTURN_MODEL chooses)"
    )
    demo.add_argument("scenario", nargs="?", choices=sorted(SCENARIOS), default="support")
    _add_dev_parser(commands)
    init = commands.add_parser(
        "init",
        help="write a project of your own: agents, tools, tests and a CDK app on agentturn",
        description="Scaffolds DIR (created; it must be empty) with an agent whose tool asks for a form, a tool "
        "that needs approval, scenario tests on a scripted model, and a CDK app with the AgentTurn construct.",
    )
    init.add_argument("directory", type=Path, metavar="DIR")
    init.add_argument("--name", help="the project's name (default: DIR's name)")
    args = parser.parse_args(argv)
    if args.command == "init":
        return _init(args)
    if args.command == "dev":
        return _dev(args)
    if args.command == "demo":
        from agentturn.models import chat_model_from_env

        try:
            # The model AGENTTURN_MODEL chooses (README "Models"), as the deployed functions do.
            model = chat_model_from_env()
        except ValueError as exc:
            sys.stderr.write(f"agentturn demo: {exc}\n")
            return 2
        try:
            turn = play(args.scenario, chat_model=model)
        except (EOFError, KeyboardInterrupt):
            return 130
        return 0 if turn.status.value == "COMPLETED" else 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
