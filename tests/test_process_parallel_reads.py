"""Parallel reads through the real process, with an editor that answers ``fs/read_text_file`` when the test says so:
reads of one response are in flight together, settle in the order they finish, and reach the model in the order it
asked; a write between them runs alone after them; a replay shows what the live turn showed; a cancel settles every
read in flight "cancelled" and what never started "not run"."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import schema

from tests.fakes.agent_process import AgentProcess, spawn_agent
from tests.fakes.editor_client import EditorClient

pytestmark = pytest.mark.anyio


@dataclass
class HoldingEditor(EditorClient):
    """Holds each read of a file named in ``held`` until the test releases it."""

    __test__ = False
    held: dict[str, anyio.Event] = field(default_factory=dict)
    reading: list[str] = field(default_factory=list)

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> schema.ReadTextFileResponse:
        name = os.path.basename(path)
        self.reading.append(name)
        self._arrived()
        gate = self.held.get(name)
        if gate is not None:
            await gate.wait()
        return await super().read_text_file(session_id, path, line, limit, **kwargs)

    def release_all(self) -> None:
        for gate in self.held.values():
            gate.set()


def read(call_id: str, name: str) -> dict[str, Any]:
    return {"tool_call": {"id": call_id, "name": "read_file", "arguments": {"path": name}}}


SCENARIO: dict[str, Any] = {
    "responses": [
        {
            "match": {"last_message_contains": "read them"},
            "steps": [
                read("r_a", "a.txt"),
                read("r_b", "b.txt"),
                {"tool_call": {"id": "w_c", "name": "write_file", "arguments": {"path": "c.txt", "content": "c\n"}}},
                read("r_d", "d.txt"),
            ],
        },
        {"match": {"last_message_contains": "delta"}, "steps": [{"text": "All read."}]},
        {
            "match": {"last_message_contains": "stop them"},
            "steps": [
                read("s_a", "a.txt"),
                read("s_b", "b.txt"),
                read("s_d", "d.txt"),
                {"tool_call": {"id": "s_e", "name": "write_file", "arguments": {"path": "e.txt", "content": "e"}}},
            ],
        },
    ]
}


async def open_editor_session(agent: AgentProcess) -> str:
    with anyio.fail_after(30):
        await agent.conn.initialize(
            protocol_version=1,
            client_capabilities=schema.ClientCapabilities.model_validate(EditorClient.CAPABILITIES),
        )
    for name, text in (("a.txt", "alpha\n"), ("b.txt", "beta\n"), ("d.txt", "delta\n")):
        (agent.workspace / name).write_text(text)
    session_id = await agent.new_session()
    await agent.conn.set_session_mode(session_id=session_id, mode_id="accept_edits")
    return session_id


def settled_order(agent: AgentProcess, session_id: str) -> list[str]:
    return [
        u["toolCallId"]
        for u in agent.client.of_kind("tool_call_update", session_id)
        if u.get("status") in ("completed", "failed")
    ]


def status_frames(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (u["toolCallId"], u["status"]) for u in updates if u["sessionUpdate"] == "tool_call_update" and "status" in u
    ]


async def test_reads_run_together_settle_as_they_finish_and_reach_the_model_in_order(tmp_path: Path) -> None:
    editor = HoldingEditor(held={"a.txt": anyio.Event(), "b.txt": anyio.Event()})
    try:
        async with spawn_agent(tmp_path, SCENARIO, client=editor, initialize=False) as agent:
            session_id = await open_editor_session(agent)
            async with anyio.create_task_group() as group:
                group.start_soon(agent.prompt, session_id, "Please read them")
                await editor.wait_for(lambda: {"a.txt", "b.txt"} <= set(editor.reading), timeout=30)
                assert "fs/write_text_file" not in editor.methods(), "the write waits for the reads before it"
                editor.held["b.txt"].set()
                await editor.wait_for(lambda: settled_order(agent, session_id) == ["r_b"], timeout=30)
                editor.held["a.txt"].set()
            live = [u for s, u in editor.updates if s == session_id]
            cards = editor.cards(session_id)
            messages = agent.model_requests()[-1].body["messages"]
            editor.clear()
            with anyio.fail_after(30):
                await agent.conn.load_session(cwd=str(agent.workspace), session_id=session_id, mcp_servers=[])
            replayed = [u for s, u in editor.updates if s == session_id]
    finally:
        editor.release_all()
        await editor.aclose()
    assert [cards[c]["status"] for c in ("r_a", "r_b", "w_c", "r_d")] == ["completed"] * 4
    settled = [call for call, status in status_frames(live) if status == "completed"]
    assert settled == ["r_b", "r_a", "w_c", "r_d"], "b finished first; the write ran after both; d after it"
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == ["r_a", "r_b", "w_c", "r_d"]
    assert status_frames(replayed) == status_frames(live), "a replay shows the cards as the live turn did"
    assert (agent.workspace / "c.txt").read_text() == "c\n"


async def test_cancel_during_parallel_reads_settles_them_all(tmp_path: Path) -> None:
    editor = HoldingEditor(held={"a.txt": anyio.Event(), "b.txt": anyio.Event(), "d.txt": anyio.Event()})
    try:
        async with spawn_agent(tmp_path, SCENARIO, client=editor, initialize=False) as agent:
            session_id = await open_editor_session(agent)
            async with anyio.create_task_group() as group:
                responses: list[Any] = []

                async def prompt() -> None:
                    responses.append(await agent.prompt(session_id, "Please stop them"))

                group.start_soon(prompt)
                await editor.wait_for(lambda: {"a.txt", "b.txt", "d.txt"} <= set(editor.reading), timeout=30)
                await agent.conn.cancel(session_id=session_id)
            cards = editor.cards(session_id)
    finally:
        editor.release_all()
        await editor.aclose()
    assert [r.stop_reason for r in responses] == ["cancelled"]
    for call in ("s_a", "s_b", "s_d"):
        assert cards[call]["status"] == "failed"
        assert cards[call]["content"][0]["content"]["text"].startswith("Cancelled: the turn was stopped")
    assert cards["s_e"]["status"] == "failed"
    assert cards["s_e"]["content"][0]["content"]["text"].startswith("Not run:")
    assert not (tmp_path / "workspace" / "e.txt").exists()
