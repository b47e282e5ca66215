"""initialize over the wire: golden answer, version negotiation, capability shapes, schema validity."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from acp import schema

from hermes_acp.jsonrpc.boundary import ClientRequestError
from hermes_acp.protocol.initialize import initialize_result
from hermes_acp.protocol.v2.version import negotiate
from tests.fakes.server import open_pair, open_raw

pytestmark = pytest.mark.anyio
GOLDEN = Path(__file__).parent.parent / "golden"


async def test_initialize_answer_matches_golden(tmp_path: Path) -> None:
    async with open_raw(tmp_path) as raw:
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        response = await raw.response(1)
    result = response["result"]
    result["agentInfo"]["version"] = "<version>"
    terminal_auth = result["authMethods"][0]["_meta"]["terminal-auth"]
    assert os.path.isabs(terminal_auth["command"]), "an editor that launched us by path must find the setup too"
    assert terminal_auth["args"][-1] == "--setup"
    terminal_auth.update(command="<the running executable>", args=["<…>", "--setup"])
    remote = result["_meta"]["hermes"]["remote"]
    assert remote["serverEpoch"], "the server epoch the connection's cursors are made with"
    remote["serverEpoch"] = "<epoch>"
    assert result == json.loads((GOLDEN / "initialize.json").read_text())


async def test_capabilities_are_objects_never_booleans(tmp_path: Path) -> None:
    async with open_raw(tmp_path) as raw:
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        caps = (await raw.response(1))["result"]["agentCapabilities"]
    for name in ("list", "resume", "close", "fork", "delete"):
        assert caps["sessionCapabilities"][name] == {}, name
    assert caps["loadSession"] is True
    assert caps["promptCapabilities"] == {"image": True, "audio": False, "embeddedContext": True}
    assert caps["mcpCapabilities"] == {"http": True, "sse": True}


async def test_sdk_client_reads_the_answer(tmp_path: Path) -> None:
    async with open_pair(tmp_path, initialize=False) as pair:
        response = await pair.conn.initialize(protocol_version=1)
    assert response.protocol_version == 1
    assert response.agent_info is not None and response.agent_info.name == "hermes-acp"
    assert response.agent_info.title
    caps = response.agent_capabilities
    assert caps is not None and caps.session_capabilities is not None
    assert caps.session_capabilities.resume is not None and caps.session_capabilities.delete is not None
    assert caps.auth is not None and caps.auth.logout is not None


@pytest.mark.parametrize(("requested", "answered"), [(1, 1), (2, 2), (7, 2), ("2024-11-05", 1), (True, 1)])
def test_version_negotiation_answers_highest_supported_not_above_client(requested: object, answered: int) -> None:
    """The TS SDK router's rule: v1 and v2 are served, so 7 gets 2; a legacy odd value still gets v1."""
    assert negotiate(requested) == answered


def test_version_0_is_below_every_supported_one_and_refused() -> None:
    """The router answers -32022 naming both sides (before v2, 0 got our lowest, 1)."""
    with pytest.raises(ClientRequestError) as refused:
        negotiate(0)
    assert refused.value.code == -32022
    assert refused.value.data == {"requested": 0, "supported": [1, 2]}


def test_answer_validates_against_the_sdk_schema() -> None:
    for caps in ({}, {"auth": {"terminal": True}}):
        result = initialize_result({"protocolVersion": 1, "clientCapabilities": caps}, env={})
        parsed = schema.InitializeResponse.model_validate(result)
        assert parsed.protocol_version == 1


def test_terminal_auth_method_when_client_supports_it_else_legacy_meta() -> None:
    with_terminal = initialize_result(
        {"protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": True}}}, env={}
    )
    setup = with_terminal["authMethods"][0]
    assert setup["type"] == "terminal" and setup["args"] == ["--setup"]
    legacy = initialize_result({"protocolVersion": 1}, env={})["authMethods"][0]
    assert "type" not in legacy
    assert legacy["_meta"]["terminal-auth"]["args"][-1] == "--setup"


def test_the_agent_method_names_each_provider_variable_and_no_env_var_type_is_left(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        '[providers.corp]\nkind = "openai"\nbase_url = "http://x"\napi_key_env = "CORP_KEY"\n'
    )
    methods = initialize_result({"protocolVersion": 1}, env={"HERMES_ACP_HOME": str(home)})["authMethods"]
    assert [m.get("type") for m in methods] == [None, None], "only the agent type (and terminal) exist in the schema"
    from_env = methods[1]
    assert from_env["id"] == "hermes-env"
    for needle in ("OPENAI_API_KEY for openai", "ANTHROPIC_API_KEY for anthropic", "CORP_KEY for corp"):
        assert needle in from_env["description"]


def test_the_setup_command_is_the_running_executable_by_absolute_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["hermes-acp"])
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    assert (Path(sys.executable).parent / "hermes-acp").exists(), "the venv has the console script"
    command = initialize_result({"protocolVersion": 1}, env={})["authMethods"][0]["_meta"]["terminal-auth"]
    assert command == {
        "label": "Set up Hermes ACP",
        "command": str(Path(sys.executable).parent / "hermes-acp"),
        "args": ["--setup"],
    }
    monkeypatch.setattr(sys, "argv", [str(Path("hermes_acp") / "__main__.py")])
    module = initialize_result({"protocolVersion": 1}, env={})["authMethods"][0]["_meta"]["terminal-auth"]
    assert module["command"] == os.path.abspath(sys.executable)
    assert module["args"] == ["-m", "hermes_acp", "--setup"]


async def test_initialize_without_protocol_version_is_invalid_params(tmp_path: Path) -> None:
    async with open_raw(tmp_path) as raw:
        await raw.send({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {}})
        response = await raw.response(9)
    assert response["error"]["code"] == -32602
    assert "protocolVersion" in response["error"]["message"]


def test_a_config_path_that_is_not_a_file_does_not_block_the_answer(tmp_path: Path) -> None:
    """A FIFO where config.toml should be would block a read forever; initialize skips it, as the settings do."""
    home = tmp_path / "home"
    home.mkdir()
    os.mkfifo(home / "config.toml")
    script = (
        "from hermes_acp.protocol.initialize import initialize_result\n"
        f"methods = initialize_result({{'protocolVersion': 1}}, env={{'HERMES_ACP_HOME': {str(home)!r}}})\n"
        "print(methods['authMethods'][1]['id'])"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hermes-env"
