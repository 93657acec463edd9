"""Chat model adapters that need no AWS SDK, and the choice of a model from the environment.

Names are imported lazily: ``import agentturn.models`` costs nothing until an adapter is used. The Bedrock
adapter lives in :mod:`agentturn.aws.bedrock` (it needs boto3).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentturn.models.openai_compat import OpenAICompatibleModel
    from agentturn.models.select import chat_model_from_env

_EXPORTS = {
    "OpenAICompatibleModel": "agentturn.models.openai_compat",
    "chat_model_from_env": "agentturn.models.select",
}

__all__ = ["OpenAICompatibleModel", "chat_model_from_env"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentturn.models' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
