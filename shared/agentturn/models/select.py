"""Which chat model to run on, from environment variables.

=============================  =====================================================================
``AGENTTURN_MODEL``            ``demo`` (default), ``bedrock`` or ``openai``
``AGENTTURN_BEDROCK_MODEL_ID`` Bedrock model id or inference profile (required for ``bedrock``)
``AWS_REGION``                 Bedrock's region (else ``AWS_DEFAULT_REGION``, else boto3's own lookup)
``AGENTTURN_OPENAI_BASE_URL``  API root of an OpenAI-compatible endpoint (default OpenAI's)
``AGENTTURN_OPENAI_MODEL``     model name (required for ``openai``)
``AGENTTURN_OPENAI_API_KEY``   bearer key (else ``OPENAI_API_KEY``); required for OpenAI's own endpoint
=============================  =====================================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from agentturn.ports.chat_model import ChatModel

MODEL_VAR: Final = "AGENTTURN_MODEL"
BEDROCK_MODEL_ID_VAR: Final = "AGENTTURN_BEDROCK_MODEL_ID"
OPENAI_BASE_URL_VAR: Final = "AGENTTURN_OPENAI_BASE_URL"
OPENAI_MODEL_VAR: Final = "AGENTTURN_OPENAI_MODEL"
OPENAI_API_KEY_VAR: Final = "AGENTTURN_OPENAI_API_KEY"

DEFAULT_OPENAI_BASE_URL: Final = "https://api.openai.com/v1"
CHOICES: Final = ("demo", "bedrock", "openai")


def chat_model_from_env(env: Mapping[str, str] = os.environ) -> ChatModel | None:
    """The chat model the environment asks for; ``None`` for the deterministic demo model (the default).

    A missing or unknown setting is a ``ValueError`` that names the variable to set. Bedrock (boto3) is
    imported only when it is chosen.
    """
    choice = _get(env, MODEL_VAR).lower() or "demo"
    if choice == "demo":
        return None
    if choice == "bedrock":
        return _bedrock(env)
    if choice == "openai":
        return _openai(env)
    raise ValueError(f"{MODEL_VAR}={_get(env, MODEL_VAR)!r} is not one of {list(CHOICES)!r}")


def _bedrock(env: Mapping[str, str]) -> ChatModel:
    model_id = _required(env, BEDROCK_MODEL_ID_VAR, "bedrock")
    try:
        from agentturn.aws.bedrock import BedrockConverseModel
    except ImportError as exc:
        raise ValueError(
            f"{MODEL_VAR}=bedrock needs boto3: pip install 'agentturn[aws]' ({type(exc).__name__}: {exc})"
        ) from exc
    region = _get(env, "AWS_REGION") or _get(env, "AWS_DEFAULT_REGION") or None
    return BedrockConverseModel(model_id, region=region)


def _openai(env: Mapping[str, str]) -> ChatModel:
    from agentturn.models.openai_compat import OpenAICompatibleModel

    model = _required(env, OPENAI_MODEL_VAR, "openai")
    base_url = _get(env, OPENAI_BASE_URL_VAR) or DEFAULT_OPENAI_BASE_URL
    api_key = _get(env, OPENAI_API_KEY_VAR) or _get(env, "OPENAI_API_KEY") or None
    if api_key is None and base_url.rstrip("/") == DEFAULT_OPENAI_BASE_URL:
        raise ValueError(
            f"{MODEL_VAR}=openai on {DEFAULT_OPENAI_BASE_URL!r} needs an API key: set {OPENAI_API_KEY_VAR}"
            f" (or OPENAI_API_KEY), or point {OPENAI_BASE_URL_VAR} at a server that needs none (Ollama, vLLM)"
        )
    return OpenAICompatibleModel(base_url, model, api_key=api_key)


def _get(env: Mapping[str, str], name: str) -> str:
    return env.get(name, "").strip()


def _required(env: Mapping[str, str], name: str, choice: str) -> str:
    value = _get(env, name)
    if not value:
        raise ValueError(f"{MODEL_VAR}={choice} needs {name} to be set")
    return value
