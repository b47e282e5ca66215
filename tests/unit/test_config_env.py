"""Every setting from the environment (``config_env``): each key of config.toml by ``HERMES_ACP_<SECTION>__<KEY>``,
nested sections and providers included, validated as the file is, with the variable named in every error; the
quick-start variables keep their meaning; ``HERMES_ACP_CONFIG`` (what ``--config`` sets) names another file; and
``Settings.sources`` says who set each key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_acp.checks.sources import setting_origins
from hermes_acp.config import load_settings
from hermes_acp.config_env import variable_for
from hermes_acp.errors import ConfigError
from hermes_acp.providers.catalog import ModelCatalog

PROVIDER = '[providers.my-server]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodels = ["a"]\n'


def _toml(value: Any) -> str:
    """``value`` as a TOML value (what a variable for a list or table key holds)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {_toml(item)}" for key, item in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return json.dumps(value)


def _text(value: Any) -> str:
    """What a variable holds to give ``value``: TOML for a list or table, else the plain text."""
    if isinstance(value, list | dict):
        return _toml(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


UNSET_BY_DEFAULT: dict[str, Any] = {
    "model.default": "my-server:a",
    "providers.my-server.api_key_env": "MY_SERVER_KEY",
    "providers.my-server.send_back": ["reasoning_content"],
    "agent.title_model": "my-server:a",
    "agent.compaction_model": "my-server:a",
    "agent.subagent_model": "my-server:a",
    "auxiliary.vision.model": "my-server:a",
    "host.idle_exit_s": 60.0,
    "host.token_file": "~/door.token",
    "terminal.shell": "bash",
    "budget.prompt_tokens": 20000,
    "budget.session_tokens": 100000,
    "budget.prompt_usd": 0.5,
    "budget.session_usd": 2.0,
}
"""A value for each key that has none by default (the others are set to the value they have)."""


def test_every_key_of_the_file_can_be_set_by_its_variable(tmp_path: Path) -> None:
    """Each key, a provider's included, set through its variable: the value is taken and the key's source names the
    variable. A key the rule could not reach would be an unknown key; a new key without a default must be added to
    ``UNSET_BY_DEFAULT``."""
    (tmp_path / "config.toml").write_text(PROVIDER)
    every = setting_origins(load_settings({}, home=tmp_path))
    assert {o.key for o in every if o.value is None} == set(UNSET_BY_DEFAULT)
    assert {"sandbox.limits.memory_mib", "providers.my-server.models", "host.listen"} <= {o.key for o in every}
    for origin in every:
        value = UNSET_BY_DEFAULT.get(origin.key, origin.value)
        variable = variable_for(origin.key.split("."))
        settings = load_settings({variable: _text(value)}, home=tmp_path)
        [again] = [o for o in setting_origins(settings) if o.key == origin.key]
        assert (again.value, again.variable) == (value, variable), origin.key


def test_values_from_the_environment_win_over_the_file_and_reach_nested_sections_and_providers(
    tmp_path: Path,
) -> None:
    (tmp_path / "config.toml").write_text(PROVIDER + "[agent]\nmax_turn_requests = 12\n")
    env = {
        "HERMES_ACP_AGENT__MAX_TURN_REQUESTS": "20",
        "HERMES_ACP_SANDBOX__LIMITS__MEMORY_MIB": "4096",
        "HERMES_ACP_SANDBOX__NETWORK": "false",
        "HERMES_ACP_SANDBOX__MASK": '["~/.kube", "~/.aws"]',
        "HERMES_ACP_PROVIDERS__MY_SERVER__MODELS": '["b", { id = "c", vision = true }]',
        "HERMES_ACP_PROVIDERS__LOCAL__KIND": "openai",
        "HERMES_ACP_PROVIDERS__LOCAL__BASE_URL": "http://127.0.0.1:11434/v1",
        "HERMES_ACP_PROVIDERS__LOCAL__MODELS": '["qwen3"]',
        "HERMES_ACP_MODEL__DEFAULT": "my-server:c",
        "HERMES_ACP_PERMISSIONS__TIMEOUT_S": "2.5",
        "HERMES_ACP_AGENT__TITLE_MODEL": "",  # empty: as if unset
    }
    settings = load_settings(env, home=tmp_path)
    assert settings.agent.max_turn_requests == 20
    assert settings.sandbox.limits.memory_mib == 4096 and settings.sandbox.limits.processes == 1024
    assert settings.sandbox.network is False and settings.sandbox.mask == ["~/.kube", "~/.aws"]
    assert [(m.id, m.vision) for m in settings.providers["my-server"].models] == [("b", False), ("c", True)]
    assert settings.providers["local"].base_url == "http://127.0.0.1:11434/v1"
    assert settings.permissions.timeout_s == 2.5 and settings.agent.title_model is None
    assert ModelCatalog.from_settings(settings, env).default_id == "my-server:c"
    sources = settings.sources
    assert sources["agent.max_turn_requests"] == "HERMES_ACP_AGENT__MAX_TURN_REQUESTS"
    assert sources["providers.my-server.base_url"] == "file"
    assert sources["providers.my-server.models"] == "HERMES_ACP_PROVIDERS__MY_SERVER__MODELS"
    assert "sandbox.mode" not in sources and "agent.title_model" not in sources, "defaults have no source"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"HERMES_ACP_AGENT__MAX_TURN_REQUESTS": "many"},
            "HERMES_ACP_AGENT__MAX_TURN_REQUESTS: agent.max_turn_requests: Input should be a valid integer, unable to"
            " parse string as an integer (got 'many')",
        ),
        (
            {"HERMES_ACP_SANDBOX__MODE": "sometimes"},
            "HERMES_ACP_SANDBOX__MODE: sandbox.mode: Input should be 'auto', 'required' or 'off' (got 'sometimes')",
        ),
        (
            {"HERMES_ACP_SANDBOX__LIMITS__MEMORY_MIB": "-1"},
            "HERMES_ACP_SANDBOX__LIMITS__MEMORY_MIB: sandbox.limits.memory_mib: Input should be greater than or equal"
            " to 0 (got '-1')",
        ),
        (
            {"HERMES_ACP_AGENT__MAX_TURN_REQUEST": "5"},
            "HERMES_ACP_AGENT__MAX_TURN_REQUEST: unknown key 'agent.max_turn_request'; did you mean"
            " HERMES_ACP_AGENT__MAX_TURN_REQUESTS?",
        ),
        (
            {"HERMES_ACP_SANDBOX__MASK": "~/.kube"},
            'HERMES_ACP_SANDBOX__MASK: this key holds a list or a table: write its value as in config.toml, e.g. ["a",'
            " \"b\"] (got '~/.kube')",
        ),
        (
            {"HERMES_ACP_SANDBOX__MASK": '["a"]\nother = 1'},
            "HERMES_ACP_SANDBOX__MASK: give one TOML value (a list or a table), nothing after it",
        ),
        (
            {"HERMES_ACP_SANDBOX__LIMITS": "1"},
            "HERMES_ACP_SANDBOX__LIMITS: names the section [sandbox.limits], not a key: set its keys, e.g."
            " HERMES_ACP_SANDBOX__LIMITS__PROCESSES",
        ),
        (
            {"HERMES_ACP_AGENT__MAX_TURN_REQUESTS__X": "1"},
            "HERMES_ACP_AGENT__MAX_TURN_REQUESTS__X: agent.max_turn_requests is a key, not a section (the name goes"
            " on after it)",
        ),
        (
            {"HERMES_ACP_PROVIDERS__NEW__BASE_URL": "http://127.0.0.1:9/v1"},
            "HERMES_ACP_PROVIDERS__NEW__BASE_URL: providers.new.kind: Field required",
        ),
        (
            {"HERMES_ACP_PROVIDERS__MY_SERVER": "x"},
            "HERMES_ACP_PROVIDERS__MY_SERVER: names a provider, not a key: set its keys, e.g."
            " HERMES_ACP_PROVIDERS__MY_SERVER__BASE_URL",
        ),
        (
            {"HERMES_ACP_AGENT__COMPACTION_MODEL": "my-server:z"},
            "HERMES_ACP_AGENT__COMPACTION_MODEL: agent.compaction_model: 'my-server:z' is not a configured model"
            " (models: my-server:a)",
        ),
        (
            {"HERMES_ACP_AGENT__MAX_TURN_REQUESTS": "3", "HERMES_ACP_agent__max_turn_requests": "4"},
            "HERMES_ACP_agent__max_turn_requests: HERMES_ACP_AGENT__MAX_TURN_REQUESTS sets agent.max_turn_requests"
            " too; unset one of them",
        ),
    ],
)
def test_a_bad_value_is_named_by_its_variable_in_the_file_s_words(
    tmp_path: Path, env: dict[str, str], message: str
) -> None:
    (tmp_path / "config.toml").write_text(PROVIDER)
    with pytest.raises(ConfigError) as caught:
        load_settings(env, home=tmp_path)
    assert str(caught.value) == message


def test_the_same_bad_value_in_the_file_reads_the_same_but_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[sandbox]\nmode = 'sometimes'\n")
    with pytest.raises(ConfigError) as in_file:
        load_settings({}, home=tmp_path)
    path.write_text("")
    with pytest.raises(ConfigError) as in_env:
        load_settings({"HERMES_ACP_SANDBOX__MODE": "sometimes"}, home=tmp_path)
    assert str(in_file.value) == str(in_env.value).replace("HERMES_ACP_SANDBOX__MODE", str(path))


def test_the_quick_start_keeps_its_meaning_and_the_rule_refines_it(tmp_path: Path) -> None:
    env = {
        "HERMES_ACP_BASE_URL": "http://127.0.0.1:8000/v1",
        "HERMES_ACP_MODEL": "tiny",
        "HERMES_ACP_API_KEY": "k",
        "HERMES_ACP_HOME": str(tmp_path),
        "OPENAI_API_KEY": "o",
        "HERMES_ACP_PROVIDERS__OPENAI__TIMEOUT_S": "30",
        "HERMES_ACP_PROVIDERS__CUSTOM__MODELS": '["tiny", "big"]',
    }
    settings = load_settings(env, home=tmp_path)
    assert settings.model.default == "custom:tiny"
    assert settings.providers["custom"].api_key_env == "HERMES_ACP_API_KEY"
    assert [m.id for m in settings.providers["custom"].models] == ["tiny", "big"]
    assert settings.providers["openai"].timeout_s == 30 and settings.providers["openai"].api_key_env == "OPENAI_API_KEY"
    assert settings.sources["model.default"] == "HERMES_ACP_MODEL"
    assert settings.sources["providers.openai.base_url"] == "OPENAI_API_KEY"
    overridden = load_settings({**env, "HERMES_ACP_MODEL__DEFAULT": "custom:big"}, home=tmp_path)
    assert overridden.model.default == "custom:big"
    assert overridden.where("model.default") == "HERMES_ACP_MODEL__DEFAULT"


def test_a_config_file_named_elsewhere_is_read_and_one_that_is_missing_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text("[agent]\nmax_turn_requests = 3\n")
    elsewhere = tmp_path / "ci.toml"
    elsewhere.write_text("[agent]\nmax_turn_requests = 7\n")
    env = {"HERMES_ACP_HOME": str(tmp_path / "home"), "HERMES_ACP_CONFIG": str(elsewhere)}
    settings = load_settings(env)
    assert settings.agent.max_turn_requests == 7 and settings.config_file == elsewhere
    assert settings.home == tmp_path / "home", "the home stays where its state is"
    with pytest.raises(ConfigError, match=r"ci-missing\.toml: no such file \(named by --config or HERMES_ACP_CONFIG\)"):
        load_settings({**env, "HERMES_ACP_CONFIG": str(tmp_path / "ci-missing.toml")})
