"""Entry point of the CDK app: ``python -m infra.app`` (what ``cdk.json`` runs for ``npx cdk synth/deploy``).

Synthesises offline and without AWS credentials: the stack is environment-agnostic and nothing is looked
up in an account.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from aws_cdk import App

from infra.config import StackConfig
from infra.stack import AgentTurnStack

CDK_JSON: Final = Path(__file__).resolve().parent.parent / "cdk.json"
#: Skips every asset bundling step (``App(context={BUNDLING_STACKS: []})``), as ``cdk synth --exclusively``
#: with a stack list does: for tests that read the template but not the Lambda code.
BUNDLING_STACKS: Final = "aws:cdk:bundling-stacks"


def cdk_json_context() -> dict[str, Any]:
    """The context block of ``cdk.json`` (feature flags and defaults).

    The CLI passes it to the app itself; a direct ``python -m infra.app`` or a test does not, so the app
    reads it too. Both routes then build the same template (CLI and ``-c`` values still take precedence,
    as App gives them priority over its ``context`` argument).
    """
    document = json.loads(CDK_JSON.read_text())
    context = document.get("context", {})
    if not isinstance(context, dict):
        raise TypeError(f"{CDK_JSON}: 'context' must be an object")
    return context


def new_app(context: Mapping[str, Any] | None = None, *, outdir: str | None = None) -> App:
    merged = {**cdk_json_context(), **(context or {})}
    return App(context=merged, outdir=outdir)


def build(app: App) -> AgentTurnStack:
    config = StackConfig.from_context(app.node.try_get_context)
    # Environment-agnostic on purpose (no env=): nothing in the stack looks anything up, so the template
    # is the same offline, under the CLI (which sets CDK_DEFAULT_REGION, to us-east-1 if it knows none)
    # and in tests, and it deploys to whichever account and region the deploying credentials name.
    return AgentTurnStack(app, config.stack_name, config=config, stack_name=config.stack_name)


def main() -> None:
    app = new_app()
    build(app)
    app.synth()


if __name__ == "__main__":
    main()
