"""Synthesise the stack in-process and read what came out (shared by tests/infra and any suite that needs
to assert on the deployed configuration, e.g. the authorizer checks of the reliability suite).

Bundling is skipped unless asked for (``aws:cdk:bundling-stacks: []``): most tests read the template,
not the Lambda code, and a bundled synth copies ~40 MB per function.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Before aws_cdk starts its jsii (Node) process: no end-of-life banner on every run, no telemetry.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")

from aws_cdk.assertions import Template
from infra.app import BUNDLING_STACKS, build, new_app
from infra.stack import AgentTurnStack

from agentturn.cdk import AgentTurn

Resource = dict[str, Any]


@dataclass(frozen=True)
class Synth:
    stack: AgentTurnStack
    template: dict[str, Any]
    assertions: Template
    outdir: Path

    @property
    def system(self) -> AgentTurn:
        """The construct the stack holds (every resource is one of its attributes)."""
        return self.stack.agentturn

    @property
    def template_path(self) -> Path:
        return self.outdir / f"{self.stack.artifact_id}.template.json"

    @property
    def resources(self) -> dict[str, Resource]:
        return self.template["Resources"]  # type: ignore[no-any-return]

    def logical_id(self, construct: Any) -> str:
        """The CloudFormation logical id of an L2 construct (of its default child) or an L1."""
        child = getattr(construct.node, "default_child", None) or construct
        return str(self.stack.resolve(child.logical_id))

    def of_type(self, resource_type: str) -> dict[str, Resource]:
        return {k: v for k, v in self.resources.items() if v["Type"] == resource_type}

    def resource(self, construct: Any) -> Resource:
        return self.resources[self.logical_id(construct)]


def synthesise(outdir: Path, context: Mapping[str, Any] | None = None, *, bundle: bool = False) -> Synth:
    merged: dict[str, Any] = dict(context or {})
    if not bundle:
        merged[BUNDLING_STACKS] = []
    app = new_app(merged, outdir=str(outdir))
    stack = build(app)
    assembly = app.synth()
    template = assembly.get_stack_by_name(stack.stack_name).template
    return Synth(stack=stack, template=template, assertions=Template.from_json(template), outdir=outdir)


def file_assets(outdir: Path, stack_artifact_id: str) -> dict[str, Path]:
    """``{object key in the asset bucket: staged asset directory}`` from the stack's asset manifest."""
    manifest = json.loads((outdir / f"{stack_artifact_id}.assets.json").read_text())
    assets: dict[str, Path] = {}
    for asset in manifest.get("files", {}).values():
        for destination in asset["destinations"].values():
            assets[destination["objectKey"]] = outdir / asset["source"]["path"]
    return assets


def refs(value: Any) -> Iterator[str]:
    """Every logical id a template value refers to (Ref / Fn::GetAtt), however deeply nested."""
    if isinstance(value, dict):
        if set(value) == {"Ref"}:
            yield value["Ref"]
        elif set(value) == {"Fn::GetAtt"}:
            yield value["Fn::GetAtt"][0]
        else:
            for item in value.values():
                yield from refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from refs(item)
