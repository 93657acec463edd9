"""The deployed entry points: the HTTP API (run and submit Lambdas), the SQS worker and the sweeper.

``functions/*/app.py`` are thin Lambda handlers around these modules, and the local dev server calls the
same code. Nothing is imported here: each Lambda imports only the module it needs (import time is a
cold-start cost), and the wiring to AWS happens on the first invocation, not at import.
"""

from __future__ import annotations
