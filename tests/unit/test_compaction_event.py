"""The compaction event in the SQLite log: stored and read back whole, copied by a fork, folded the same way after a
reload; and a log written before compaction existed still reads (no migration: a new event kind only)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    ContextCompacted,
    SessionEvent,
    TextPart,
    Usage,
    UserMessage,
    UserPrompted,
)
from hermes_acp.storage import SessionRecord, SqliteSessionStore, utc_now
from hermes_acp.turns import SessionProjection

pytestmark = pytest.mark.anyio


def record(session_id: str) -> SessionRecord:
    now = utc_now()
    return SessionRecord(id=session_id, cwd="/work", created_at=now, updated_at=now, mode_id="default")


def turn(n: int) -> list[UserPrompted | AssistantMessageStored]:
    return [
        UserPrompted(
            turn_id=f"t{n}", message_id=f"u{n}", display=[], message=UserMessage(parts=[TextPart(text=f"q{n}")])
        ),
        AssistantMessageStored(
            turn_id=f"t{n}",
            message_id=f"a{n}",
            message=AssistantMessage(parts=[TextPart(text=f"a{n}")]),
            model_id="p:m",
            usage=Usage(input_tokens=100 * n, output_tokens=10),
            context_window=16_000,
        ),
    ]


COMPACTED = ContextCompacted(
    turn_id="t3",
    compaction_id="compaction_1",
    message_id="m-c",
    trigger="threshold",
    method="summary",
    replaced=4,
    summary="q0 to q1 were asked and answered.",
    stubs={"c9": "[cut]"},
    model_id="p:m",
    usage=Usage(input_tokens=500, output_tokens=40),
    tokens_before=13_000,
    tokens_after=3_000,
    instructions="keep the numbers",
)


async def test_a_compaction_is_stored_whole_copied_by_a_fork_and_folds_the_same_after_a_reload(tmp_path: Path) -> None:
    store = await SqliteSessionStore.open(tmp_path / "state.db")
    try:
        await store.create_session(record("s1"))
        events: list[SessionEvent] = [*turn(0), *turn(1), *turn(2), COMPACTED, *turn(3)]
        await store.append_events("s1", events)
        await store.fork_session("s1", record("s2"))
        stored = [s.event for s in await store.load_events("s1")]
        forked = [s.event for s in await store.load_events("s2")]
    finally:
        await store.aclose()
    assert stored == forked == events
    live, reloaded = SessionProjection(), SessionProjection()
    for event in events:
        live.apply(event)
    for event in stored:
        reloaded.apply(event)
    assert reloaded.history == live.history
    assert [m.role for m in reloaded.history] == ["user", "assistant", "user", "assistant"]  # summary + q2, a2, q3, a3
    assert reloaded.compaction_id == "compaction_1" and reloaded.compactions == 1
    assert reloaded.usage_by_model == {"p:m": Usage(input_tokens=1_100, output_tokens=80)}


async def test_a_log_from_before_compaction_reads_as_it_did(tmp_path: Path) -> None:
    """Rows as an earlier version wrote them (its JSON, its kinds), inserted directly."""
    store = await SqliteSessionStore.open(tmp_path / "state.db")
    try:
        await store.create_session(record("old"))
    finally:
        await store.aclose()
    rows = [
        (1, "user_prompted", '{"kind":"user_prompted","turn_id":"t0","message_id":"u0","display":[],'
         '"message":{"role":"user","parts":[{"kind":"text","text":"hi"}]},"for_model":true}'),
        (2, "assistant_message", '{"kind":"assistant_message","turn_id":"t0","message_id":"a0","message":'
         '{"role":"assistant","parts":[{"kind":"text","text":"hello"}],"echo":null},"model_id":"p:m",'
         '"usage":{"input_tokens":900,"output_tokens":12,"cached_read_tokens":0,"cache_write_tokens":0,'
         '"thought_tokens":0},"context_window":128000,"interrupted":false}'),
        (3, "turn_ended", '{"kind":"turn_ended","turn_id":"t0","stop_reason":"end_turn","usage":{}}'),
    ]  # fmt: skip
    with sqlite3.connect(tmp_path / "state.db") as db:
        db.executemany(
            "INSERT INTO events (session_id, seq, turn_id, kind, payload_json, created_at)"
            " VALUES ('old', ?, 't0', ?, ?, ?)",
            [(seq, kind, payload, utc_now()) for seq, kind, payload in rows],
        )
    store = await SqliteSessionStore.open(tmp_path / "state.db")
    try:
        events = [s.event for s in await store.load_events("old")]
    finally:
        await store.aclose()
    projection = SessionProjection()
    for event in events:
        projection.apply(event)
    assert projection.history == [
        UserMessage(parts=[TextPart(text="hi")]),
        AssistantMessage(parts=[TextPart(text="hello")]),
    ]
    assert projection.anchor is not None and projection.anchor.tokens == 912 and projection.compactions == 0
