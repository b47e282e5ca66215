"""What a client is offered for setting a provider up, by what it advertised: forms get the in-editor setup first
(``hermes-setup-form``, an ``agent`` method) and ``/setup`` opens it; a client without forms keeps the terminal
method and text instructions, and is told so if it asks for the form method anyway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from hermes_acp.protocol.initialize import initialize_result
from hermes_acp.version import __version__
from tests.fakes.agent_process import REPO
from tests.fakes.server import open_pair, open_raw

pytestmark = pytest.mark.anyio


def test_a_client_with_forms_is_offered_the_in_editor_setup_first() -> None:
    caps = {"elicitation": {"form": {}}, "auth": {"terminal": True}}
    methods = initialize_result({"protocolVersion": 1, "clientCapabilities": caps}, {})["authMethods"]
    assert [(m["id"], m.get("type", "agent")) for m in methods] == [
        ("hermes-setup-form", "agent"),
        ("hermes-setup", "terminal"),
        ("hermes-env", "agent"),
    ]
    assert "terminal" in methods[1]["name"]


@pytest.mark.parametrize("caps", [{}, {"elicitation": {}}, {"elicitation": {"form": None}}, {"elicitation": True}])
def test_a_client_without_forms_keeps_the_terminal_method(caps: dict[str, object]) -> None:
    methods = initialize_result({"protocolVersion": 1, "clientCapabilities": caps}, {})["authMethods"]
    assert [m["id"] for m in methods] == ["hermes-setup", "hermes-env"]
    assert methods[0]["name"] == "Set up Hermes ACP"


async def test_the_form_method_from_a_client_without_forms_names_the_terminal_one(tmp_path: Path) -> None:
    async with open_raw(tmp_path) as raw:
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        await raw.response(1)
        await raw.send(
            {"jsonrpc": "2.0", "id": 2, "method": "authenticate", "params": {"methodId": "hermes-setup-form"}}
        )
        error = (await raw.response(2))["error"]
    assert error["code"] == -32602
    assert "elicitation.form" in error["message"] and "'hermes-setup'" in error["message"]


async def test_slash_setup_without_forms_says_how_to_run_it_in_a_terminal(tmp_path: Path) -> None:
    async with open_pair(tmp_path) as pair:
        session_id = await pair.new_session()
        response = await pair.prompt(session_id, "/setup")
        text = pair.client.text(session_id)
    assert response.stop_reason == "end_turn"
    assert "cannot show forms" in text and "hermes-acp --setup" in text
    assert not (pair.settings.home / "config.toml.bak").exists()


def test_run_from_uv_s_cache_the_terminal_method_is_a_command_that_outlives_the_cache(tmp_path: Path) -> None:
    """``uvx hermes-acp-server`` runs from an environment in uv's cache (a folder with a CACHEDIR.TAG), which ``uv
    cache prune`` or an upgrade removes: the legacy terminal method names ``uvx hermes-acp-server==<version>``."""
    cache = tmp_path / "uv-cache"
    environment = cache / "archive-v0" / "abc123"
    venv.EnvBuilder(with_pip=False).create(environment)
    (cache / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    tools = tmp_path / "bin"
    tools.mkdir()
    uvx = tools / "uvx"
    uvx.write_text("#!/bin/sh\n")
    uvx.chmod(0o755)
    script = (
        "import json, os\nfrom hermes_acp.protocol.initialize import auth_methods\n"
        "print(json.dumps(auth_methods(os.environ, terminal_auth=False)[0]['_meta']['terminal-auth']))"
    )
    site = sysconfig.get_paths()["purelib"]
    env = {"PATH": str(tools), "PYTHONPATH": os.pathsep.join([str(REPO), site])}
    for in_cache, expected in ((False, None), (True, [str(uvx), f"hermes-acp-server=={__version__}", "--setup"])):
        python = environment / "bin" / "python" if in_cache else Path(sys.executable)
        done = subprocess.run([python, "-c", script], env=env, capture_output=True, text=True, timeout=60, check=True)
        method = json.loads(done.stdout)
        if expected is None:
            assert method["command"] == os.path.abspath(sys.executable), "outside a cache: the running interpreter"
        else:
            assert [method["command"], *method["args"]] == expected
