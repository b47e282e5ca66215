"""The session store contract, run against the SQLite store and its in-memory double."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from hermes_acp.core import TextPart, TitleSet, TurnEnded, UserMessage, UserPrompted
from hermes_acp.errors import InvalidParamsError, StorageError
from hermes_acp.storage import InMemorySessionStore, SessionRecord, SessionStore, SqliteSessionStore, utc_now
from hermes_acp.storage.base import PROVENANCE_KEY, ArchiveFilter, Provenance
from hermes_acp.storage.migrations import MIGRATIONS
from tests.fakes.store_faults import immutable

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
    assert [r.id for r in (await store.list_sessions(cwd=None, cursor=None, archived="only")).sessions] == ["gone"]


async def test_the_archive_filter_combines_with_cwd_and_deleted_sessions_are_never_listed(
    store: SessionStore,
) -> None:
    for name, cwd in (("live", "/one"), ("shelved", "/one"), ("elsewhere", "/two"), ("deleted", "/one")):
        await store.create_session(record(name, cwd=cwd))
    await store.update_session("shelved", archived=True)
    await store.update_session("deleted", deleted=True)
    await store.update_session("deleted", archived=True)

    async def ids(archived: ArchiveFilter, cwd: str | None = "/one") -> set[str]:
        return {r.id for r in (await store.list_sessions(cwd=cwd, cursor=None, archived=archived)).sessions}

    assert await ids("exclude") == {"live"}
    assert await ids("include") == {"live", "shelved"}
    assert await ids("only") == {"shelved"}
    assert await ids("include", cwd=None) == {"live", "shelved", "elsewhere"}
    gone = await store.get_session("deleted")
    assert gone is not None and gone.deleted, "still there, for a load by id"


async def test_a_fork_up_to_a_sequence_number_copies_only_the_events_before_it(store: SessionStore) -> None:
    await store.create_session(record("source"))
    stored = await store.append_events("source", [prompt("t1", "a"), prompt("t2", "b"), prompt("t3", "c")])
    await store.fork_session("source", record("head"), until_seq=stored[1].seq)
    assert [e.event for e in await store.load_events("head")] == [e.event for e in stored[:2]]


async def test_subagents_are_left_out_of_the_list_unless_asked_for_and_keep_their_provenance(
    store: SessionStore,
) -> None:
    now = utc_now()
    made = Provenance(kind="subagent", session_id="parent", at=now, tool_call_id="call_1")
    await store.create_session(record("parent"))
    child = SessionRecord(
        id="child",
        cwd="/work",
        created_at=now,
        updated_at=now,
        mode_id="read_only",
        parent_id="parent",
        meta={PROVENANCE_KEY: made.as_meta()},
    )
    await store.create_session(child)
    forked = Provenance(kind="fork", session_id="parent", at=now)
    await store.create_session(
        SessionRecord(
            id="fork",
            cwd="/work",
            created_at=now,
            updated_at=now,
            mode_id="default",
            meta={PROVENANCE_KEY: forked.as_meta()},
        )
    )
    listed = await store.list_sessions(cwd=None, cursor=None)
    everything = await store.list_sessions(cwd="/work", cursor=None, subagents=True)
    stored = await store.get_session("child")
    assert sorted(r.id for r in listed.sessions) == ["fork", "parent"], "a fork is listed, a subagent is not"
    assert sorted(r.id for r in everything.sessions) == ["child", "fork", "parent"]
    assert stored is not None and stored.provenance == made and stored.parent_id == "parent"


def test_a_provenance_written_by_hand_that_is_not_one_reads_as_none() -> None:
    assert Provenance.from_meta({"kind": "teleport", "sessionId": "x", "at": "now"}) is None
    assert Provenance.from_meta({"kind": "subagent", "sessionId": 3, "at": "now"}) is None
    assert Provenance.from_meta("subagent") is None
    kept = Provenance.from_meta({"kind": "rewind", "sessionId": "x", "at": "t", "messageId": "m", "toolCallId": 5})
    assert kept == Provenance(kind="rewind", session_id="x", at="t", message_id="m")


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
        assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


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


async def test_a_lone_surrogate_never_fails_a_write_and_what_is_stored_is_returned(store: SessionStore) -> None:
    await store.create_session(record("s1", cwd="/projects/\udcff-dir"))
    stored = await store.append_events("s1", [prompt("t1", "half an emoji \ud83d"), TitleSet(title="title \udc80")])
    await store.update_session("s1", title="renamed \ud800")
    loaded = await store.load_events("s1")
    got = await store.get_session("s1")
    assert [e.event for e in stored] == [prompt("t1", "half an emoji \ufffd"), TitleSet(title="title \ufffd")]
    assert [e.event for e in loaded] == [e.event for e in stored], "the caller is given what was stored"
    assert got is not None
    assert (got.title, got.cwd) == ("renamed \ufffd", "/projects/\ufffd-dir")
    assert [r.id for r in (await store.list_sessions(cwd=got.cwd, cursor=None)).sessions] == ["s1"]


_FILL = """
import resource, sys
from pathlib import Path
import anyio
from hermes_acp.core import TitleSet
from hermes_acp.errors import StorageError
from hermes_acp.storage import SessionRecord, SqliteSessionStore, utc_now

async def main(path: Path) -> None:
    store = await SqliteSessionStore.open(path)
    now = utc_now()
    await store.create_session(SessionRecord(id="s1", cwd="/", created_at=now, updated_at=now, mode_id="default"))
    await store.append_events("s1", [TitleSet(title="before")])
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (Path(f"{path}-wal").stat().st_size, hard))
    try:
        await store.append_events("s1", [TitleSet(title="x" * 200_000)])
    except StorageError as exc:
        print(exc.cause)
        print(exc)
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    await store.append_events("s1", [TitleSet(title="after")])
    print([e.event.title for e in await store.load_events("s1")])
    await store.aclose()

anyio.run(main, Path(sys.argv[1]))
"""


def test_a_store_that_cannot_grow_fails_the_write_with_the_cause_and_keeps_serving(tmp_path: Path) -> None:
    """A real file-size limit (RLIMIT_FSIZE, as ``prlimit --fsize`` sets) in a child process: SQLite fails to extend
    the write-ahead log exactly as on a full disk. The failed transaction is rolled back whole, so the same
    connection takes the next write once there is room."""
    done = subprocess.run(
        [sys.executable, "-c", _FILL, str(tmp_path / "state.db")],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    cause, message, titles = done.stdout.splitlines()
    assert cause == "disk_full"
    assert message.startswith(f"session store {tmp_path / 'state.db'}: disk full: ")
    assert "file-size limit" in message
    assert titles == "['before', 'after']"


async def test_a_store_that_turns_read_only_fails_the_write_with_the_cause(tmp_path: Path) -> None:
    """The write-ahead log made immutable (``chattr +i``) while the store is open: writes on the open file fail as
    on a file system remounted read-only (EPERM/EROFS from write(2), SQLITE_IOERR_WRITE)."""
    store = await SqliteSessionStore.open(tmp_path / "state.db")
    try:
        await store.create_session(record("s1"))
        async with immutable(tmp_path / "state.db-wal"):
            with pytest.raises(StorageError) as refused:
                await store.append_events("s1", [TitleSet(title="x")])
        await store.append_events("s1", [TitleSet(title="after")])
        events = await store.load_events("s1")
    finally:
        await store.aclose()
    assert refused.value.cause == "read_only"
    assert "state.db-wal is not writable" in str(refused.value)
    assert [e.event for e in events] == [TitleSet(title="after")]


async def test_health_reports_a_sound_store_and_its_schema_version(tmp_path: Path) -> None:
    store = await SqliteSessionStore.open(tmp_path / "state.db")
    await store.create_session(record("s1"))
    health = await store.health()
    await store.aclose()
    assert health.problems == []
    assert health.schema_version == health.latest_version == len(MIGRATIONS)
    assert health.size_bytes > 0


async def test_an_append_while_another_process_writes_waits_off_the_event_loop_and_then_lands(tmp_path: Path) -> None:
    """Another hermes-acp on the same home holds the write lock: the append is not tried on the event loop (which
    SQLite's busy wait would block for seconds) but waits in a worker thread, and lands once the lock is free."""
    store = await SqliteSessionStore.open(tmp_path / "state.db")
    await store.create_session(record("s1"))
    other = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    stored: list[int] = []

    async def append() -> None:
        stored.extend(e.seq for e in await store.append_events("s1", [TitleSet(title="later")]))

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(append)
                await anyio.wait_all_tasks_blocked()  # the loop is free while the append waits for the lock
                assert stored == []
                other.execute("ROLLBACK")
    finally:
        other.close()
    assert stored == [1]
    assert [e.event for e in await store.load_events("s1")] == [TitleSet(title="later")]
    await store.aclose()


async def test_the_store_checkpoints_its_write_ahead_log_so_it_stops_growing(tmp_path: Path) -> None:
    """Automatic checkpoints are off (they would sync the disk inside a commit on the event loop); the store runs
    them itself every ``checkpoint_every`` appends, so the WAL is reused instead of holding the whole history."""
    store = await SqliteSessionStore.open(tmp_path / "state.db", checkpoint_every=10)
    await store.create_session(record("s1"))
    wal = tmp_path / "state.db-wal"
    sizes = []
    for round_ in range(6):
        for i in range(10):
            await store.append_events("s1", [TitleSet(title=f"{round_}-{i} " + "x" * 8000)])
        sizes.append(wal.stat().st_size)
    await store.aclose()
    assert len(await _reopened_events(tmp_path)) == 60
    assert max(sizes) < 1.5 * sizes[0], f"the WAL grew with the history: {sizes}"


async def _reopened_events(tmp_path: Path) -> list[object]:
    store = await SqliteSessionStore.open(tmp_path / "state.db")
    try:
        return [e.event for e in await store.load_events("s1")]
    finally:
        await store.aclose()


async def test_a_store_that_cannot_be_written_opens_read_only_and_every_write_says_why(tmp_path: Path) -> None:
    path = tmp_path / "home" / "state.db"
    writer = await SqliteSessionStore.open(path)
    await writer.create_session(record("s1"))
    await writer.append_events("s1", [prompt("t1", "kept")])
    await writer.aclose()
    async with immutable(path.parent, path):
        reader = await SqliteSessionStore.open(path)
        try:
            assert reader.read_only is not None
            assert [r.id for r in (await reader.list_sessions(cwd=None, cursor=None)).sessions] == ["s1"]
            assert len(await reader.load_events("s1")) == 1
            for write in (
                reader.create_session(record("s2")),
                reader.update_session("s1", title="x"),
                reader.append_events("s1", [prompt("t2", "lost")]),
                reader.fork_session("s1", record("s3")),
            ):
                with pytest.raises(StorageError, match="read-only") as raised:
                    await write
                assert raised.value.cause == "read_only" and "HERMES_ACP_HOME" in str(raised.value)
        finally:
            await reader.aclose()


async def test_a_missing_store_in_a_folder_that_cannot_be_written_says_what_to_do(tmp_path: Path) -> None:
    folder = tmp_path / "home"
    folder.mkdir()
    async with immutable(folder):
        with pytest.raises(StorageError, match="no session store yet") as raised:
            await SqliteSessionStore.open(folder / "state.db")
    assert raised.value.cause == "read_only"


async def test_a_session_whose_record_is_gone_but_whose_history_is_there_is_damage_not_absence(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = await SqliteSessionStore.open(path)
    try:
        await store.create_session(record("s1"))
        await store.append_events("s1", [prompt("t1", "history")])
        with sqlite3.connect(path) as db:
            db.execute("PRAGMA foreign_keys=OFF")
            db.execute("DELETE FROM sessions WHERE id = 's1'")
        with pytest.raises(StorageError, match="corrupt") as raised:
            await store.get_session("s1")
        assert str(path) in str(raised.value) and "--check" in str(raised.value)
        assert await store.get_session("never-there") is None
    finally:
        await store.aclose()


async def test_a_store_from_before_archiving_keeps_its_deleted_sessions_deleted(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with sqlite3.connect(path, isolation_level=None) as db:
        db.executescript(f"BEGIN;\n{MIGRATIONS[0]}\nPRAGMA user_version = 1;\nCOMMIT;")
        now = utc_now()
        for session_id, archived in (("kept", 0), ("deleted-then", 1)):
            db.execute(
                "INSERT INTO sessions (id, cwd, created_at, updated_at, mode_id, archived) VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, "/work", now, now, "default", archived),
            )
    store = await SqliteSessionStore.open(path)
    try:
        listed = await store.list_sessions(cwd=None, cursor=None, archived="include")
        old = await store.get_session("deleted-then")
    finally:
        await store.aclose()
    assert [r.id for r in listed.sessions] == ["kept"]
    assert old is not None and old.deleted and not old.archived
