"""A session store that cannot be written, or is damaged, under the real ``python -m hermes_acp`` process.

- A read-only ``$HERMES_ACP_HOME`` (its folder and database made immutable, as a read-only mount would leave them):
  ``session/list`` still lists and ``session/load`` still replays; a new session and a prompt are refused with an
  error that names the store and what to do.
- A damaged page under one session's history: loading it, or a prompt to it, answers an error that names the
  database and points at ``--check`` (never "Session not found", nor "not open"); the other session loads, or,
  where SQLite's tree makes its history pass the damaged page too, answers the same error; ``--check`` reports the
  damage and offers the repair, and ``--repair`` copies what can be read so that both sessions load again.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import anyio
import pytest
from acp import RequestError

from tests.fakes.agent_process import AgentProcess, spawn_agent
from tests.fakes.store_faults import immutable

pytestmark = pytest.mark.anyio

PAGE = 4096


async def _two_sessions(tmp_path: Path, *, long_text: str = "") -> tuple[str, str]:
    """Two stored sessions (the first one's prompt ``long_text`` long, when given); the agent shut down cleanly."""
    async with spawn_agent(tmp_path) as agent:
        first = await agent.new_session()
        await agent.prompt(first, "first session " + long_text)
        second = await agent.new_session()
        await agent.prompt(second, "second session")
        assert await agent.shutdown() == 0
    return first, second


def _user_text(agent: AgentProcess, session_id: str) -> str:
    """What the replay showed of the user's prompts in ``session_id``."""
    return "".join(
        u["content"].get("text", "")
        for s, u in agent.client.updates
        if s == session_id and u["sessionUpdate"] == "user_message_chunk"
    )


def _error(raised: pytest.ExceptionInfo[RequestError]) -> str:
    return f"{raised.value} {raised.value.data}"


async def test_a_read_only_home_still_lists_and_loads_and_says_why_nothing_can_be_changed(tmp_path: Path) -> None:
    first, second = await _two_sessions(tmp_path)
    home = tmp_path / "home"
    db = home / "state.db"
    assert not (home / "state.db-wal").exists(), "a clean close leaves no write-ahead log"
    async with immutable(home, db), spawn_agent(tmp_path) as agent:
        listed = await agent.conn.list_sessions()
        assert {first, second} <= {entry.session_id for entry in listed.sessions}
        with anyio.fail_after(30):
            await agent.conn.load_session(session_id=first, cwd=str(tmp_path / "workspace"), mcp_servers=[])
        assert "first session" in _user_text(agent, first), "replayed"
        with pytest.raises(RequestError) as refused:
            await agent.new_session()
        said = _error(refused)
        assert "read-only" in said and str(db) in said and "HERMES_ACP_HOME" in said, said
        with pytest.raises(RequestError) as prompt_refused:
            await agent.prompt(first, "go on")
        assert "read-only" in _error(prompt_refused)
        assert await agent.shutdown() == 0
    async with spawn_agent(tmp_path) as agent:
        session = await agent.new_session()
        answered = await agent.prompt(session, "writable again")
        assert answered.stop_reason == "end_turn", "the store works once the home can be written"


def _damage_a_page_holding(db: Path, marker: bytes) -> None:
    """Break the chain of one of the overflow pages that hold nothing but the first session's long prompt (a page
    full of the marker), so reading that session's history fails and nothing else is touched."""
    data = bytearray(db.read_bytes())
    full = PAGE // (len(marker) + 1) - 2  # the marker and the space after it, over the whole page
    pages = [i for i in range(len(data) // PAGE) if data[i * PAGE : (i + 1) * PAGE].count(marker) >= full]
    assert len(pages) >= 3, "the control: the long prompt spans overflow pages of its own"
    middle = pages[len(pages) // 2] * PAGE
    data[middle : middle + 4] = b"\xff\xff\xff\xff"  # the next page of the chain: past the end of the file
    db.write_bytes(bytes(data))


async def test_a_damaged_page_names_the_database_and_check_offers_the_repair(tmp_path: Path) -> None:
    first, second = await _two_sessions(tmp_path, long_text="damage-marker " * 4000)
    home = tmp_path / "home"
    db = home / "state.db"
    _damage_a_page_holding(db, b"damage-marker")
    async with spawn_agent(tmp_path) as agent:
        listed = await agent.conn.list_sessions()
        assert {first, second} <= {entry.session_id for entry in listed.sessions}
        with pytest.raises(RequestError) as raised:
            await agent.conn.load_session(session_id=first, cwd=str(tmp_path / "workspace"), mcp_servers=[])
        said = _error(raised)
        assert "corrupt" in said and str(db) in said and "--check" in said, said
        assert "not found" not in said.lower()
        with pytest.raises(RequestError) as prompted:
            await agent.prompt(first, "go on")  # as an editor does after a load it did not check
        told = _error(prompted)
        assert "corrupt" in told and str(db) in told and "--check" in told, told
        assert "not open" not in told, "the database is named, as the load named it"
        other = ""
        try:
            with anyio.fail_after(30):
                await agent.conn.load_session(session_id=second, cwd=str(tmp_path / "workspace"), mcp_servers=[])
        except RequestError as failed:
            other = f"{failed} {failed.data}"
        assert other == "" or "corrupt" in other, "the other session loads, or says the same"
        assert await agent.shutdown() == 0
    env = {**os.environ, "HERMES_ACP_HOME": str(home), "HERMES_CUA_DRIVER_CMD": "no-such-driver"}
    check = await anyio.run_process([sys.executable, "-m", "hermes_acp", "--check"], env=env, check=False)
    report = check.stdout.decode()
    assert check.returncode == 1 and ("damaged" in report or "corrupt" in report), report
    assert "hermes-acp --repair" in report, "--check offers the repair"
    repaired = await anyio.run_process([sys.executable, "-m", "hermes_acp", "--repair"], env=env, check=False)
    assert repaired.returncode == 0, repaired.stdout.decode() + repaired.stderr.decode()
    assert "repaired" in repaired.stdout.decode() and list(home.glob("state.db.damaged-*"))
    with sqlite3.connect(db) as check_db:
        assert check_db.execute("PRAGMA quick_check").fetchone() == ("ok",)
    async with spawn_agent(tmp_path) as agent:
        for session_id in (first, second):
            with anyio.fail_after(30):
                await agent.conn.load_session(session_id=session_id, cwd=str(tmp_path / "workspace"), mcp_servers=[])
        assert await agent.shutdown() == 0
