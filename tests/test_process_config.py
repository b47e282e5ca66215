"""Settings, ``--check`` and the terminal setup through the real ``python -m hermes_acp`` and the scripted model
server: a setting from the environment changes what the server does, a bad one is named by its variable, ``--config
FILE`` is read instead of the home's file; ``--check`` fails when no model can work, ``--check --probe`` asks the
provider and says what fails in the setup's words (nothing answers, the key refused) or passes, ``--check --json``
carries where each setting came from; ``--setup`` in a terminal refuses an address where nothing answers."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp.exceptions import RequestError

from fixtures.model_server import serve_model_server
from tests.fakes.agent_process import REPO, spawn_agent
from tests.fakes.sandbox_pin import pin_sandbox

pytestmark = pytest.mark.anyio

CHECK_TIMEOUT_S = 120.0
TOOL_THEN_TEXT: dict[str, Any] = {
    "name": "tool-then-text",
    "models": ["m"],
    "responses": [
        {"steps": [{"tool_call": {"name": "list_files", "arguments": {"path": "."}}}]},
        {"steps": [{"text": "Done."}]},
    ],
}
ANSWERS: dict[str, Any] = {
    "name": "answers",
    "models": ["m"],
    "responses": [{"repeat": True, "steps": [{"text": "OK"}]}],
}


def _provider(base_url: str, *, key_env: str | None = None) -> str:
    key = f'api_key_env = "{key_env}"\n' if key_env else ""
    return pin_sandbox(f'[providers.fx]\nkind = "openai"\nbase_url = "{base_url}"\n{key}models = ["m"]\n')


async def _hermes(tmp_path: Path, *args: str, env: dict[str, str] | None = None, stdin: bytes = b"") -> Any:
    """``python -m hermes_acp ARGS`` with a home of its own and no driver; the finished process."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    process_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "HERMES_ACP_HOME": str(home),
        "HERMES_CUA_DRIVER_CMD": "no-such-driver",
        "PYTHONPATH": str(REPO),
        **(env or {}),
    }
    with anyio.fail_after(CHECK_TIMEOUT_S):
        return await anyio.run_process(
            [sys.executable, "-m", "hermes_acp", *args], env=process_env, input=stdin, check=False, cwd=tmp_path
        )


async def test_a_setting_from_the_environment_changes_what_the_server_does(tmp_path: Path) -> None:
    async with (
        serve_model_server(TOOL_THEN_TEXT) as elsewhere,
        spawn_agent(
            tmp_path,
            env={
                "HERMES_ACP_AGENT__MAX_TURN_REQUESTS": "1",
                "HERMES_ACP_PROVIDERS__FX__BASE_URL": elsewhere.openai_base_url,
            },
        ) as agent,
    ):
        session_id = await agent.new_session()
        response = await agent.prompt(session_id, "list the files")
        assert response.stop_reason == "max_turn_requests", "[agent] max_turn_requests = 1, from the environment"
        assert agent.model_requests() == [], "[providers.fx] base_url from the environment: the file's is not asked"
        assert [r.path for r in elsewhere.requests()] == ["/v1/chat/completions"]


async def test_a_bad_setting_from_the_environment_is_named_by_its_variable(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, env={"HERMES_ACP_SANDBOX__LIMITS__MEMORY_MIB": "lots"}) as agent:
        with pytest.raises(RequestError) as failed:
            await agent.new_session()
    assert failed.value.code == -32603
    text = f"{failed.value} {failed.value.data}"
    assert "HERMES_ACP_SANDBOX__LIMITS__MEMORY_MIB: sandbox.limits.memory_mib: Input should be a valid integer" in text


async def test_config_names_a_file_read_instead_of_the_home_s(tmp_path: Path) -> None:
    ci = tmp_path / "ci" / "hermes.toml"
    ci.parent.mkdir()
    async with spawn_agent(tmp_path, config_at=ci) as agent:
        session_id = await agent.new_session()
        response = await agent.prompt(session_id, "hi")
        assert response.stop_reason == "end_turn", "the provider of the file --config names answers"
        assert len(agent.model_requests()) == 1
    assert not (tmp_path / "home" / "config.toml").exists()


async def test_check_fails_without_a_model_that_can_work_and_passes_with_one(tmp_path: Path) -> None:
    nothing = await _hermes(tmp_path, "--check")
    assert nothing.returncode == 1
    assert "✗ no model can work: no provider is configured" in nothing.stdout.decode()
    (tmp_path / "home" / "config.toml").write_text(_provider("http://127.0.0.1:9/v1", key_env="FX_KEY"))
    no_key = await _hermes(tmp_path, "--check")
    assert no_key.returncode == 1
    assert "✗ the default model fx:m cannot work: FX_KEY is not set" in no_key.stdout.decode()
    keyed = await _hermes(tmp_path, "--check", env={"FX_KEY": "k"})
    assert keyed.returncode == 0, keyed.stdout.decode()
    assert keyed.stdout.decode().rstrip().endswith("Result: ready to serve")


async def test_check_probe_says_nothing_answers_in_the_setup_s_words(tmp_path: Path) -> None:
    async with serve_model_server(ANSWERS) as server:
        url = server.openai_base_url
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text(_provider(url).replace("[providers.fx]", "[providers.ollama]"))
    done = await _hermes(tmp_path, "--check", "--probe")
    report = done.stdout.decode()
    assert done.returncode == 1, report
    assert f"  ✗ ollama: nothing answers at {url} — is Ollama running? `ollama serve`" in report
    assert "ready to serve" not in report


async def test_check_probe_says_the_key_was_refused_and_never_shows_it(tmp_path: Path) -> None:
    async with serve_model_server({**ANSWERS, "api_key": "the-right-key"}) as server:
        (tmp_path / "home").mkdir()
        (tmp_path / "home" / "config.toml").write_text(_provider(server.openai_base_url, key_env="FX_KEY"))
        done = await _hermes(tmp_path, "--check", "--probe", "--json", env={"FX_KEY": "a-wrong-key"})
        requests = server.requests()
    assert done.returncode == 1
    report = json.loads(done.stdout)
    refused = f"fx: the key in FX_KEY was refused (HTTP 401 from {server.openai_base_url})"
    assert refused in report["problems"]
    [provider] = report["providers"]
    assert provider["probe"] == {
        "ok": False,
        "answered": True,
        "listed": None,
        "model": None,
        "failure": refused.removeprefix("fx: "),
    }
    assert [r.path for r in requests] == ["/v1/models"], "no test request with a refused key"
    assert "a-wrong-key" not in done.stdout.decode() + done.stderr.decode()


async def test_check_probe_passes_when_the_provider_answers(tmp_path: Path) -> None:
    async with serve_model_server({**ANSWERS, "api_key": "the-right-key"}) as server:
        (tmp_path / "home").mkdir()
        (tmp_path / "home" / "config.toml").write_text(_provider(server.openai_base_url, key_env="FX_KEY"))
        done = await _hermes(tmp_path, "--check", "--probe", env={"FX_KEY": "the-right-key"})
        requests = server.requests()
    report = done.stdout.decode()
    assert done.returncode == 0, report
    assert f"  ✓ fx answers at {server.openai_base_url} and lists 1 model(s)" in report
    assert "  ✓ a test request to fx:m was answered" in report
    assert [(r.method, r.path) for r in requests] == [("GET", "/v1/models"), ("POST", "/v1/chat/completions")]
    assert requests[1].body["max_tokens"] == 16


async def test_check_json_says_where_each_setting_came_from(tmp_path: Path) -> None:
    ci = tmp_path / "ci.toml"
    ci.write_text(_provider("http://127.0.0.1:9/v1") + "[agent]\nmax_turn_requests = 7\n")
    env = {"HERMES_ACP_SANDBOX__NETWORK": "false", "HERMES_ACP_AGENT__MAX_TURN_REQUESTS": "9"}
    done = await _hermes(tmp_path, "--config", str(ci), "--check", "--json", env=env)
    assert done.returncode == 0, done.stdout.decode()
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["problems"] == [] and report["config_file"] == str(ci)
    settings = {entry["key"]: entry for entry in report["settings"]}
    assert settings["agent.max_turn_requests"] == {
        "key": "agent.max_turn_requests",
        "value": 9,
        "source": "environment",
        "variable": "HERMES_ACP_AGENT__MAX_TURN_REQUESTS",
    }
    assert settings["sandbox.network"]["variable"] == "HERMES_ACP_SANDBOX__NETWORK"
    assert settings["providers.fx.base_url"] == {
        "key": "providers.fx.base_url",
        "value": "http://127.0.0.1:9/v1",
        "source": "file",
        "file": str(ci),
    }
    assert settings["host.max_body_bytes"]["source"] == "default"
    assert report["default_model"] == "fx:m"
    bad = await _hermes(tmp_path, "--check", "--json", env={"HERMES_ACP_SANDBOX__NETWORK": "maybe"})
    assert bad.returncode == 1
    [problem] = json.loads(bad.stdout)["problems"]
    assert problem.startswith("configuration error:")
    assert "HERMES_ACP_SANDBOX__NETWORK: sandbox.network: Input should be a valid boolean" in "\n".join(
        json.loads(bad.stdout)["report"]
    )


async def test_the_terminal_setup_refuses_an_address_where_nothing_answers(tmp_path: Path) -> None:
    async with serve_model_server(ANSWERS) as server:
        url = server.openai_base_url
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text("# mine\n")
    done = await _hermes(tmp_path, "--setup", stdin=f"1\n{url}\n\n".encode())
    said = done.stdout.decode()
    assert done.returncode == 1, said
    assert said.rstrip().endswith(
        f"Setup stopped: nothing answers at {url} — is Ollama running? `ollama serve`; nothing was written."
    )
    assert (tmp_path / "home" / "config.toml").read_text() == "# mine\n"


async def test_the_terminal_setup_writes_what_worked(tmp_path: Path) -> None:
    async with serve_model_server({**ANSWERS, "models": ["m", "n"]}) as server:
        done = await _hermes(tmp_path, "--setup", stdin=f"1\n{server.openai_base_url}\n\n2\nn\n".encode())
        posts = [r.body["model"] for r in server.requests() if r.method == "POST"]
    assert done.returncode == 0, done.stdout.decode()
    assert posts == ["n"]
    check = await _hermes(tmp_path, "--check", "--json")
    report = json.loads(check.stdout)
    assert report["default_model"] == "ollama:n"
    assert report["providers"][0]["models"] == ["n", "m"]
