"""Quiet jsii's Node.js version banners before ``aws_cdk`` loads (``agentturn.cdk`` imports this first)."""

from __future__ import annotations

import os
from typing import Final

#: jsii (the bridge to the CDK's JavaScript) prints a banner for a Node.js it calls end-of-life or deprecated on
#: every synth, and the Python side relays it as raw ``b'!!  Node 20 is end-of-life ...'`` lines. The Node versions
#: a team meets today (Debian 12 ships 18, Node 20 is the LTS many still run) work with this aws-cdk-lib, so the
#: banner only hides the team's own output. Set before ``aws_cdk`` loads (importing ``agentturn.cdk`` first, as
#: import sorting puts it, is enough); a variable already set wins, so a team that wants the banner sets it empty.
NODE_WARNINGS_SILENCED: Final[dict[str, str]] = {
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "18,20",
    "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "20,22",
}
for _name, _versions in NODE_WARNINGS_SILENCED.items():
    os.environ.setdefault(_name, _versions)
