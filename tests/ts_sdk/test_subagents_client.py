"""The official TypeScript SDK's client (2.4.0) advertising ``subagents`` drives the real agent over stdio: one
prompt delegates to two children, one of which asks permission for a write. The SDK parses every child update it
is sent (``subagent_update``, ``session_message``, the children's own cards and text), and every frame is checked
against the ACP 2.4.0 schema (the unstable one for the child shapes).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures.model_server import serve_model_server
from tests.fakes.acp_schema import FrameLog
from tests.fakes.ts_sdk import agent_env, ts_sdk

pytestmark = pytest.mark.anyio

CHILD = "You are a subagent"
SCENARIO: dict[str, Any] = {
    "name": "ts-sdk-subagents",
    "models": ["m"],
    "responses": [
        {
            "match": {"system_contains": CHILD, "last_message_contains": "TASK-READ"},
            "steps": [{"tool_call": {"id": "c_read", "name": "read_file", "arguments": {"path": "a.txt"}}}],
        },
        {"match": {"system_contains": CHILD, "last_message_contains": "alpha"}, "steps": [{"text": "REPORT-READ"}]},
        {
            "match": {"system_contains": CHILD, "last_message_contains": "TASK-WRITE"},
            "steps": [
                {"tool_call": {"id": "c_write", "name": "write_file", "arguments": {"path": "b.txt", "content": "b"}}}
            ],
        },
        {"match": {"system_contains": CHILD, "any_message_contains": "b.txt"}, "steps": [{"text": "REPORT-WRITE"}]},
        {
            "match": {"last_message_contains": "split the work"},
            "steps": [
                {
                    "tool_call": {
                        "id": "d_read",
                        "name": "delegate",
                        "arguments": {"task": "TASK-READ a.txt", "title": "Reader"},
                    }
                },
                {
                    "tool_call": {
                        "id": "d_write",
                        "name": "delegate",
                        "arguments": {"task": "TASK-WRITE b.txt", "title": "Writer", "role": "general"},
                    }
                },
            ],
        },
        {"match": {"last_message_contains": "REPORT-"}, "steps": [{"text": "Both children reported."}]},
    ],
}


async def test_the_ts_sdk_client_with_subagents_sees_each_child_announced_then_its_traffic(tmp_path: Path) -> None:
    sdk = ts_sdk()
    async with serve_model_server(SCENARIO) as server:
        env = agent_env(tmp_path, server.openai_base_url, pin=False, TS_CLIENT_PROMPT="please split the work")
        workspace = Path(env["TS_CLIENT_CWD"])
        (workspace / "a.txt").write_text("alpha\n")
        report = await sdk.run("subagents_client.mjs", [sys.executable, "-m", "hermes_acp"], env=env)

    parent = report["sessionNew"]["sessionId"]
    assert report["prompt"]["stopReason"] == "end_turn"
    updates = [(u["sessionId"], u["update"]) for u in report["updates"]]
    announced = {
        u["title"]: u["sessionId"]
        for s, u in updates
        if s == parent and u["sessionUpdate"] == "subagent_update" and "title" in u
    }
    assert set(announced) == {"Reader", "Writer"}
    for title, child in announced.items():
        first_announce = next(i for i, (s, u) in enumerate(updates) if s == parent and u.get("sessionId") == child)
        first_traffic = next(i for i, (s, _) in enumerate(updates) if s == child)
        assert first_announce < first_traffic, f"{title} is announced before any of its traffic"
        assert updates[first_traffic][1]["sessionUpdate"] == "session_message"
    asked = report["permissions"]
    assert len(asked) == 1 and asked[0]["sessionId"] == announced["Writer"]
    assert asked[0]["toolCall"]["title"].startswith("[Writer] ")
    assert (workspace / "b.txt").read_text() == "b"
    cards = {u["toolCallId"]: u for s, u in updates if s == parent and u.get("status") == "completed"}
    assert set(cards) >= {"d_read", "d_write"}
    log = FrameLog()
    for direction, message in report["frames"]:
        log.add(direction, message)
    log.check()
