"""``make bench``'s conversation-control rows: how soon a steering message is applied once the turn reaches its next
safe point, and what a rewind of a long session that puts many files back costs.

Both drive the real ``python -m hermes_acp`` process (the bench's ``spawn``):

- steering: a turn whose response streams text and then calls ``list_files``; a steering message is sent at its
  first chunk. The safe point is the call's settlement: the time from its ``tool_call_update`` (``completed``)
  arriving to the steering message's ``user_message_chunk`` arriving is what applying it cost (both frames cross
  the same pipe, so the transport cancels out).
- rewind: a stored session of 200 turns, 50 of which changed a file of their own (``write_file`` records with the
  old content); the files hold what the agent wrote. Once the resumed session is warm (``/status`` answered),
  ``_session/rewind`` to the first prompt is timed from the request to its answer (the log read twice, the fork
  that keeps the cut part, 50 files checked and written back, the event stored); the 50 atomic writes alone are
  timed beside it, in this process, for the "plus the writes".

Printed, never asserted.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import anyio
from acp import schema

from .agent import AgentProcess

__all__ = ["STEERING_RESPONSES", "rewind_rows", "steering_rows"]

STEER_TEXT = "STEER-BENCH: and list the hidden files too"
STEERING_RESPONSES: list[dict[str, Any]] = [
    {"match": {"last_message_contains": "STEER-BENCH"}, "repeat": True, "steps": [{"text": "Steered."}]},
    {
        "match": {"last_message_contains": "steer-me"},
        "repeat": True,
        "chunk_size": 4,
        "chunk_delay_ms": 5,
        "steps": [{"text": "Listing the files first. " * 3}, {"tool_call": {"name": "list_files", "arguments": {}}}],
    },
]
"""What the bench's model server answers for these rows (``probes/bench.py`` puts them in its scenario)."""
REWIND_TURNS = 200
REWIND_FILES = 50
FILE_BYTES = 2048


class Bench(Protocol):
    home: Path
    workspace: Path

    def spawn(self) -> Any: ...


Row = Callable[[str, str, str], Any]


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ms (min {min(values):.1f}, max {max(values):.1f})"


def _text(text: str) -> list[Any]:
    return [schema.TextContentBlock(type="text", text=text)]


async def steering_rows(bench: Bench, row: Row, runs: int = 10) -> list[Any]:
    after_safe_point: list[float] = []
    async with bench.spawn() as agent:
        with anyio.fail_after(30):
            session_id = (await agent.conn.new_session(cwd=str(bench.workspace), mcp_servers=[])).session_id
        for _ in range(runs):
            after_safe_point.append(await _one_steer(agent, session_id))
    note = f"median of {runs}: a call's completed update → the steering message shown (applied and stored)"
    return [row("steering applied after the next safe point", _ms(after_safe_point), note)]


async def _one_steer(agent: AgentProcess, session_id: str) -> float:
    client = agent.client
    client.reset_first_update()
    seen = len(client.updates)
    answers: list[Any] = []

    async def prompt() -> None:
        with anyio.fail_after(60):
            await agent.conn.prompt(session_id=session_id, prompt=_text("steer-me"))

    async with anyio.create_task_group() as group:
        group.start_soon(prompt)
        with anyio.fail_after(30):
            await client.first_update.wait()
            params = {"sessionId": session_id, "prompt": [{"type": "text", "text": STEER_TEXT}]}
            answers.append(await agent.conn.ext_method("session/steering", params))
    assert answers == [{"outcome": "injected"}], answers
    updates = client.updates[seen:]
    settled = next(
        u.at for u in updates if u.kind == "tool_call_update" and u.body.get("status") in ("completed", "failed")
    )
    applied = next(u.at for u in updates if u.kind == "user_message_chunk" and STEER_TEXT in str(u.body))
    return (applied - settled) * 1000


async def rewind_rows(bench: Bench, row: Row, runs: int = 3) -> list[Any]:
    totals: list[float] = []
    writes: list[float] = []
    for run in range(runs):
        folder = bench.workspace / f"rewind-{run}-{time.time_ns()}"
        session_id, first = await _rewindable_session(bench, folder)
        async with bench.spawn() as agent:
            with anyio.fail_after(60):
                await agent.conn.resume_session(cwd=str(bench.workspace), session_id=session_id, mcp_servers=[])
                # /status needs the turn machinery, which the resume warms up in a thread: once it answers, the
                # rewind is measured on a warm session instead of competing with those imports.
                await agent.conn.prompt(session_id=session_id, prompt=_text("/status"))
                started = time.perf_counter()
                result = await agent.conn.ext_method("session/rewind", {"sessionId": session_id, "messageId": first})
                totals.append((time.perf_counter() - started) * 1000)
        assert len(result["restored"]) == REWIND_FILES, result
        writes.append(await _writes_alone(folder))
    note = (
        f"{REWIND_TURNS}-turn session, {REWIND_FILES} files of {FILE_BYTES} B put back; median of {runs};"
        f" the {REWIND_FILES} atomic writes alone: {_ms(writes)}"
    )
    return [row(f"rewind of {REWIND_TURNS} turns with {REWIND_FILES} file restores", _ms(totals), note)]


async def _rewindable_session(bench: Bench, folder: Path) -> tuple[str, str]:
    """A stored session of ``REWIND_TURNS`` turns, every fourth one writing a file of its own (stored as the file
    tools store it), and the files on disk as the agent left them. Returns its id and its first prompt's id."""
    from hermes_acp.core import (
        AssistantMessage,
        AssistantMessageStored,
        FileChange,
        TextBlock,
        TextPart,
        ToolCallPart,
        ToolCallRunning,
        ToolCallSettled,
        ToolCallStarted,
        ToolResultMessage,
        TurnEnded,
        UserMessage,
        UserPrompted,
    )
    from hermes_acp.storage import SessionRecord, SqliteSessionStore, utc_now

    folder.mkdir(parents=True)
    store = await SqliteSessionStore.open(bench.home / "state.db")
    now = utc_now()
    session_id = f"bench-rewind-{time.time_ns()}"
    await store.create_session(
        SessionRecord(
            id=session_id, cwd=str(bench.workspace.resolve()), created_at=now, updated_at=now, mode_id="default"
        )
    )
    events: list[Any] = []
    written = 0
    for turn in range(REWIND_TURNS):
        text = f"turn {turn}: change file {written}" if turn % 4 == 0 and written < REWIND_FILES else f"question {turn}"
        events.append(
            UserPrompted(
                turn_id=f"t{turn}",
                message_id=f"u{turn}",
                display=[TextBlock(text=text)],
                message=UserMessage(parts=[TextPart(text=text)]),
            )
        )
        if text.startswith(f"turn {turn}: change"):
            path = folder / f"file-{written}.txt"
            old, new = (f"old {written} ".encode() * FILE_BYTES)[:FILE_BYTES], (b"n" * FILE_BYTES)
            path.write_bytes(new)
            call_id = f"call-{turn}"
            change = FileChange(
                path=str(path.resolve()),
                before=old.decode(),
                before_sha256=hashlib.sha256(old).hexdigest(),
                after_sha256=hashlib.sha256(new).hexdigest(),
            )
            call = ToolCallPart(id=call_id, name="write_file", arguments="{}")
            events += [
                AssistantMessageStored(
                    turn_id=f"t{turn}", message_id=f"c{turn}", message=AssistantMessage(parts=[call]), model_id="bench"
                ),
                ToolCallStarted(
                    turn_id=f"t{turn}", tool_call_id=call_id, name="write_file", title="Write", tool_kind="edit"
                ),
                ToolCallRunning(turn_id=f"t{turn}", tool_call_id=call_id, file_changes=[change]),
                ToolCallSettled(
                    turn_id=f"t{turn}",
                    tool_call_id=call_id,
                    status="completed",
                    result=ToolResultMessage(tool_call_id=call_id, name="write_file", parts=[TextPart(text="ok")]),
                ),
            ]
            written += 1
        events += [
            AssistantMessageStored(
                turn_id=f"t{turn}",
                message_id=f"a{turn}",
                message=AssistantMessage(parts=[TextPart(text=f"Answer {turn}. " * 8)]),
                model_id="bench",
            ),
            TurnEnded(turn_id=f"t{turn}", stop_reason="end_turn"),
        ]
    await store.append_events(session_id, events)
    await store.aclose()
    return session_id, "u0"


async def _writes_alone(folder: Path) -> float:
    """The same number of atomic writes of the same size, each in a worker thread as the rewind does them."""
    from hermes_acp.tools._disk import write_atomically

    target = folder / "alone"
    target.mkdir()

    started = time.perf_counter()
    for n in range(REWIND_FILES):
        await anyio.to_thread.run_sync(write_atomically, target / f"file-{n}.txt", b"o" * FILE_BYTES)
    return (time.perf_counter() - started) * 1000
