"""JSON-RPC framing of the simulated driver and its command line (version, help, manifest, call, launcher)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from fixtures.cua_driver_sim import REPO_ROOT, command, read_journal

from .support import CALC, open_sim

pytestmark = pytest.mark.anyio
SIM = [sys.executable, "-m", "fixtures.cua_driver_sim"]


async def _run(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    _argv, env = command()
    with anyio.fail_after(20):
        done = await anyio.run_process([*SIM, *args], env=env, check=False, input=stdin)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_protocol_errors_use_the_three_recorded_codes(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        await sim.send_raw(b"{not json\n")
        assert await sim.read_message() == {"jsonrpc": "2.0", "id": None,
                                            "error": {"code": -32700, "message": "Parse error"}}  # fmt: skip
        await sim.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        await sim.send_raw(b"\n")
        missing = await sim.request("tools/call")
        assert missing["error"] == {"code": -32602, "message": "Invalid params: missing tool name"}
        await sim.send({"jsonrpc": "2.0", "id": "text-id", "method": "tools/call"})
        no_params = await sim.read_message()
        assert no_params == {"jsonrpc": "2.0", "id": "text-id",
                             "error": {"code": -32602, "message": "Invalid params: missing params"}}  # fmt: skip
        unknown = await sim.request("bogus/method")
        assert unknown["error"] == {"code": -32601, "message": "Unknown method: bogus/method"}
        unknown_tool = await sim.call("run_steps", steps=[])
        assert unknown_tool.structured == {"code": "permission_denied"}
        await sim.stdin.aclose()
        assert await sim.wait_exit() == 0


async def test_initialize_answers_2025_06_18_whatever_the_client_asks(tmp_path: Path) -> None:
    async with open_sim(tmp_path, initialize=False) as sim:
        answer = await sim.request("initialize", {"protocolVersion": "2024-11-05", "capabilities": {}})
        assert answer["result"]["protocolVersion"] == "2025-06-18"


async def test_every_stdout_line_is_json_rpc(tmp_path: Path) -> None:
    async with open_sim(tmp_path) as sim:
        for tool, arguments in [("get_window_state", CALC), ("get_desktop_state", {}), ("health_report", {}),
                                ("click", {**CALC, "x": 1, "y": 1}), ("list_apps", {})]:  # fmt: skip
            await sim.send_request("tools/call", {"name": tool, "arguments": arguments})
        await sim.stdin.aclose()
        output = bytearray()
        with anyio.fail_after(10):
            try:
                while True:
                    output.extend(await sim.stdout.receive())
            except anyio.EndOfStream:
                pass
        lines = bytes(output).split(b"\n")
        assert lines[-1] == b""
        messages = [json.loads(line) for line in lines[:-1]]
        assert [message["id"] for message in messages] == [2, 3, 4, 5, 6]  # 1 was initialize
        assert all(message["jsonrpc"] == "2.0" and "result" in message for message in messages)
        assert await sim.wait_exit() == 0


async def test_version_help_status_and_manifest() -> None:
    code, out, _ = await _run("--version")
    assert (code, out.strip()) == (0, "cua-driver 0.37.0")
    code, out, _ = await _run("--version", "--profile", "0.2x")
    assert out.strip() == "cua-driver 0.23.0"
    code, out, _ = await _run("--help")
    assert code == 0
    assert "--no-overlay" in out
    assert (await _run("status", "--socket", "/nonexistent"))[0] == 0
    code, out, _ = await _run("manifest")
    manifest = json.loads(out)
    assert manifest["binary_version"] == "0.37.0"
    assert manifest["mcp_invocation"]["args"][:3] == ["-m", "fixtures.cua_driver_sim", "mcp"]
    flags = {sub["name"]: {arg["name"] for arg in sub["args"]} for sub in manifest["subcommands"]}
    assert {"--socket", "--grant"} <= flags["mcp"]
    assert {"--socket", "--permission-mode", "--capability-manifest", "--approve-capability-manifest",
            "--embedded"} <= flags["serve"]  # fmt: skip
    code, _, err = await _run("mcp", "--profile", "9.9")
    assert code == 2
    assert "--profile must be one of" in err


async def test_call_prints_structured_content_and_fails_on_refusals() -> None:
    code, out, _ = await _run("call", "get_screen_size")
    assert (code, json.loads(out)) == (0, {"height": 800, "scale_factor": 1.0, "width": 1280})
    code, out, _ = await _run("call", "kill_app", '{"pid": 1}')
    assert code == 1
    assert json.loads(out)["refusal"]["code"] == "foreign_process_termination_denied"


async def test_the_manifest_invocation_starts_a_working_server(tmp_path: Path) -> None:
    _, out, _ = await _run("manifest")
    invocation = json.loads(out)["mcp_invocation"]
    _argv, env = command()
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}) + "\n"
    with anyio.fail_after(20):
        done = await anyio.run_process([invocation["command"], *invocation["args"]], env=env, input=request.encode(),
                                       cwd=os.fspath(tmp_path))  # fmt: skip
    assert json.loads(done.stdout)["result"]["serverInfo"]["name"] == "cua-driver"


def test_command_builds_a_spawnable_environment(tmp_path: Path) -> None:
    argv, env = command(
        profile="legacy", faults=[{"knob": "uinput"}], journal=tmp_path / "j.jsonl", apps=["calculator"]
    )
    assert argv[1] == "-X" and argv[2].startswith("pycache_prefix=") and argv[3] == "-c"
    assert REPO_ROOT in argv[4] and "fixtures.cua_driver_sim" in argv[4], "the argv alone finds the package"
    assert argv[5:] == ["mcp", "--no-overlay", "--profile", "legacy", "--faults", '[{"knob": "uinput"}]',
                        "--apps", "calculator", "--journal", os.fspath(tmp_path / "j.jsonl")]  # fmt: skip
    assert env["PYTHONPATH"].split(os.pathsep)[0] == REPO_ROOT
    assert env["FAKE_CUA_JOURNAL"] == os.fspath(tmp_path / "j.jsonl")
    assert "FAKE_CUA_STATE" not in env
    assert read_journal(tmp_path / "absent.jsonl") == []


async def test_apps_flag_controls_what_runs_and_launch_app_starts_the_rest(tmp_path: Path) -> None:
    async with open_sim(tmp_path, apps=["calculator"]) as sim:
        assert sim.state()["texteditor"]["running"] is False
        apps = await sim.call("list_apps")
        editor = next(app for app in apps.structured["apps"] if app["name"] == "TextEditor")
        assert (editor["pid"], editor["running"], editor["launch_path"]) == (0, False, "texteditor")
        launched = await sim.call("launch_app", bundle_id="com.example.texteditor")
        pid = launched.structured["pid"]
        assert launched.structured["windows"][0]["title"] == "Untitled"
        state = sim.state()
        assert state["texteditor"]["launched_by_driver"] is True
        assert state["frontmost_window_id"] == CALC["window_id"], "launch_app does not take focus"
        killed = await sim.call("kill_app", pid=pid)
        assert killed.structured["terminated"] is True
        assert sim.state()["texteditor"]["running"] is False
