"""The dev server's own log: one line per API request and per notable event, on stderr.

Not under the ``agentturn`` logger: Powertools' Logger in the handlers owns that one (service
"agentturn") and sets its level from ``POWERTOOLS_LOG_LEVEL``.
"""

from __future__ import annotations

import logging
import sys
from typing import Final

LOGGER_NAME: Final = "agentturn-dev"


def configure(level: int = logging.INFO) -> logging.Logger:
    logger = logging.getLogger(LOGGER_NAME)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger
