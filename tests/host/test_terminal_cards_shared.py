"""Terminal cards in a shared session, through a real host and front doors: the stored events are the same for every
connection and each is rendered for its own capabilities. A Zed window (``_meta.terminal_output``) runs a command:
it streams into Zed's terminal card; a window without terminal cards attached to the same session sees the text
view; a second Zed window that catches up mid-command gets the terminal with its output so far, then the rest
live, and ends with the same terminal as the first."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.acp_client import RecordingClient
from tests.fakes.host_process import shared_home

pytestmark = pytest.mark.anyio

WAIT_S = 30.0
COMMAND = "echo one; read _ < gate; echo two"
SCENARIO: dict[str, Any] = {
    "name": "shared-terminal",
    "responses": [
        {
            "match": {"last_message_contains": "run the gated one"},
            "steps": [{"tool_call": {"id": "call_gate", "name": "terminal", "arguments": {"command": COMMAND}}}],
        },
        {"repeat": True, "steps": [{"text": "Done."}]},
    ],
}
ZED = {"terminal": True, "_meta": {"terminal_output": True}}


def _frames(client: RecordingClient, session_id: str) -> list[dict[str, Any]]:
    return client.tool_frames("call_gate", session_id)


def _terminal_text(client: RecordingClient, session_id: str) -> str:
    """What Zed's display terminal holds: every ``terminal_output`` appended, in order."""
    meta = [f.get("_meta") or {} for f in _frames(client, session_id)]
    return "".join(m["terminal_output"]["data"] for m in meta if "terminal_output" in m)


def _exit(client: RecordingClient, session_id: str) -> dict[str, Any] | None:
    ends = [m["terminal_exit"] for f in _frames(client, session_id) if "terminal_exit" in (m := f.get("_meta") or {})]
    return ends[-1] if ends else None


async def test_each_connection_sees_the_command_its_own_way_and_a_late_zed_catches_up(tmp_path: Path) -> None:
    async with shared_home(tmp_path, SCENARIO) as shared:
        os.mkfifo(shared.workspace / "gate")
        await shared.start_host()
        async with (
            shared.front_door(initialize=False) as zed,
            shared.front_door() as plain,
            shared.front_door(initialize=False) as late,
        ):
            await zed.initialize(**ZED)
            await late.initialize(**ZED)
            session = (await zed.conn.new_session(cwd=str(shared.workspace), mcp_servers=[])).session_id
            await zed.conn.set_session_mode(session_id=session, mode_id="dont_ask")
            await plain.conn.resume_session(session_id=session, cwd=str(shared.workspace), mcp_servers=[])
            async with anyio.create_task_group() as group:
                answers: list[Any] = []

                async def prompt() -> None:
                    answers.append(await zed.prompt(session, "please run the gated one"))

                group.start_soon(prompt)
                await zed.client.wait_for(lambda: _terminal_text(zed.client, session) == "one\n", timeout=WAIT_S)
                await late.conn.load_session(session_id=session, cwd=str(shared.workspace), mcp_servers=[])
                await late.client.wait_for(lambda: _terminal_text(late.client, session) == "one\n", timeout=WAIT_S)
                await anyio.to_thread.run_sync((shared.workspace / "gate").write_text, "go\n")
            assert answers[0].stop_reason == "end_turn"
            for window in (zed.client, late.client):

                def ended(client: RecordingClient = window) -> bool:
                    return _exit(client, session) is not None

                await window.wait_for(ended, timeout=WAIT_S)
            await plain.client.wait_for(
                lambda: plain.client.cards(session).get("call_gate", {}).get("status") == "completed", timeout=WAIT_S
            )
            zed_frames, late_frames, plain_frames = (_frames(w.client, session) for w in (zed, late, plain))
    for frames in (zed_frames, late_frames):
        started = frames[0]
        assert started["sessionUpdate"] == "tool_call" and started["title"] == COMMAND
        assert started["_meta"]["terminal_info"]["terminal_id"] == "call_gate"
        assert started["content"] == [{"type": "terminal", "terminalId": "call_gate"}]
    assert _terminal_text(zed.client, session) == _terminal_text(late.client, session) == "one\ntwo\n"
    assert _exit(zed.client, session) == _exit(late.client, session) == {
        "terminal_id": "call_gate", "exit_code": 0, "signal": None
    }  # fmt: skip
    assert all("_meta" not in frame for frame in plain_frames), "a window without terminal cards gets none"
    shown = [i["content"]["text"] for f in plain_frames for i in f.get("content", []) if i["type"] == "content"]
    assert any("one" in text and "two" not in text for text in shown), "it saw the output as it came, as text"
    final = plain.client.cards(session)["call_gate"]
    text = "Exit code 0.\n```\none\ntwo\n```"
    assert final["content"] == [{"type": "content", "content": {"type": "text", "text": text}}]
