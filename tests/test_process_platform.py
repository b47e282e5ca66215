"""The platform seam through the real process: names are folded in every policy decision (``accept_edits`` asks
before writing ``.GIT/hooks/pre-commit``; ``.ENV`` is masked in the sandbox), and the portable process tree Windows
uses, forced here with ``HERMES_ACP_PORTABLE=tree``, ends a command's descendant that left its process group, which
the POSIX group does not reach."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.acp_client import RecordingClient
from tests.fakes.agent_process import spawn_agent
from tests.fakes.editor_client import EditorClient
from tests.security.support import outside_tmp, require_bwrap

pytestmark = pytest.mark.anyio


def _writes(*paths: str) -> dict[str, Any]:
    steps = [
        {"tool_call": {"id": f"w{i}", "name": "write_file", "arguments": {"path": path, "content": "echo hook\n"}}}
        for i, path in enumerate(paths)
    ]
    return {
        "name": "writes",
        "responses": [
            {"match": {"last_message_contains": "Write"}, "steps": steps},
            {"steps": [{"text": "Done."}], "repeat": True},
        ],
    }


def _command(command: str, timeout_s: float = 30) -> dict[str, Any]:
    call = {"id": "c1", "name": "terminal", "arguments": {"command": command, "timeout_s": timeout_s}}
    return {
        "name": "command",
        "responses": [
            {"match": {"last_message_contains": "Run"}, "steps": [{"tool_call": call}]},
            {"steps": [{"text": "Done."}], "repeat": True},
        ],
    }


async def test_accept_edits_asks_before_writing_a_git_hook_named_in_capitals(tmp_path: Path) -> None:
    client = RecordingClient(answers=["allow_once"])
    async with spawn_agent(tmp_path, _writes("plain.txt", ".GIT/hooks/pre-commit"), client=client) as agent:
        session_id = await agent.new_session()
        with anyio.fail_after(30):
            await agent.conn.set_session_mode(session_id=session_id, mode_id="accept_edits")
        await agent.prompt(session_id, "Write the files.")
        workspace = agent.workspace
    asked = [p.tool_call["toolCallId"] for p in client.permissions]
    assert asked == ["w1"], "the plain file is written without asking; the hook asks"
    assert (workspace / "plain.txt").exists() and (workspace / ".GIT" / "hooks" / "pre-commit").exists()


async def test_a_secret_named_in_capitals_is_masked_in_the_sandbox(tmp_path: Path) -> None:
    require_bwrap()
    with outside_tmp() as base:
        workspace = base / "workspace"
        workspace.mkdir()
        (workspace / ".ENV").write_text("TOKEN=upper-case-4711\n")
        (workspace / "visible.txt").write_text("plain-4712\n")
        scenario = _command("cat visible.txt .ENV; echo end")
        async with spawn_agent(base, scenario, sandbox="auto") as agent:
            session_id = await agent.new_session()
            with anyio.fail_after(30):
                await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
            await agent.prompt(session_id, "Run it.")
            shown = json.dumps(agent.client.cards(session_id))
    assert "plain-4712" in shown and "end" in shown
    assert "upper-case-4711" not in shown


@contextlib.contextmanager
def _reaped(pid_file: Path) -> Iterator[None]:
    """Whatever the test left running is ended afterwards."""
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


@pytest.mark.parametrize(("portable", "survives"), [("tree", False), ("", True)])
async def test_the_portable_tree_ends_a_descendant_that_left_the_process_group(
    tmp_path: Path, portable: str, survives: bool
) -> None:
    """``setsid`` takes the sleep out of the command's process group: the group's end misses it, psutil's tree (found
    through its parent while the command still runs) does not. The call's own time limit ends the command. Without
    process or memory limits, so that no cgroup (whose removal would end the sleep too) is made."""
    pid_file = tmp_path / "workspace" / "escaped.pid"
    scenario = _command("setsid sleep 300 & echo $! > escaped.pid; wait", timeout_s=2)
    env = {"HERMES_ACP_PORTABLE": portable}
    with _reaped(pid_file):
        no_cgroup = "[sandbox.limits]\nprocesses = 0\nmemory_mib = 0\n"
        async with spawn_agent(tmp_path, scenario, env=env, config_extra=no_cgroup) as agent:
            session_id = await agent.new_session()
            with anyio.fail_after(30):
                await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
            await agent.prompt(session_id, "Run it.")
            shown = json.dumps(agent.client.cards(session_id))
        assert "Timed out" in shown
        assert EditorClient.alive(int(pid_file.read_text())) is survives
