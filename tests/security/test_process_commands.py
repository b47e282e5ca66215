"""Through the real process: commands a hostile model runs are contained by the sandbox, hard blocks are refused
before any shell starts (local and in the editor's terminal), secrets stay out of commands, frames, the store, the
logs and ``--check``, and where bubblewrap is missing the session says so once and every command asks."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from fixtures.model_server import load_scenario
from tests.fakes.agent_process import AgentProcess, spawn_agent
from tests.fakes.editor_client import EditorClient

from .evasions import EVASIONS
from .support import require_bwrap, shell_shim

pytestmark = pytest.mark.anyio

KEY = "sk-live-0123456789-must-stay-put"
KEYED_PROVIDER = '[providers.keyed]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "LLM_CRED"\n'
TURN_S = 90.0


def calls(commands: list[str]) -> dict[str, Any]:
    steps = [
        {"tool_call": {"id": f"call_{i}", "name": "terminal", "arguments": {"command": c}}}
        for i, c in enumerate(commands)
    ]
    return {"name": "commands", "responses": [{"steps": steps}, {"steps": [{"text": "done"}]}]}


def secret_env(ws: Path) -> dict[str, str]:
    return {
        "HOME": str(ws / "home"),
        "LLM_CRED": KEY,
        "OPENAI_API_KEY": KEY,
        "GITHUB_TOKEN": KEY,
        "HERMES_ACP_API_KEY": KEY,
        "SERVICE_PASSWORD": KEY,
    }


def tool_results(agent: AgentProcess) -> dict[str, str]:
    """The tool results the model was given in its second request, by call id."""
    messages = agent.model_requests()[1].body["messages"]
    return {m["tool_call_id"]: m["content"] for m in messages if m.get("role") == "tool"}


async def test_a_hostile_command_in_dont_ask_is_contained(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "workspace"
    (ws / "home" / ".ssh").mkdir(parents=True)
    (ws / "home" / ".ssh" / "id_rsa").write_text("-----BEGIN PRIVATE KEY-----")
    (ws / ".env").write_text(f"LLM_CRED={KEY}")
    outside = tmp_path / "outside.txt"
    commands = [
        "env",
        "cat ~/.ssh/id_rsa .env",
        f"echo x > {outside}; echo y > /etc/hermes-escape; echo z > inside.txt",
        "kill -TERM {pid}; kill -9 {pid}; echo still here",
    ]
    async with spawn_agent(tmp_path, env=secret_env(ws), config_extra=KEYED_PROVIDER, sandbox="auto") as agent:
        commands[-1] = commands[-1].format(pid=agent.process.pid)
        agent.model.set_scenario(load_scenario(calls(commands)))
        session_id = await agent.new_session()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        with anyio.fail_after(TURN_S):
            response = await agent.prompt(session_id, "run them")
        assert response.stop_reason == "end_turn"
        assert agent.process.returncode is None, "the agent survived the kill"
        assert agent.client.permissions == [], "dont_ask runs sandboxed commands without asking"
        results = tool_results(agent)
        assert "PRIVATE KEY" not in results["call_1"] and "hidden from commands" in results["call_1"]
        assert "Read-only file system" in results["call_2"] and "[Sandbox: a write outside" in results["call_2"]
        assert "PATH=" in results["call_0"], "the environment is there, without its secrets"
        assert "No such process" in results["call_3"] and "still here" in results["call_3"]
        frames = b"".join(agent.stdout_lines)
        assert KEY.encode() not in frames
        assert await agent.shutdown() == 0
    assert not outside.exists() and not Path("/etc/hermes-escape").exists()
    assert (ws / "inside.txt").read_text() == "z\n"
    assert all(KEY not in text for text in results.values())
    store = (tmp_path / "home" / "state.db").read_bytes() + _wal(tmp_path / "home" / "state.db")
    assert KEY.encode() not in store, "the key never reached the store"
    assert KEY not in (tmp_path / "agent-stderr.log").read_text(), "the key never reached the logs"


def _wal(db: Path) -> bytes:
    wal = db.with_name(db.name + "-wal")
    return wal.read_bytes() if wal.exists() else b""


async def test_check_never_prints_a_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(KEYED_PROVIDER + 'models = ["m"]\n')
    env = {**os.environ, "HERMES_ACP_HOME": str(home), "LLM_CRED": KEY, "OPENAI_API_KEY": KEY}
    done = await anyio.run_process([sys.executable, "-m", "hermes_acp", "--check"], env=env, check=False)
    output = (done.stdout + done.stderr).decode()
    assert "LLM_CRED set" in output and "sandbox" in output.lower()
    assert KEY not in output


@pytest.mark.parametrize("where", ["local", "editor"])
async def test_every_evasion_is_refused_before_a_shell_starts(tmp_path: Path, where: str) -> None:
    ws = tmp_path / "workspace"
    shim = shell_shim(ws / ".bin")
    commands = [*EVASIONS.values(), "echo control"]
    client = EditorClient() if where == "editor" else None
    try:
        async with spawn_agent(
            tmp_path, calls(commands), env={"PATH": shim.path()}, client=client, initialize=False
        ) as agent:
            capabilities = EditorClient.CAPABILITIES if client is not None else {}
            with anyio.fail_after(60):
                await agent.conn.initialize(
                    protocol_version=1, client_capabilities=acp.schema.ClientCapabilities.model_validate(capabilities)
                )
            session_id = await agent.new_session()
            await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
            with anyio.fail_after(TURN_S):
                await agent.prompt(session_id, "run them")
            cards = agent.client.cards(session_id)
    finally:
        if client is not None:
            await client.aclose()
    for index, (kind, command) in enumerate(EVASIONS.items()):
        card = cards[f"call_{index}"]
        text = json.dumps(card.get("content"))
        assert card["status"] == "failed" and "hard_blocked" in text, f"{kind}: {command!r} -> {text}"
    assert cards[f"call_{len(EVASIONS)}"]["status"] == "completed"
    assert shim.calls() == ["-c echo control"], "only the allowed command reached a shell"
    if client is not None:
        creates = [params for method, params in client.calls if method == "terminal/create"]
        assert len(creates) == 1, "the editor was asked to run only the allowed command"


def _bare_path(folder: Path) -> str:
    """A PATH with a shell and coreutils but no bwrap."""
    folder.mkdir(parents=True)
    for name in ("bash", "sh", "env", "true", "cat", "echo"):
        real = shutil.which(name, path="/usr/bin:/bin")
        assert real is not None
        (folder / name).symlink_to(real)
    return str(folder)


async def test_without_bubblewrap_the_session_says_so_once_and_every_command_asks(tmp_path: Path) -> None:
    path = _bare_path(tmp_path / "bare-bin")
    assert shutil.which("bwrap", path=path) is None
    scenario = calls(["echo one"])
    scenario["responses"].append({"steps": [{"text": "second turn"}]})
    async with spawn_agent(tmp_path, scenario, env={"PATH": path}, sandbox="auto") as agent:
        agent.client.answers = ["allow_once"]
        session_id = await agent.new_session()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        with anyio.fail_after(TURN_S):
            await agent.prompt(session_id, "run it")
            await agent.prompt(session_id, "again")
        told = [
            text for text in agent.client.transcript(session_id)["messages"].values() if "without a sandbox" in text
        ]
        notices = [u for u in agent.client.of_kind("notice", session_id) if "sandbox" in json.dumps(u)]
        assert len(told) + len(notices) == 1, "said once per session"
        [asked] = agent.client.permissions
        kinds = {option["kind"] for option in asked.options}
        assert "allow_always" not in kinds, "no 'always' for a command without a sandbox"
        assert agent.client.cards(session_id)["call_0"]["status"] == "completed"
