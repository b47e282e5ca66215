"""The official TypeScript SDK's ACP v2 client (2.4.0, ``experimental/v2/unstable``) drives the real ``hermes-acp``
through the whole v2 flow (``v2_client.mjs``): initialize v2, a new session, a prompt that streams reasoning and
text and runs a command behind a permission question, the same prompt sent twice under one operation id, a prompt
held until ``session/cancel``, ``session/list``, ``session/resume`` with the history, a rejoin after a cursor,
``session/status``, ``terminal/cancel`` of a running command through the SDK's ``cancelTerminal``,
``tool_call/cancel`` and ``session/resume`` refused, ``session/close``, ``auth/logout``; over
stdio and through a session host's remote door (WebSocket and Streamable HTTP). Every frame in both directions is
checked against the v2 schema and its closed lists, and every update the agent sent was handed over by the SDK
(it drops one it cannot parse without a word)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures.model_server import serve_model_server
from tests.fakes.acp_schema import FrameLog, negotiated_version
from tests.fakes.host_process import shared_home
from tests.fakes.ts_sdk import agent_env, ts_sdk

pytestmark = pytest.mark.anyio

SCENARIO = {
    "name": "v2-lane",
    "responses": [
        {
            "match": {"last_message_contains": "say hello again"},
            "steps": [{"text": "Hello once more."}],
        },
        {
            "match": {"last_message_contains": "say hello"},
            "steps": [
                {"reasoning": "Say it, then run it."},
                {"text": "Hello v2."},
                {"tool_call": {"id": "call_echo", "name": "terminal", "arguments": {"command": "echo hi"}}},
            ],
        },
        {
            "match": {"last_message_contains": "run the long one"},
            "steps": [
                {
                    "tool_call": {
                        "id": "call_long",
                        "name": "terminal",
                        "arguments": {"command": "echo started; sleep 300"},
                    }
                }
            ],
        },
        {"match": {"last_message_contains": "Stopped from the editor"}, "steps": [{"text": "You stopped it."}]},
        {"match": {"last_message_contains": "hi"}, "steps": [{"text": "The command ran."}]},
        {"match": {"last_message_contains": "hold please"}, "hold_after_chunks": 1, "steps": [{"text": "Holding"}]},
    ],
}


def _sent(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [m["params"] for d, m in report["frames"] if d == "to_client" and m.get("method") == "session/update"]


def _answer_at(frames: list[Any], result: Any) -> int:
    return next(i for i, (_, m) in enumerate(frames) if "method" not in m and m.get("result") == result)


def _seq(cursor: str) -> int:
    return int(cursor.split(".")[1])


def _check_report(report: dict[str, Any]) -> None:
    log = FrameLog()
    for direction, message in report["frames"]:
        log.add(direction, message)
    assert negotiated_version(log.frames) == 2
    log.check()
    assert report["updates"] == _sent(report), "the SDK handed over every update the agent sent"

    assert report["initialize"]["protocolVersion"] == 2
    assert report["initialize"]["_meta"]["hermes"]["remote"]["serverEpoch"]
    seen = [kind for kind in report["seen"] if kind not in ("available_commands_update", "usage_update")]
    assert seen[0] == "state_update" and seen[-1] == "stop:end_turn", seen
    assert {"user_message", "agent_thought_chunk", "agent_message_chunk", "agent_thought", "agent_message"} <= set(seen)
    assert {"tool_call_update", "terminal_update", "terminal_output_chunk"} <= set(seen)
    assert "tool_call" not in seen and "plan" not in seen and "current_mode_update" not in seen
    user = next(u["update"] for u in report["updates"] if u["update"]["sessionUpdate"] == "user_message")
    assert user["messageId"] == report["prompt"]["messageId"], "the prompt's answer names its user message"
    states = [u["update"] for u in report["updates"] if u["update"]["sessionUpdate"] == "state_update"]
    assert [s["state"] for s in states[:4]] == ["running", "requires_action", "running", "idle"]
    permission, long_permission = report["permissions"]
    assert permission["title"] == "Run this command?" and permission["subject"]["type"] == "tool_call"
    assert permission["subject"]["toolCall"]["toolCallId"] == "call_echo"
    assert long_permission["subject"]["toolCall"]["toolCallId"] == "call_long"

    assert report["couldCancel"] is True, "the SDK saw the running terminal advertise cancel"
    assert report["terminalCancel"] == {} and report["canCancelAfter"] is False
    assert report["cancelled"][-1] == "stop:end_turn", "the turn went on: the call settled with the command's end"
    long_updates = [u["update"] for u in report["updates"] if u["update"].get("terminalId") == "call_long"]
    assert long_updates[-1]["exitStatus"].get("signal") in {"SIGTERM", "SIGKILL"}, long_updates[-1]
    long_call = [
        u["update"]
        for u in report["updates"]
        if u["update"]["sessionUpdate"] == "tool_call_update" and u["update"]["toolCallId"] == "call_long"
    ]
    assert long_call[-1]["status"] == "failed"

    first, repeated = report["first"], report["repeated"]
    assert first["messageId"] == repeated["messageId"], "a prompt resent with its operation id is answered as the first"
    assert repeated["_meta"]["hermes"]["operationReceipt"]["status"] == "committed"
    assert report["seenOnce"].count("user_message") == 1, "and applied once"
    assert report["held"]["messageId"] and report["stopped"][-1] == "stop:cancelled"

    resumed = report["frames"][report["resumeAt"] :]
    answer = _answer_at(resumed, report["resume"])
    replayed = [m["params"]["update"] for _, m in resumed[:answer] if m.get("method") == "session/update"]
    replayed_states = [u for u in replayed if u["sessionUpdate"] == "state_update"]
    assert replayed_states == [replayed[-1]], "the history, then exactly one snapshot"
    assert replayed[-1]["state"] == "idle"
    kinds = [u["sessionUpdate"] for u in replayed]
    assert kinds.count("user_message") == 4, "every prompt of the history (the resent one once)"
    assert report["resume"]["_meta"]["hermes"]["recovery"] == "full"

    cursor = report["cursor"]
    missed = {
        p["_meta"]["hermes"]["cursor"]
        for p in report["updates"]
        if p.get("_meta", {}).get("hermes", {}).get("cursor") and _seq(p["_meta"]["hermes"]["cursor"]) > _seq(cursor)
    }
    rejoined = report["frames"][report["rejoinAt"] :]
    answer = _answer_at(rejoined, report["rejoin"])
    after = [
        m["params"]
        for _, m in rejoined[:answer]
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] != "available_commands_update"
    ]
    assert report["rejoin"]["_meta"]["hermes"]["recovery"] == "replay"
    assert after[-1]["update"]["sessionUpdate"] == "state_update"
    got = {p["_meta"]["hermes"]["cursor"] for p in after}
    assert got == missed, "exactly what came after the cursor (the snapshot carries the last one)"
    assert [p["update"]["sessionUpdate"] for p in after[:-1]] == ["user_message", "agent_message"], (
        "the held prompt and what it streamed until it was cancelled (its end renders nothing on a replay)"
    )

    assert report["status"]["status"] == "open" and report["status"]["state"]["state"] == "idle"
    assert report["toolCancel"]["code"] == -32602
    assert report["resumeMissing"]["code"] == -32002 and report["resumeMissing"]["data"]["sessionId"] == "missing"
    assert report["close"] == {} and report["logout"] == {}


async def test_the_ts_sdk_v2_client_runs_the_whole_flow_over_stdio(tmp_path: Path) -> None:
    sdk = ts_sdk()
    async with serve_model_server(SCENARIO) as server:
        env = agent_env(tmp_path, server.openai_base_url)
        report = await sdk.run("v2_client.mjs", ["stdio", sys.executable, "-m", "hermes_acp"], env=env, timeout_s=120)
    _check_report(report)


@pytest.mark.parametrize("transport", ["ws", "http"])
async def test_the_ts_sdk_v2_client_runs_the_whole_flow_through_the_remote_door(tmp_path: Path, transport: str) -> None:
    sdk = ts_sdk()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    door = f'\n[host]\nlisten = ["ws://127.0.0.1:{port}"]\n'
    async with shared_home(tmp_path, SCENARIO, config_extra=door) as shared:
        await shared.start_host()
        token = (shared.home / "host.token").read_text().strip()
        env = {**shared.env, "TS_CLIENT_TOKEN": token, "TS_CLIENT_CWD": str(shared.workspace)}
        scheme = "ws" if transport == "ws" else "http"
        report = await sdk.run("v2_client.mjs", [transport, f"{scheme}://127.0.0.1:{port}/acp"], env=env, timeout_s=120)
    _check_report(report)
