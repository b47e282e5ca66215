"""The in-editor setup and ``providers/*`` through the official TypeScript SDK's client (2.4.0) advertising forms,
against the real agent process and the scripted model server: from a fresh home to a first streamed answer without
a terminal or a file, every preset with and without a ``/models`` list, a server that refuses the test request, a
key variable that is not set, a cancel at each step, the written config.toml keeping the user's comments, and a
client routing providers. Every frame is checked against the ACP schema (the unstable one for ``providers/*``).
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from fixtures.model_server import serve_model_server
from fixtures.model_server.records import key_fingerprint
from hermes_acp.onboarding.presets import PRESETS
from tests.fakes.acp_schema import FrameLog
from tests.fakes.sandbox_pin import pin_sandbox
from tests.fakes.ts_sdk import REPO, ts_sdk

pytestmark = pytest.mark.anyio

FORMS: dict[str, Any] = {"elicitation": {"form": {}}}
ANSWER = "Hello from the new model."
LISTED = ["qwen3", "llama3.3"]
COMMENTED = "# my notes: keep them\n[agent]\nmax_turn_requests = 7  # and this\n"


def _scenario(*, list_models: bool = True, answer: str = ANSWER) -> dict[str, Any]:
    return {
        "name": "setup",
        "models": LISTED,
        "list_models": list_models,
        "responses": [{"repeat": True, "steps": [{"text": answer}]}],
    }


def _text(text: str) -> dict[str, Any]:
    return {"sessionId": "$session", "prompt": [{"type": "text", "text": text}]}


SESSION_NEW = {"method": "session/new", "params": {"cwd": "$cwd", "mcpServers": []}}
SETUP = {"method": "authenticate", "params": {"methodId": "hermes-setup-form"}}


def _prompt(text: str) -> dict[str, Any]:
    return {"method": "session/prompt", "params": _text(text)}


def _service(preset: str, base_url: str, key_env: str | None = None) -> dict[str, Any]:
    content = {"preset": preset, "base_url": base_url}
    if key_env is not None:
        content["api_key_env"] = key_env
    return {"action": "accept", "content": content}


def _model(model: str, *, vision: bool = False) -> dict[str, Any]:
    return {"action": "accept", "content": {"model": model, "vision": vision}}


async def _run(
    tmp_path: Path, plan: dict[str, Any], *, config: str | None = COMMENTED, env: dict[str, str] | None = None
) -> dict[str, Any]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    if config is not None:
        (home / "config.toml").write_text(pin_sandbox(config))
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    text = json.dumps({"capabilities": FORMS, **plan}).replace("$cwd", str(workspace))
    process_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "HERMES_ACP_HOME": str(home),
        "PYTHONPATH": str(REPO),
        "TS_CLIENT_PLAN": text,
        **(env or {}),
    }
    report = await ts_sdk().run("plan_client.mjs", [sys.executable, "-m", "hermes_acp"], env=process_env)
    log = FrameLog()
    for direction, message in report["frames"]:
        log.add(direction, message)
    log.check()
    return report


def _chunks(report: dict[str, Any]) -> str:
    return "".join(
        update["update"]["content"]["text"]
        for update in report["updates"]
        if update["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def _config(tmp_path: Path) -> dict[str, Any]:
    return tomllib.loads((tmp_path / "home" / "config.toml").read_text())


async def test_from_a_fresh_home_to_a_first_streamed_answer_through_forms(tmp_path: Path) -> None:
    async with serve_model_server(_scenario()) as server:
        plan = {
            "steps": [SESSION_NEW, _prompt("hi"), SETUP, _prompt("hi again")],
            "forms": [_service("ollama", server.openai_base_url), _model("llama3.3")],
        }
        report = await _run(tmp_path, plan)
        requests = server.requests()
    before, setup, after = report["results"][1], report["results"][2], report["results"][3]
    assert before["error"]["code"] == -32000, "no provider yet: auth_required"
    assert setup == {"result": {}}
    assert after["result"]["stopReason"] == "end_turn"
    assert _chunks(report) == ANSWER, "the same session answers with the new model, no restart"
    methods = [m["id"] for m in report["initialize"]["authMethods"]]
    assert methods[0] == "hermes-setup-form"
    assert report["initialize"]["agentCapabilities"]["providers"] == {}
    authenticate_id = next(m["id"] for d, m in report["frames"] if m.get("method") == "authenticate")
    first, second = report["elicitations"]
    assert first["mode"] == "form"
    assert first["requestId"] == authenticate_id and "sessionId" not in first, "tied to the authenticate request"
    assert "api_key_env" in first["requestedSchema"]["properties"]
    assert all("key" not in name or name == "api_key_env" for name in first["requestedSchema"]["properties"])
    assert [o["const"] for o in second["requestedSchema"]["properties"]["model"]["oneOf"]] == LISTED
    assert [(r.method, r.path) for r in requests][:2] == [("GET", "/v1/models"), ("POST", "/v1/chat/completions")]
    assert [r.body["model"] for r in requests if r.method == "POST"] == ["llama3.3", "llama3.3"]
    text = (tmp_path / "home" / "config.toml").read_text()
    assert "# my notes: keep them" in text and "max_turn_requests = 7  # and this" in text
    parsed = _config(tmp_path)
    assert parsed["model"]["default"] == "ollama:llama3.3"
    assert parsed["providers"]["ollama"] == {
        "kind": "openai",
        "base_url": server.openai_base_url,
        "models": [{"id": "llama3.3", "vision": False}, "qwen3"],
    }, "the chosen model, then every other model the server listed"
    assert parsed["sandbox"]["mode"] == "off", "keys the setup does not touch stay"
    options = [u for u in report["updates"] if u["update"]["sessionUpdate"] == "config_option_update"]
    assert options, "the open session is told its new model options"
    assert (tmp_path / "home" / "config.toml.bak").read_text() == pin_sandbox(COMMENTED)


@pytest.mark.parametrize("listing", ["listed", "unlisted"])
async def test_every_preset_sets_up_and_answers(tmp_path: Path, listing: str) -> None:
    """Each preset in turn, in one agent process, pointed at the scripted server (a preset's usual address is on
    another host): with the server's /models list the model is chosen from it, without one it is typed."""
    keyed = {"openrouter": None, "openai": "FX_OPENAI_API_KEY", "anthropic": "FX_ANTHROPIC_API_KEY", "deepseek": None}
    env = {"OPENROUTER_API_KEY": "k-openrouter", "FX_OPENAI_API_KEY": "k-openai", "DEEPSEEK_API_KEY": "k-deepseek"}
    env["FX_ANTHROPIC_API_KEY"] = "k-anthropic"
    async with serve_model_server(_scenario(list_models=listing == "listed")) as server:
        steps: list[dict[str, Any]] = [SESSION_NEW]
        forms: list[dict[str, Any]] = []
        for preset in PRESETS:
            url = server.base_url if preset.id == "anthropic" else server.openai_base_url
            steps += [SETUP, _prompt(f"hello {preset.id}")]
            forms += [_service(preset.id, url, keyed.get(preset.id)), _model("llama3.3", vision=preset.id == "vllm")]
        report = await _run(tmp_path, {"steps": steps, "forms": forms}, env=env)
        requests = server.requests()
    results = report["results"][1:]
    assert [r.get("result") for r in results[::2]] == [{}] * len(PRESETS), results
    assert [r["result"]["stopReason"] for r in results[1::2]] == ["end_turn"] * len(PRESETS)
    models = [e["requestedSchema"]["properties"]["model"] for e in report["elicitations"][1::2]]
    if listing == "listed":
        assert all([o["const"] for o in m["oneOf"]] == LISTED for m in models)
    else:
        assert all("oneOf" not in m and m["type"] == "string" for m in models)
        assert all("did not list its models" in e["message"] for e in report["elicitations"][1::2])
    parsed = _config(tmp_path)
    assert set(parsed["providers"]) == {p.id for p in PRESETS}
    assert parsed["model"]["default"] == f"{PRESETS[-1].id}:llama3.3"
    assert parsed["providers"]["anthropic"]["kind"] == "anthropic"
    assert parsed["providers"]["openai"]["api_key_env"] == "FX_OPENAI_API_KEY"
    assert parsed["providers"]["openrouter"]["api_key_env"] == "OPENROUTER_API_KEY"
    assert "api_key_env" not in parsed["providers"]["ollama"]
    others = ["qwen3"] if listing == "listed" else []
    assert parsed["providers"]["vllm"]["models"] == [{"id": "llama3.3", "vision": True}, *others]
    keys = {r.credentials["authorization"].sha256_prefix for r in requests if r.credentials["authorization"].present}
    keys |= {r.credentials["x-api-key"].sha256_prefix for r in requests if r.credentials["x-api-key"].present}
    assert keys == {key_fingerprint(v) for v in env.values()}, "each key reached the server, none was stored"
    text = (tmp_path / "home" / "config.toml").read_text()
    assert all(value not in text for value in env.values())
    assert _chunks(report) == ANSWER * len(PRESETS)


async def test_a_server_that_refuses_the_test_request_writes_nothing(tmp_path: Path) -> None:
    refusing = {
        "name": "refuses",
        "models": LISTED,
        "responses": [{"repeat": True, "error": {"status": 401, "message": "Invalid API key"}}],
    }
    async with serve_model_server(refusing) as server:
        plan = {
            "steps": [SETUP],
            "forms": [_service("openrouter", server.openai_base_url), _model("qwen3")],
        }
        report = await _run(tmp_path, plan, config=None, env={"OPENROUTER_API_KEY": "wrong"})
    [outcome] = report["results"]
    assert outcome["error"]["code"] == -32000
    message = outcome["error"]["message"]
    assert "test request" in message and "nothing was written" in message and "401" in message
    assert not (tmp_path / "home" / "config.toml").exists()


async def test_a_key_variable_that_is_not_set_says_where_to_set_it_and_writes_nothing(tmp_path: Path) -> None:
    async with serve_model_server(_scenario()) as server:
        plan = {"steps": [SETUP], "forms": [_service("openrouter", server.openai_base_url), _model("qwen3")]}
        report = await _run(tmp_path, plan)
        requests = server.requests()
    [outcome] = report["results"]
    message = outcome["error"]["message"]
    assert "OPENROUTER_API_KEY is not set" in message
    assert "Zed" in message and "JetBrains" in message and "acp.json" in message
    assert len(report["elicitations"]) == 1, "no model form without a key"
    assert requests == [], "nothing was asked of the server"
    assert (tmp_path / "home" / "config.toml").read_text() == pin_sandbox(COMMENTED)


async def test_a_cancel_or_decline_at_each_step_writes_nothing(tmp_path: Path) -> None:
    async with serve_model_server(_scenario()) as server:
        url = server.openai_base_url
        plan = {
            "steps": [SETUP, SETUP, SETUP, SETUP],
            "forms": [
                {"action": "cancel"},
                {"action": "decline"},
                _service("ollama", url),
                {"action": "cancel"},
                _service("ollama", url),
                {"action": "decline"},
            ],
        }
        report = await _run(tmp_path, plan)
        posts = [r for r in server.requests() if r.method == "POST"]
    assert [r["error"]["code"] for r in report["results"]] == [-32000] * 4
    assert [r["error"]["message"] for r in report["results"]] == ["Setup cancelled; nothing was written."] * 4
    assert len(report["elicitations"]) == 6
    assert posts == [], "no test request after a cancel"
    assert (tmp_path / "home" / "config.toml").read_text() == pin_sandbox(COMMENTED)


async def test_slash_setup_in_a_session_switches_it_to_the_new_model(tmp_path: Path) -> None:
    async with serve_model_server(_scenario()) as server:
        plan = {
            "steps": [SESSION_NEW, _prompt("/setup"), _prompt("and now?")],
            "forms": [_service("lmstudio", server.openai_base_url), _model("qwen3")],
        }
        report = await _run(tmp_path, plan)
    session_id = report["results"][0]["result"]["sessionId"]
    assert [r["result"]["stopReason"] for r in report["results"][1:]] == ["end_turn", "end_turn"]
    assert all(e["sessionId"] == session_id for e in report["elicitations"]), "tied to the session"
    assert "Set up lmstudio:qwen3" in _chunks(report) and _chunks(report).endswith(ANSWER)
    commands = [u for u in report["updates"] if u["update"]["sessionUpdate"] == "available_commands_update"]
    assert any(c["name"] == "setup" for c in commands[0]["update"]["availableCommands"])
    options = [u for u in report["updates"] if u["update"]["sessionUpdate"] == "config_option_update"]
    model_option = next(o for o in options[-1]["update"]["configOptions"] if o["id"] == "model")
    assert model_option["currentValue"] == "lmstudio:qwen3"


async def test_a_client_routes_providers_in_memory_and_a_prompt_follows(tmp_path: Path) -> None:
    async with (
        serve_model_server(_scenario(answer="from the config")) as configured,
        serve_model_server(_scenario(answer="from the gateway")) as gateway,
    ):
        config = f'[providers.fx]\nkind = "openai"\nbase_url = "{configured.openai_base_url}"\nmodels = ["qwen3"]\n'
        headers = {"Authorization": "Bearer gateway-secret", "X-Route": "team-a"}
        plan = {
            "steps": [
                {"method": "providers/list", "params": {}},
                SESSION_NEW,
                _prompt("first"),
                {
                    "method": "providers/set",
                    "params": {
                        "providerId": "fx",
                        "apiType": "openai",
                        "baseUrl": gateway.openai_base_url,
                        "headers": headers,
                    },
                },
                {"method": "providers/list", "params": {}},
                _prompt("second"),
                {
                    "method": "providers/set",
                    "params": {"providerId": "gw", "apiType": "openai", "baseUrl": gateway.openai_base_url},
                },
                {"method": "providers/disable", "params": {"providerId": "fx"}},
                {"method": "providers/list", "params": {}},
                _prompt("third"),
                {"method": "providers/disable", "params": {"providerId": "gw"}},
                _prompt("fourth"),
                {"method": "providers/set", "params": {"providerId": "fx", "apiType": "bedrock", "baseUrl": "x"}},
                {
                    "method": "providers/set",
                    "params": {"providerId": "fx", "apiType": "openai", "baseUrl": "file:///etc/passwd"},
                },
                {
                    "method": "providers/set",
                    "params": {
                        "providerId": "fx",
                        "apiType": "openai",
                        "baseUrl": gateway.openai_base_url,
                        "headers": {"X-Evil": "a\r\nHost: elsewhere"},
                    },
                },
                {"method": "providers/disable", "params": {"providerId": "never-configured"}},
            ],
        }
        report = await _run(tmp_path, plan, config=config)
        configured_posts = [r for r in configured.requests() if r.method == "POST"]
        gateway_posts = [r for r in gateway.requests() if r.method == "POST"]
    results = report["results"]
    listed = results[0]["result"]["providers"]
    assert [(p["providerId"], p["current"]) for p in listed] == [
        ("fx", {"apiType": "openai", "baseUrl": configured.openai_base_url})
    ]
    assert listed[0]["supported"] == ["openai", "anthropic"] and listed[0]["required"] is False
    assert "memory" in results[3]["result"]["_meta"]["hermes"]["storage"]
    routed = results[4]["result"]["providers"][0]
    assert routed["current"] == {"apiType": "openai", "baseUrl": gateway.openai_base_url}
    assert routed["_meta"]["hermes"]["inMemoryOnly"] is True
    assert results[5]["result"]["stopReason"] == "end_turn"
    assert len(configured_posts) == 1, "the first prompt went to the configured endpoint, later ones did not"
    assert gateway_posts[0].credentials["authorization"].sha256_prefix == key_fingerprint("gateway-secret")
    assert gateway_posts[0].headers["x-route"] == "team-a"
    after_disable = {p["providerId"]: p["current"] for p in results[8]["result"]["providers"]}
    assert after_disable == {"gw": {"apiType": "openai", "baseUrl": gateway.openai_base_url}, "fx": None}
    assert results[9]["result"]["stopReason"] == "end_turn", "the session falls back to the client's new provider"
    assert gateway_posts[-1].body["model"] == LISTED[0], "gw's models come from the gateway's own /models"
    assert results[11]["error"]["code"] == -32000, "every provider disabled: auth_required"
    assert [r["error"]["code"] for r in results[12:15]] == [-32602] * 3
    assert "supported: openai, anthropic" in results[12]["error"]["message"]
    assert "gateway-secret" not in json.dumps(results) and "Host: elsewhere" not in results[14]["error"]["message"]
    assert results[15] == {"result": {}}
    text = (tmp_path / "home" / "config.toml").read_text()
    assert "gateway" not in text and "gw" not in text, "routes are never written to config.toml"
    assert "gateway-secret" not in (tmp_path / "home" / "logs" / "hermes-acp.log").read_text()


async def test_a_server_where_nothing_answers_stops_the_setup_after_the_first_form(tmp_path: Path) -> None:
    async with serve_model_server(_scenario()) as server:
        url = server.openai_base_url  # closed when the block ends: nothing answers there any more
    plan = {"steps": [SETUP], "forms": [_service("ollama", url), _model("qwen3")]}
    report = await _run(tmp_path, plan)
    [outcome] = report["results"]
    assert outcome["error"]["code"] == -32000
    assert outcome["error"]["message"] == (
        f"Setup stopped: nothing answers at {url} — is Ollama running? `ollama serve`; nothing was written."
    )
    assert len(report["elicitations"]) == 1, "no model form for a server nobody answers at"
    assert (tmp_path / "home" / "config.toml").read_text() == pin_sandbox(COMMENTED)


async def test_a_refused_key_stops_the_setup_after_the_first_form(tmp_path: Path) -> None:
    async with serve_model_server({**_scenario(), "api_key": "the-right-key"}) as server:
        plan = {"steps": [SETUP], "forms": [_service("openrouter", server.openai_base_url), _model("qwen3")]}
        report = await _run(tmp_path, plan, env={"OPENROUTER_API_KEY": "a-wrong-key"})
        requests = server.requests()
    [outcome] = report["results"]
    message = outcome["error"]["message"]
    assert message == (
        f"Setup stopped: the key in OPENROUTER_API_KEY was refused (HTTP 401 from {server.openai_base_url});"
        " nothing was written."
    )
    assert "a-wrong-key" not in json.dumps(report["results"])
    assert len(report["elicitations"]) == 1
    assert [(r.method, r.path) for r in requests] == [("GET", "/v1/models")], "no test request after a refusal"
    assert (tmp_path / "home" / "config.toml").read_text() == pin_sandbox(COMMENTED)


async def test_every_listed_model_is_written_and_the_next_setup_starts_from_the_current_one(tmp_path: Path) -> None:
    async with serve_model_server(_scenario()) as server:
        url = server.openai_base_url
        switch = {"sessionId": "$session", "configId": "model", "value": "lmstudio:llama3.3"}
        plan = {
            "steps": [
                SESSION_NEW,
                _prompt("/setup"),
                {"method": "session/set_config_option", "params": switch},
                _prompt("and now?"),
                _prompt("/setup"),
            ],
            "forms": [_service("lmstudio", url), _model("qwen3"), _service("lmstudio", url), {"action": "cancel"}],
        }
        report = await _run(tmp_path, plan)
        posts = [r.body["model"] for r in server.requests() if r.method == "POST"]
    assert [r.get("result", r.get("error")) is not None for r in report["results"]] == [True] * 5
    assert report["results"][2] == {"result": report["results"][2]["result"]}, "the picker switches at once"
    assert posts == ["qwen3", "llama3.3"], "the test request, then the prompt on the model switched to"
    assert _config(tmp_path)["providers"]["lmstudio"]["models"] == [{"id": "qwen3", "vision": False}, "llama3.3"]
    first, _, again, model_again = report["elicitations"]
    assert "default" not in first["requestedSchema"]["properties"]["base_url"], "a fresh home starts empty"
    defaults = {name: p.get("default") for name, p in again["requestedSchema"]["properties"].items()}
    assert defaults == {"preset": "lmstudio", "kind": "openai", "base_url": url, "api_key_env": "-"}
    assert model_again["requestedSchema"]["properties"]["model"]["default"] == "qwen3", "LISTED[0] is llama3.3"
