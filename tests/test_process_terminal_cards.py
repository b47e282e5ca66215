"""Terminal cards for Zed through the real process: a client that advertises ``_meta.terminal_output`` gets the
commands the agent runs in its own sandbox as terminals (``_meta.terminal_info`` on the ``tool_call``, the output
streamed as ``_meta.terminal_output``, ``_meta.terminal_exit`` at the end), never a ``terminal/*`` request, and a
``session/load`` in a new process shows each card again, the same: the same title, status, content, terminal
(label, folder, output, exit) and raw output. A command that streams, one killed by its time limit, one refused
before it runs, one the sandbox stops, one cancelled with its turn, and one whose output hides characters. Driven
in raw frames by the Zed emulation; every frame is checked against the ACP schema."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.zed_client import Zed, spawn_zed
from tests.security.support import require_bwrap

pytestmark = pytest.mark.anyio

STREAMED = "echo one; read _ < g1; echo two; read _ < g2; echo three"
SLOW = "echo started; sleep 30; echo never"


def _scenario(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """For each (prompt word, call id, terminal arguments): that prompt runs the command; then a short answer."""
    responses: list[dict[str, Any]] = [
        {
            "match": {"last_message_contains": word},
            "steps": [{"tool_call": {"id": call_id, "name": "terminal", "arguments": arguments}}],
        }
        for word, call_id, arguments in calls
    ]
    return {"name": "terminal-cards", "responses": [*responses, {"repeat": True, "steps": [{"text": "Done."}]}]}


async def _replayed(tmp_path: Path, scenario: dict[str, Any], session_id: str, call_id: str) -> dict[str, Any]:
    """The card as a fresh Zed shows it after ``session/load`` in a new process (same home)."""
    async with spawn_zed(tmp_path / "second", scenario, home=tmp_path / "home") as zed:
        zed.workspace = tmp_path / "workspace"
        await zed.load_session(session_id)
        return zed.card(session_id, call_id)


def _calls_made(zed: Zed) -> list[str]:
    return [m["method"] for d, m in zed.frames.frames if d == "to_client" and "id" in m and "method" in m]


async def test_a_command_s_output_streams_into_its_terminal_and_a_load_shows_the_same_card(tmp_path: Path) -> None:
    scenario = _scenario(("stream it", "call_stream", {"command": STREAMED}))
    async with spawn_zed(tmp_path, scenario) as zed:
        for name in ("g1", "g2"):
            os.mkfifo(zed.workspace / name)
        session_id = await zed.new_session()
        await zed.set_mode(session_id, "dont_ask")
        async with anyio.create_task_group() as tg:
            answer: list[Any] = []

            async def prompt() -> None:
                answer.append(await zed.prompt(session_id, "Please stream it"))

            tg.start_soon(prompt)
            await zed.wait_for(lambda: (session_id, "call_stream") in zed.terminals)
            terminal = zed.terminal(session_id, "call_stream")
            await zed.wait_for(lambda: terminal.text() == "one\n")
            assert terminal.exit is None, "the command is still running while its first line is shown"
            await anyio.to_thread.run_sync((zed.workspace / "g1").write_text, "go\n")
            await zed.wait_for(lambda: terminal.text() == "one\ntwo\n")
            await anyio.to_thread.run_sync((zed.workspace / "g2").write_text, "go\n")
        live = zed.card(session_id, "call_stream")
        frames = [u for _, s, u in zed.updates if u.get("toolCallId") == "call_stream"]
    assert answer[0]["stopReason"] == "end_turn"
    assert "terminal/create" not in _calls_made(zed), "agent-owned terminals are preferred to the editor's"
    first = frames[0]
    assert first["sessionUpdate"] == "tool_call" and first["title"] == STREAMED
    assert first["_meta"]["terminal_info"] == {
        "terminal_id": "call_stream", "cwd": str(zed.workspace), "command": STREAMED
    }  # fmt: skip
    assert first["content"] == [{"type": "terminal", "terminalId": "call_stream"}]
    outputs = [u["_meta"]["terminal_output"]["data"] for u in frames if "terminal_output" in u.get("_meta", {})]
    assert outputs[:1] == ["one\n"] and len(outputs) >= 3, "the output arrived as it was written"
    assert live["status"] == "completed"
    assert live["terminal"] == {
        "label": STREAMED, "cwd": str(zed.workspace), "output": "one\ntwo\nthree\n",
        "exit": {"exit_code": 0, "signal": None},
    }  # fmt: skip
    assert live["content"] == [{"type": "terminal", "terminalId": "call_stream"}]
    replayed = await _replayed(tmp_path, scenario, session_id, "call_stream")
    assert replayed == live


async def test_a_command_killed_by_its_time_limit_shows_why_and_replays_the_same(tmp_path: Path) -> None:
    scenario = _scenario(("slow one", "call_slow", {"command": SLOW, "timeout_s": 3}))
    async with spawn_zed(tmp_path, scenario) as zed:
        session_id = await zed.new_session()
        await zed.set_mode(session_id, "dont_ask")
        await zed.prompt(session_id, "Run the slow one")
        live = zed.card(session_id, "call_slow")
    assert live["status"] == "failed"
    terminal = live["terminal"]
    assert terminal["output"] == "started\n"
    assert terminal["exit"]["exit_code"] is None and terminal["exit"]["signal"] is not None
    notes = [item["content"]["text"] for item in live["content"] if item["type"] == "content"]
    assert notes == ["Timed out after 3 s: the command was killed."]
    assert live["rawOutput"]["timed_out"] is True
    assert await _replayed(tmp_path, scenario, session_id, "call_slow") == live


async def test_a_refused_command_closes_its_terminal_and_replays_the_same(tmp_path: Path) -> None:
    scenario = _scenario(("wipe", "call_wipe", {"command": "rm -rf ~ && touch ran.txt"}))
    async with spawn_zed(tmp_path, scenario) as zed:
        session_id = await zed.new_session()
        await zed.set_mode(session_id, "dont_ask")
        await zed.prompt(session_id, "Please wipe it")
        live = zed.card(session_id, "call_wipe")
        closed = zed.terminal(session_id, "call_wipe")
    assert not (tmp_path / "workspace" / "ran.txt").exists()
    assert live["status"] == "failed" and live["terminal"] is None, "the card says why, without an empty terminal"
    (reason,) = [item["content"]["text"] for item in live["content"]]
    assert "refused in every mode" in reason
    assert closed.exit == {"exit_code": None, "signal": None}, "the terminal announced with the call is ended"
    assert await _replayed(tmp_path, scenario, session_id, "call_wipe") == live


async def test_what_the_sandbox_stops_is_in_the_card_and_replays_the_same(tmp_path: Path) -> None:
    require_bwrap()
    outside = Path("/usr/hermes-acp-terminal-card-test.txt")  # read-only in the sandbox (its /tmp is private)
    command = f"echo trying; echo x > {outside}"
    scenario = _scenario(("outside", "call_out", {"command": command}))
    async with spawn_zed(tmp_path, scenario, config_extra='[sandbox]\nmode = "required"\n') as zed:
        session_id = await zed.new_session()
        await zed.set_mode(session_id, "dont_ask")
        await zed.prompt(session_id, "Write outside")
        live = zed.card(session_id, "call_out")
    assert not outside.exists(), "the sandbox kept the write out"
    assert live["status"] == "failed" and live["rawOutput"]["sandboxed"] is True
    terminal = live["terminal"]
    assert terminal["output"].startswith("trying\n") and terminal["exit"]["exit_code"] not in (0, None)
    notes = [item["content"]["text"] for item in live["content"] if item["type"] == "content"]
    assert notes and "a write outside the session's directories failed" in notes[-1]
    assert await _replayed(tmp_path, scenario, session_id, "call_out") == live


async def test_a_cancelled_command_closes_its_terminal_and_replays_the_same(tmp_path: Path) -> None:
    scenario = _scenario(("long job", "call_long", {"command": SLOW}))
    async with spawn_zed(tmp_path, scenario) as zed:
        session_id = await zed.new_session()
        await zed.set_mode(session_id, "dont_ask")
        async with anyio.create_task_group() as tg:
            answer: list[Any] = []

            async def prompt() -> None:
                answer.append(await zed.prompt(session_id, "Start the long job"))

            tg.start_soon(prompt)
            await zed.wait_for(
                lambda: (
                    (session_id, "call_long") in zed.terminals
                    and zed.terminal(session_id, "call_long").text() == "started\n"
                )
            )
            await zed.cancel(session_id)
        live = zed.card(session_id, "call_long")
        closed = zed.terminal(session_id, "call_long")
    assert answer[0]["stopReason"] == "cancelled"
    assert live["status"] == "failed" and live["terminal"] is None
    assert closed.exit == {"exit_code": None, "signal": None}, "no terminal is left running in the thread"
    (reason,) = [item["content"]["text"] for item in live["content"]]
    assert reason.startswith("Cancelled")
    assert await _replayed(tmp_path, scenario, session_id, "call_long") == live


async def test_hidden_characters_in_the_output_reach_neither_the_live_terminal_nor_the_stored_one(
    tmp_path: Path,
) -> None:
    command = r"printf 'vis\363\240\200\201ible\n'"  # U+E0001, a TAG character, between "vis" and "ible"
    scenario = _scenario(("hidden", "call_tag", {"command": command}))
    async with spawn_zed(tmp_path, scenario) as zed:
        session_id = await zed.new_session()
        await zed.set_mode(session_id, "dont_ask")
        await zed.prompt(session_id, "Print the hidden text")
        live = zed.card(session_id, "call_tag")
    assert live["terminal"]["output"] == "visible\n"
    assert await _replayed(tmp_path, scenario, session_id, "call_tag") == live


async def test_the_permission_question_is_asked_inside_the_terminal_card(tmp_path: Path) -> None:
    scenario = _scenario(("ask first", "call_ask", {"command": "echo asked"}))
    async with spawn_zed(tmp_path, scenario) as zed:
        session_id = await zed.new_session()
        await zed.prompt(session_id, "Please ask first")
        live = zed.card(session_id, "call_ask")
    (question,) = zed.permissions
    assert question["toolCall"]["title"] == "echo asked", "the terminal's label stays the command"
    assert question["toolCall"]["content"][0] == {"type": "terminal", "terminalId": "call_ask"}
    assert live["status"] == "completed" and live["terminal"]["output"] == "asked\n"


@pytest.mark.parametrize("dialect", ["terminal_output_delta", "none"])
async def test_a_client_that_reads_output_deltas_gets_the_card_and_a_plain_one_the_full_output(
    tmp_path: Path, dialect: str
) -> None:
    """``_meta.terminal_output_delta`` (codex-acp's name, unverified against any schema: none has it) gets the same
    card with the output appended under that key; a client with neither gets the output as the card's text."""
    scenario = _scenario(("two lines", "call_two", {"command": "echo one; echo two"}))
    meta = {"terminal_output_delta": True} if dialect != "none" else {}
    async with spawn_zed(tmp_path, scenario, initialize=False) as zed:  # the plain one has no terminal of its own
        await zed.initialize({"terminal": dialect != "none", "_meta": meta})
        session_id = await zed.new_session()
        await zed.set_mode(session_id, "dont_ask")
        await zed.prompt(session_id, "Print two lines")
        card = zed.card(session_id, "call_two")
        metas = [u.get("_meta") or {} for _, _, u in zed.updates if u.get("toolCallId") == "call_two"]
        calls = _calls_made(zed)
    assert card["status"] == "completed" and "terminal/create" not in calls
    assert not any("terminal_output" in m for m in metas), "Zed's name is not used"
    if dialect == "none":
        assert card["terminal"] is None and not any(metas)
        assert "one\ntwo" in "".join(i["content"]["text"] for i in card["content"] if i["type"] == "content")
        return
    deltas = [m["terminal_output_delta"] for m in metas if "terminal_output_delta" in m]
    assert deltas and all(d["terminal_id"] == "call_two" for d in deltas)
    assert card["terminal"]["output"] == "one\ntwo\n" and card["terminal"]["exit"] == {"exit_code": 0, "signal": None}
