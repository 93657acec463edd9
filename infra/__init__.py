"""The CDK app of agentturn: one stack with everything a deployment needs. No runtime logic lives here.

``python -m infra.app`` (or ``npx cdk synth``, which runs it) synthesises the stack offline; see
:mod:`infra.config` for the context keys that tune it.
"""

from __future__ import annotations

import os

# Set before aws_cdk starts its jsii (Node) process. The banner jsii prints on every start under Node 20
# (end of life) says nothing actionable about this app; the CLI's telemetry is off for offline synths.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
