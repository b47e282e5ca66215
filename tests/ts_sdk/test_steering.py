"""Steering driven by the official TypeScript SDK 2.4.0 client with the extension shapes claude-agent-acp and
codex-acp answer (docs/architecture.md §6.9): a message while a long answer streams, while a command runs, from
inside a permission request, and at the end of a short answer, each reaching the model as a user message at the
next safe point of the same turn; with no turn running, ``promptRequired`` hands it back, an unknown
``idleBehavior`` is refused and the default starts a turn. Every frame is checked against the ACP schema."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures.model_server import serve_model_server
from tests.fakes.acp_schema import FrameLog
from tests.fakes.ts_sdk import agent_env, ts_sdk

pytestmark = pytest.mark.anyio

LONG = "This is a long answer, streamed slowly so that a steering message arrives while it streams. " * 6


def _on(text: str, *steps: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {"match": {"last_message_contains": text}, "steps": list(steps), **options}


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": call_id, "name": name, "arguments": arguments}}


SCENARIO = {
    "name": "steering",
    "models": ["m"],
    "responses": [
        _on("long answer", {"text": LONG}, chunk_delay_ms=30),
        _on("STEER-STREAM", {"text": "steered-stream: d'accord."}),
        _on("slow command", _call("t_slow", "terminal", command="sleep 1; echo slept")),
        _on("STEER-TOOL", {"text": "steered-tool: it slept, then I summarised."}),
        _on("write the file", _call("w_perm", "write_file", path="perm.txt", content="kept short\n")),
        _on("STEER-PERMISSION", {"text": "steered-permission: kept it short."}),
        _on("answer briefly", {"text": "Briefly: yes."}),
        _on("STEER-END", {"text": "steered-end: one more thing, done."}),
        _on("STEER-IDLE-NEW-TURN", {"text": "steered-idle: a turn of its own."}),
    ],
}


def _last_user_text(body: dict[str, Any]) -> str:
    message = body["messages"][-1]
    content = message["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


async def test_a_ts_sdk_client_steers_running_turns_with_the_peers_extension(tmp_path: Path) -> None:
    sdk = ts_sdk()
    async with serve_model_server(SCENARIO) as server:
        env = agent_env(tmp_path, server.openai_base_url)
        workspace = Path(env["TS_CLIENT_CWD"])
        report = await sdk.run("steering_client.mjs", [sys.executable, "-m", "hermes_acp"], env=env, timeout_s=90)
        requests = [r for r in server.requests() if r.method == "POST"]

    assert report["initialize"]["_meta"]["steering"] == {"supported": True}
    steers = report["steers"]
    assert steers["stream"] == steers["tool"] == steers["permission"] == {"outcome": "injected"}
    assert steers["end"] in ({"outcome": "injected"}, {"outcome": "startedNewTurn"})
    assert steers["idle_prompt_required"] == {"outcome": "promptRequired", "reason": "noRunningTurn"}
    assert steers["idle_unsupported"]["error"]["code"] == -32602
    assert steers["idle_default"] == {"outcome": "startedNewTurn"}
    assert {name: response["stopReason"] for name, response in report["prompts"].items()} == {
        "stream": "end_turn",
        "tool": "end_turn",
        "permission": "end_turn",
        "end": "end_turn",
    }
    asked = [r.body for r in requests if r.body is not None]
    steered = [_last_user_text(body) for body in asked if "STEER-" in _last_user_text(body)]
    assert steered == [
        "STEER-STREAM in French",
        "STEER-TOOL then summarise",
        "STEER-PERMISSION keep it short",
        "STEER-END one more thing",
        "STEER-IDLE-NEW-TURN",
    ], "each reached the model once, as the newest user message"
    assert not any("STEER-IDLE-HANDED-BACK" in str(body) or "STEER-IDLE-REFUSED" in str(body) for body in asked)
    tool_request = next(body for body in asked if _last_user_text(body) == "STEER-TOOL then summarise")
    assert tool_request["messages"][-2]["role"] == "tool", "after the command's result, never between"
    assert "slept" in tool_request["messages"][-2]["content"]
    assert (workspace / "perm.txt").read_text() == "kept short\n", "the permission was answered, then applied"

    def shown(session_id: str) -> list[str]:
        return [
            u["update"]["content"]["text"]
            for u in report["updates"]
            if u["sessionId"] == session_id and u["update"]["sessionUpdate"] == "user_message_chunk"
        ]

    assert [text for text in shown(report["sessionId"]) if text.startswith("STEER-")] == [
        "STEER-STREAM in French",
        "STEER-TOOL then summarise",
        "STEER-PERMISSION keep it short",
        "STEER-END one more thing",
    ], "the transcript shows each where it was applied (or as the prompt of the turn it started)"
    assert shown(report["idleSessionId"]) == ["STEER-IDLE-NEW-TURN"], "the prompt of the turn a steer started"
    log = FrameLog()
    for direction, message in report["frames"]:
        log.add(direction, message)
    log.check()
