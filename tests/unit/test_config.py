"""config.toml and the environment quick start: validated, with errors that name the key and the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.config import load_settings
from hermes_acp.errors import ConfigError
from hermes_acp.providers.catalog import ModelCatalog


def write(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text)
    return path


def test_full_example_loads(tmp_path: Path) -> None:
    write(
        tmp_path,
        """
[model]
default = "local:qwen3"
[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
api_key_env = "LOCAL_API_KEY"
models = ["qwen3", { id = "qwen2.5-vl", vision = true, context_window = 32768 }]
[agent]
image_input_mode = "auto"
max_turn_requests = 50
[auxiliary.vision]
model = "local:qwen2.5-vl"
[vision]
embed_target_bytes = 262144
[permissions]
timeout_s = 0
[computer_use]
driver_command = ["cua-driver", "mcp", "--no-overlay"]
""",
    )
    settings = load_settings({}, home=tmp_path)
    local = settings.providers["local"]
    assert [m.id for m in local.models] == ["qwen3", "qwen2.5-vl"]
    assert local.models[1].vision
    assert settings.auxiliary.vision.model == "local:qwen2.5-vl"
    catalog = ModelCatalog.from_settings(settings, {"LOCAL_API_KEY": "x"})
    assert catalog.default_id == "local:qwen3"
    assert catalog.get("local:qwen2.5-vl").context_window == 32768


def test_unknown_key_names_key_and_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[providers.local]\nkind = "openai"\nbase_url = "http://x"\nbase_ur = "typo"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings({}, home=tmp_path)
    assert str(path) in str(caught.value)
    assert "providers.local.base_ur" in str(caught.value)


def test_bad_value_names_key_and_value(tmp_path: Path) -> None:
    write(tmp_path, '[agent]\nimage_input_mode = "sometimes"\nmax_turn_requests = 0\n')
    with pytest.raises(ConfigError) as caught:
        load_settings({}, home=tmp_path)
    message = str(caught.value)
    assert "agent.image_input_mode" in message
    assert "'sometimes'" in message
    assert "agent.max_turn_requests" in message


def test_the_mcp_ready_wait_is_a_bounded_number_of_seconds(tmp_path: Path) -> None:
    assert load_settings({}, home=tmp_path / "default").mcp.ready_wait_s == 20.0
    write(tmp_path / "zero", "[mcp]\nready_wait_s = 0\n")
    assert load_settings({}, home=tmp_path / "zero").mcp.ready_wait_s == 0.0
    write(tmp_path / "bad", "[mcp]\nready_wait_s = -1\n")
    with pytest.raises(ConfigError, match=r"mcp\.ready_wait_s"):
        load_settings({}, home=tmp_path / "bad")


def test_invalid_toml_is_reported_with_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[agent\n")
    with pytest.raises(ConfigError, match="not valid TOML") as caught:
        load_settings({}, home=tmp_path)
    assert str(path) in str(caught.value)


def test_env_quick_start_defines_custom_provider_and_default(tmp_path: Path) -> None:
    env = {"HERMES_ACP_BASE_URL": "http://127.0.0.1:8000/v1", "HERMES_ACP_MODEL": "tiny", "HERMES_ACP_API_KEY": "k"}
    settings = load_settings(env, home=tmp_path)
    assert settings.providers["custom"].api_key_env == "HERMES_ACP_API_KEY"
    assert ModelCatalog.from_settings(settings, env).default_id == "custom:tiny"


def test_vendor_keys_enable_vendor_providers(tmp_path: Path) -> None:
    settings = load_settings({"OPENAI_API_KEY": "a", "ANTHROPIC_API_KEY": "b"}, home=tmp_path)
    assert settings.providers["openai"].kind == "openai"
    assert settings.providers["anthropic"].kind == "anthropic"


def test_no_provider_is_fine_until_a_prompt(tmp_path: Path) -> None:
    settings = load_settings({}, home=tmp_path)
    assert ModelCatalog.from_settings(settings, {}).default_id is None


def test_default_model_must_exist_with_suggestions(tmp_path: Path) -> None:
    write(
        tmp_path,
        '[model]\ndefault = "local:qwen"\n'
        '[providers.local]\nkind = "openai"\nbase_url = "http://x"\nmodels = ["qwen3"]\n',
    )
    settings = load_settings({}, home=tmp_path)
    with pytest.raises(ConfigError, match=r"model\.default"):
        ModelCatalog.from_settings(settings, {})


def test_driver_command_override_and_embed_clamp(tmp_path: Path) -> None:
    write(tmp_path, "[vision]\nembed_target_bytes = 10\n")
    settings = load_settings({"HERMES_CUA_DRIVER_CMD": "python -m fake_driver mcp"}, home=tmp_path)
    assert settings.computer_use.driver_command == ["python", "-m", "fake_driver", "mcp"]
    assert settings.vision.embed_target_bytes == 64 * 1024


def test_model_without_key_is_listed_but_unusable(tmp_path: Path) -> None:
    write(
        tmp_path, '[providers.corp]\nkind = "openai"\nbase_url = "http://x"\napi_key_env = "CORP_KEY"\nmodels = ["m"]\n'
    )
    catalog = ModelCatalog.from_settings(load_settings({}, home=tmp_path), {})
    assert not catalog.get("corp:m").usable


def test_the_remote_door_s_bounds_have_defaults_are_kept_in_one_form_and_bad_values_are_named(tmp_path: Path) -> None:
    settings = load_settings({}, home=tmp_path)
    assert settings.host.max_body_bytes == 16 * 1024 * 1024
    assert settings.host.allowed_origins == [] and settings.host.allowed_hosts == []
    write(
        tmp_path,
        '[host]\nallowed_origins = ["HTTPS://App.Example/"]\n'
        'allowed_hosts = ["Proxy.Example", "proxy.example:443", "[::1]:8765"]\nmax_body_bytes = 65536\n',
    )
    host = load_settings({}, home=tmp_path).host
    assert host.allowed_origins == ["https://app.example"]
    assert host.allowed_hosts == ["proxy.example", "proxy.example:443", "[::1]:8765"]
    assert host.max_body_bytes == 65536
    write(
        tmp_path,
        '[host]\nallowed_origins = ["https://app.example/path"]\nallowed_hosts = ["https://proxy.example"]\n'
        "max_body_bytes = 1024\n",
    )
    with pytest.raises(ConfigError) as caught:
        load_settings({}, home=tmp_path)
    message = str(caught.value)
    assert "host.allowed_origins" in message and "'https://app.example/path' is not an origin" in message
    assert "host.allowed_hosts" in message and "'https://proxy.example' is not a host name" in message
    assert "host.max_body_bytes" in message and "65536" in message
