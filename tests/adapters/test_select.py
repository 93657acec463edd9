"""Choosing the chat model from environment variables, and the demo agents on a chosen model."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from agentturn import AiMessage, ChatRequest, ScriptedChatModel, UserMessage
from agentturn.aws.bedrock import BedrockConverseModel
from agentturn.demo import demo_agents
from agentturn.models import OpenAICompatibleModel, chat_model_from_env


@pytest.mark.parametrize(
    "env", [{}, {"AGENTTURN_MODEL": "demo"}, {"AGENTTURN_MODEL": " Demo "}, {"AGENTTURN_MODEL": ""}]
)
def test_demo_is_the_default(env: dict[str, str]) -> None:
    # GIVEN no model chosen, or the demo one WHEN selecting THEN None: use the demo agents' scripted model
    assert chat_model_from_env(env) is None


def test_bedrock_with_model_id_and_region() -> None:
    # GIVEN Bedrock chosen with a model id and a region
    env = {
        "AGENTTURN_MODEL": "bedrock",
        "AGENTTURN_BEDROCK_MODEL_ID": "us.anthropic.claude-3-5-haiku-20241022-v1:0",
        "AWS_REGION": "us-west-2",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }
    # WHEN selecting
    model = chat_model_from_env(env)
    # THEN a Bedrock model for that id, in AWS_REGION (which wins over AWS_DEFAULT_REGION)
    assert isinstance(model, BedrockConverseModel)
    assert (model.model_id, model.region) == ("us.anthropic.claude-3-5-haiku-20241022-v1:0", "us-west-2")


def test_bedrock_region_falls_back_to_aws_default_region_then_to_boto3() -> None:
    base = {"AGENTTURN_MODEL": "bedrock", "AGENTTURN_BEDROCK_MODEL_ID": "amazon.nova-lite-v1:0"}
    with_default = chat_model_from_env({**base, "AWS_DEFAULT_REGION": "eu-west-1"})
    without = chat_model_from_env(base)
    assert isinstance(with_default, BedrockConverseModel) and with_default.region == "eu-west-1"
    assert isinstance(without, BedrockConverseModel) and without.region is None


def test_bedrock_without_model_id_names_the_variable() -> None:
    with pytest.raises(ValueError, match="AGENTTURN_MODEL=bedrock needs AGENTTURN_BEDROCK_MODEL_ID to be set"):
        chat_model_from_env({"AGENTTURN_MODEL": "bedrock"})


def test_openai_with_defaults() -> None:
    # GIVEN OpenAI chosen with a model and the standard OPENAI_API_KEY
    env = {"AGENTTURN_MODEL": "openai", "AGENTTURN_OPENAI_MODEL": "gpt-4o-mini", "OPENAI_API_KEY": "sk-std"}
    # WHEN selecting THEN OpenAI's own endpoint, with that key
    model = chat_model_from_env(env)
    assert isinstance(model, OpenAICompatibleModel)
    assert (model.url, model.model) == ("https://api.openai.com/v1/chat/completions", "gpt-4o-mini")
    assert model._headers["Authorization"] == "Bearer sk-std"


def test_agentturn_key_wins_over_openai_api_key() -> None:
    env = {
        "AGENTTURN_MODEL": "openai",
        "AGENTTURN_OPENAI_MODEL": "gpt-4o-mini",
        "AGENTTURN_OPENAI_API_KEY": "sk-agentturn",
        "OPENAI_API_KEY": "sk-std",
    }
    model = chat_model_from_env(env)
    assert isinstance(model, OpenAICompatibleModel)
    assert model._headers["Authorization"] == "Bearer sk-agentturn"


def test_ollama_needs_no_key() -> None:
    # GIVEN an OpenAI-compatible local server and no key
    env = {
        "AGENTTURN_MODEL": "OPENAI",
        "AGENTTURN_OPENAI_BASE_URL": "http://localhost:11434/v1",
        "AGENTTURN_OPENAI_MODEL": "llama3.2",
    }
    # WHEN selecting THEN a keyless model on that server
    model = chat_model_from_env(env)
    assert isinstance(model, OpenAICompatibleModel)
    assert model.url == "http://localhost:11434/v1/chat/completions"
    assert "Authorization" not in model._headers


def test_openai_endpoint_without_key_is_refused_early() -> None:
    with pytest.raises(ValueError, match="needs an API key: set AGENTTURN_OPENAI_API_KEY"):
        chat_model_from_env({"AGENTTURN_MODEL": "openai", "AGENTTURN_OPENAI_MODEL": "gpt-4o-mini"})


def test_openai_without_model_names_the_variable() -> None:
    with pytest.raises(ValueError, match="AGENTTURN_OPENAI_MODEL"):
        chat_model_from_env({"AGENTTURN_MODEL": "openai", "OPENAI_API_KEY": "sk-std"})


def test_unknown_choice_lists_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"AGENTTURN_MODEL='gemini' is not one of \['demo', 'bedrock', 'openai'\]"):
        chat_model_from_env({"AGENTTURN_MODEL": "gemini"})


def test_core_and_model_selection_import_no_aws_sdk() -> None:
    # GIVEN a fresh interpreter WHEN the core, the OpenAI adapter and the selection (demo, openai) are used
    code = textwrap.dedent(
        """
        import sys
        import agentturn, agentturn.demo, agentturn.models
        from agentturn.models import chat_model_from_env
        assert chat_model_from_env({}) is None
        chat_model_from_env({"AGENTTURN_MODEL": "openai", "AGENTTURN_OPENAI_MODEL": "m", "OPENAI_API_KEY": "k"})
        print(sorted(name for name in sys.modules if name.split(".")[0] in ("boto3", "botocore")))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    # THEN neither boto3 nor botocore was imported
    assert done.stdout.strip() == "[]"


def test_demo_agents_keep_the_scripted_model_by_default_and_take_a_real_one() -> None:
    # GIVEN the demo agents built without and with a model
    scripted = demo_agents()
    model = ScriptedChatModel([AiMessage(content="from a real model")])
    chosen = demo_agents(chat_model=model)
    # THEN by default every agent shares the scripted demo model, which says it is one
    [default_model] = {id(agent.chat_model) for agent in scripted}
    reply = scripted[0].chat_model.chat(ChatRequest(system="", messages=[UserMessage(content="hello")]))
    assert reply.content.startswith("[demo model] ")
    # AND with a model, every agent runs on it, with the same ids, tools and instructions
    assert all(agent.chat_model is model for agent in chosen)
    assert [(a.id, sorted(a.tools), a.instructions) for a in chosen] == [
        (a.id, sorted(a.tools), a.instructions) for a in scripted
    ]
    assert default_model != id(model)
