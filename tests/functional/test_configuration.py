"""How the handlers behave with the configuration a deployment gives them."""

from __future__ import annotations

import pytest

from agentturn.api.agents import AgentLoadError, load_agents
from agentturn.api.settings import Settings, SettingsError
from tests.functional.harness import Deployment, http_event

pytestmark = pytest.mark.integration


def test_reads_and_answers_work_even_when_the_agents_cannot_load(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a turn started while the agents were fine
    started = deployment.run(http_event("http_start_turn.json", body={"input": "create a login ticket"}))
    turn_id = started.json["turnId"]

    # WHEN a new deployment names an agents module that does not exist
    monkeypatch.setenv("AGENTTURN_AGENTS", "no_such_module:agents")
    deployment.run_app.api.use(None)
    deployment.submit_app.api.use(None)

    # THEN reads and submissions still work (they never load agents) ...
    assert deployment.run(http_event("http_get_turn.json", path=f"/turns/{turn_id}")).status == 200
    action = started.json["suspension"]["actionId"]
    submitted = deployment.submit(
        http_event(
            "http_submit_form.json",
            path=f"/turns/{turn_id}/actions/{action}/submit",
            body={"data": {"affectedSystem": "SSO", "impactScope": "ONE_USER"}},
        )
    )
    assert submitted.status == 202

    # ... and starting a turn is a 500 problem without internals, nothing half-created
    before = deployment.dump()
    failed = deployment.run(http_event("http_start_turn.json", path="/conversations/c2/turns", body={"input": "hi"}))
    assert failed.status == 500
    assert failed.json["type"] == "https://agentturn.dev/problems/internal-error"
    assert "no_such_module" not in failed.body
    assert deployment.dump() == before


def test_a_factory_that_returns_no_agents_is_refused() -> None:
    with pytest.raises(AgentLoadError, match="non-empty list of Agent"):
        load_agents("builtins:list")
    with pytest.raises(AgentLoadError, match=r"package\.module:function"):
        load_agents("agentturn.demo")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("AGENTTURN_MAX_BODY_BYTES", "lots"),
        ("AGENTTURN_MAX_BODY_BYTES", "10"),
        ("AGENTTURN_LEASE_SECONDS", "0"),
        ("AGENTTURN_EXPIRE_OVERDUE", "maybe"),
    ],
)
def test_settings_out_of_bounds_are_refused_by_name(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        Settings.from_env({name: value})


def test_default_settings_play_the_demo() -> None:
    settings = Settings.from_env({})
    assert settings.agents == "agentturn.demo:demo_agents"
    assert settings.default_agent == "assistant"
    assert settings.max_body_bytes == 64 * 1024
