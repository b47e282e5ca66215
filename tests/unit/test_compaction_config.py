"""``[agent] compaction_threshold`` and ``compaction_model``: defaults, bounds, and a model that must exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.config import Settings, load_settings
from hermes_acp.errors import ConfigError

PROVIDER = '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:1/v1"\nmodels = ["big", "small"]\n'


def settings_with(tmp_path: Path, agent: str, env: dict[str, str] | None = None) -> Settings:
    (tmp_path / "config.toml").write_text(PROVIDER + "[agent]\n" + agent)
    return load_settings(env or {}, home=tmp_path)


def test_defaults_are_80_percent_and_the_sessions_own_model(tmp_path: Path) -> None:
    settings = load_settings({}, home=tmp_path)
    assert settings.agent.compaction_threshold == 0.8
    assert settings.agent.compaction_model is None


def test_a_configured_model_of_the_file_or_the_environment_is_accepted(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, 'compaction_threshold = 0.5\ncompaction_model = "local:small"\n')
    assert settings.agent.compaction_threshold == 0.5
    assert settings.agent.compaction_model == "local:small"
    from_env = settings_with(tmp_path, 'compaction_model = "openai:gpt-4.1"\n', {"OPENAI_API_KEY": "k"})
    assert from_env.agent.compaction_model == "openai:gpt-4.1"


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ("compaction_threshold = 0\n", "agent.compaction_threshold: Input should be greater than or equal to 0.1"),
        ("compaction_threshold = 1.5\n", "agent.compaction_threshold: Input should be less than or equal to 1"),
        ('compaction_threshold = "high"\n', "agent.compaction_threshold: Input should be a valid number"),
        ('compaction_model = "small"\n', 'agent.compaction_model: Value error, must be "<provider id>:<model id>"'),
        ('compaction_model = "local:"\n', 'agent.compaction_model: Value error, must be "<provider id>:<model id>"'),
        (
            'compaction_model = "local:tiny"\n',
            "agent.compaction_model: 'local:tiny' is not a configured model (models: local:big, local:small)",
        ),
        ('compaction_model = "other:big"\n', "agent.compaction_model: 'other:big' is not a configured model"),
        ("compaction_limit = 3\n", "unknown key 'agent.compaction_limit'"),
    ],
)
def test_bad_values_name_the_key_and_the_file(tmp_path: Path, agent: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_with(tmp_path, agent)
    assert message in str(caught.value)
    assert str(tmp_path / "config.toml") in str(caught.value)
