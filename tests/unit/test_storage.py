"""The session store contract, run against the SQLite store and its in-memory double."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes_acp.core import TextPart, TitleSet, TurnEnded, UserMessage, UserPrompted
from hermes_acp.errors import InvalidParamsError, StorageError
from hermes_acp.storage import InMemorySessionStore, SessionRecord, SessionStore, SqliteSessionStore, utc_now

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    if request.param == "sqlite":
        sqlite_store = await SqliteSessionStore.open(tmp_path / "state.db")
        yield sqlite_store
        await sqlite_store.aclose()
    else:
        yield InMemorySessionStore()


def record(session_id: str, cwd: str = "/work") -> SessionRecord:
    now = utc_now()
    return SessionRecord(id=session_id, cwd=cwd, created_at=now, updated_at=now, mode_id="default")


def prompt(turn: str, text: str) -> UserPrompted:
    return UserPrompted(
        turn_id=turn, message_id=f"m-{turn}", display=[], message=UserMessage(parts=[TextPart(text=text)])
    )


async def test_events_append_in_order_with_sequence_numbers(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    first = await store.append_events("s1", [prompt("t1", "hello"), TurnEnded(turn_id="t1", stop_reason="end_turn")])
    second = await store.append_events("s1", [TitleSet(title="Hello")])
    loaded = await store.load_events("s1")
    assert [e.seq for e in first + second] == [1, 2, 3]
    assert [e.event for e in loaded] == [e.event for e in first + second]


async def test_appending_bumps_activity_and_list_orders_by_it(store: SessionStore) -> None:
    for name in ("a", "b", "c"):
        await store.create_session(record(name))
    await store.append_events("a", [TitleSet(title="touched")])
    page = await store.list_sessions(cwd=None, cursor=None)
    assert [r.id for r in page.sessions] == ["a", "c", "b"]


async def test_paging_with_cursor_and_cwd_filter(store: SessionStore) -> None:
    for i in range(7):
        await store.create_session(record(f"s{i}", cwd="/one" if i % 2 else "/two"))
    first = await store.list_sessions(cwd="/one", cursor=None, limit=2)
    second = await store.list_sessions(cwd="/one", cursor=first.next_cursor, limit=2)
    assert second.next_cursor is None
    assert [r.id for r in first.sessions + second.sessions] == ["s5", "s3", "s1"]
    with pytest.raises(InvalidParamsError):
        await store.list_sessions(cwd=None, cursor="garbage!")


async def test_archived_sessions_are_hidden_from_list_but_kept(store: SessionStore) -> None:
    await store.create_session(record("gone"))
    await store.append_events("gone", [TitleSet(title="x")])
    await store.update_session("gone", archived=True)
    assert (await store.list_sessions(cwd=None, cursor=None)).sessions == []
    assert len(await store.load_events("gone")) == 1


async def test_fork_copies_events_under_a_new_id(store: SessionStore) -> None:
    await store.create_session(record("parent"))
    await store.append_events("parent", [prompt("t1", "x"), TitleSet(title="p")])
    child = SessionRecord(
        id="child", cwd="/work", created_at=utc_now(), updated_at=utc_now(), mode_id="dont_ask", parent_id="parent"
    )
    await store.fork_session("parent", child)
    assert [e.event for e in await store.load_events("child")] == [e.event for e in await store.load_events("parent")]
    got = await store.get_session("child")
    assert got is not None
    assert got.parent_id == "parent"
    assert got.mode_id == "dont_ask"


async def test_append_to_unknown_session_is_a_storage_error(store: SessionStore) -> None:
    with pytest.raises(StorageError):
        await store.append_events("nope", [TitleSet(title="x")])


async def test_sqlite_survives_reopening_and_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = await SqliteSessionStore.open(path)
    await store.create_session(record("s1"))
    await store.append_events("s1", [TitleSet(title="kept")])
    await store.aclose()
    reopened = await SqliteSessionStore.open(path)
    events = await reopened.load_events("s1")
    await reopened.aclose()
    assert events[0].event == TitleSet(title="kept")
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1


async def test_a_corrupt_event_is_reported_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = await SqliteSessionStore.open(path)
    await store.create_session(record("s1"))
    await store.append_events("s1", [TitleSet(title="fine")])
    with sqlite3.connect(path) as db:
        db.execute('UPDATE events SET payload_json = \'{"kind": "mystery"}\' WHERE seq = 1')
    with pytest.raises(StorageError, match="event #1"):
        await store.load_events("s1")
    await store.aclose()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT payload_json FROM events").fetchone()[0] == '{"kind": "mystery"}'


async def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(StorageError, match="newer"):
        await SqliteSessionStore.open(path)
