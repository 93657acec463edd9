"""``python -m agentturn.cdk prefetch``: fill the Lambda dependency cache (see :mod:`agentturn.cdk.bundling`)."""

from __future__ import annotations

from agentturn.cdk.bundling import main

if __name__ == "__main__":
    raise SystemExit(main())
