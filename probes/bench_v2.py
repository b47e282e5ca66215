"""``make bench`` rows for ACP v2 (``--only acp_v2``): the v1 and v2 renderings of the same 2,000-event session side by
side (time and bytes), and a rejoin by cursor after 100 missed events against a full replay, over the SQLite store.

In-process: the rendering functions are pure, so the rows time them alone (``protocol/convert.py`` for v1, as a
client with Zed's capabilities gets it; ``protocol/v2`` for v2), each update framed as the server frames a
``session/update`` notification (compact JSON, one line). The session is synthetic but shaped like real work: every
turn a prompt, a response with reasoning and two tool calls (an edit with its diff, a command in an agent-owned
terminal with its output), the permission, the settlements, a plan and the turn's end. The rows through the real
processes (``--connect``, a rejoin against a whole ``session/load`` in a host) are ``probes/bench_host.py``'s (group
``connect``).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_acp.core import (
    AgentTerminalBlock,
    AssistantMessage,
    AssistantMessageStored,
    DiffBlock,
    Location,
    PermissionResolved,
    PlanEntry,
    PlanUpdated,
    SessionEvent,
    TextBlock,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolCallRunning,
    ToolCallSettled,
    ToolCallStarted,
    ToolResultMessage,
    TurnEnded,
    Usage,
    UserMessage,
    UserPrompted,
)
from hermes_acp.protocol import convert
from hermes_acp.protocol.reliable.cursors import Epoch, rejoin
from hermes_acp.protocol.reliable.meta import update_params
from hermes_acp.protocol.v2 import render, replay
from hermes_acp.storage import SessionRecord, SqliteSessionStore, utc_now
from hermes_acp.storage.base import StoredEvent
from hermes_acp.turns.projection import transcript_events

__all__ = ["rendering_rows", "session_events"]

EVENTS = 2_000
RUNS = 11
MISSED = 100
SOURCE = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(60))
"""A 3.6 KB file the turns edit (one line changes each time)."""


def session_events(count: int = EVENTS) -> list[SessionEvent]:
    """``count`` events of turns shaped like real work (see the module docstring)."""
    events: list[SessionEvent] = []
    turn = 0
    while len(events) < count:
        t, edit, run = f"t{turn}", f"call_edit_{turn}", f"call_run_{turn}"
        question = f"make f{turn % 60} return x + {turn} and run the tests"
        after = SOURCE.replace(f"return x + {turn % 60}\n", f"return x + {turn}\n", 1)
        opened = AgentTerminalBlock(terminal_id=run, command="pytest -q", cwd="/w", fallback=[TextBlock(text="pytest")])
        output = "".join(f"tests/test_{i}.py ....                [{i}%]\n" for i in range(0, 100, 5)) + "20 passed\n"
        ended = opened.model_copy(update={"output": output, "ended": True, "exit_code": 0})
        events += [
            UserPrompted(
                turn_id=t,
                message_id=f"u{turn}",
                display=[TextBlock(text=question)],
                message=UserMessage(parts=[TextPart(text=question)]),
            ),
            AssistantMessageStored(
                turn_id=t,
                message_id=f"a{turn}",
                message=AssistantMessage(
                    parts=[
                        ThinkingPart(text=f"The user wants f{turn % 60} changed; edit it, then run the tests. " * 3),
                        TextPart(text=f"I'll change f{turn % 60} and run the tests."),
                        ToolCallPart(id=edit, name="edit_file", arguments="{}"),
                        ToolCallPart(id=run, name="terminal", arguments="{}"),
                    ]
                ),
                model_id="bench:m",
                usage=Usage(input_tokens=4_000 + turn, output_tokens=120),
            ),
            ToolCallStarted(
                turn_id=t,
                tool_call_id=edit,
                name="edit_file",
                title="Edit /w/f.py",
                tool_kind="edit",
                raw_input={"path": "/w/f.py", "old": f"x + {turn % 60}", "new": f"x + {turn}"},
                locations=[Location(path="/w/f.py", line=2 + 3 * (turn % 60))],
                content=[DiffBlock(path="/w/f.py", old_text=SOURCE, new_text=after)],
                marks_run=True,
            ),
            PermissionResolved(turn_id=t, tool_call_id=edit, outcome="allow_once", scope="edit"),
            ToolCallRunning(turn_id=t, tool_call_id=edit),
            ToolCallSettled(
                turn_id=t,
                tool_call_id=edit,
                status="completed",
                content=[DiffBlock(path="/w/f.py", old_text=SOURCE, new_text=after)],
                result=ToolResultMessage(tool_call_id=edit, name="edit_file", parts=[TextPart(text="edited")]),
            ),
            ToolCallStarted(
                turn_id=t,
                tool_call_id=run,
                name="terminal",
                title="Run `pytest -q`",
                tool_kind="execute",
                content=[opened],
                marks_run=True,
            ),
            ToolCallRunning(turn_id=t, tool_call_id=run),
            ToolCallSettled(
                turn_id=t,
                tool_call_id=run,
                status="completed",
                content=[ended],
                result=ToolResultMessage(tool_call_id=run, name="terminal", parts=[TextPart(text=output)]),
            ),
            PlanUpdated(turn_id=t, entries=[PlanEntry(content=f"Change f{turn % 60}", status="completed")]),
            TurnEnded(turn_id=t, stop_reason="end_turn", usage=Usage(input_tokens=4_000, output_tokens=120)),
        ]
        turn += 1
    return events[:count]


def _history(log: list[StoredEvent]) -> list[StoredEvent]:
    """What a replay shows of ``log`` (checkpoints of completed messages left out), as the session layer picks it."""
    kept = {id(event) for event in transcript_events([stored.event for stored in log])}
    return [stored for stored in log if id(stored.event) in kept]


def _frame(params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "method": "session/update", "params": params}
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _v1(log: list[StoredEvent], live: bool) -> list[bytes]:
    return [
        _frame({"sessionId": "s", "update": update})
        for stored in log
        for update in convert.event_updates(
            stored.event, live=live, compaction=True, plans=True, terminal_cards=True, subagents=True
        )
    ]


def _v2(log: list[StoredEvent], live: bool, epoch: Epoch | None = None) -> list[bytes]:
    updates = (
        [(s.seq, u) for s in log for u in render.event_updates(s.event, live=True)]
        if live
        else replay.replay_updates(log)
    )
    return [
        _frame(update_params("s", update, None if epoch is None else epoch.cursor("s", seq))) for seq, update in updates
    ]


def _timed(render_once: Callable[[], list[bytes]]) -> tuple[str, int, int]:
    times = []
    frames: list[bytes] = []
    for _ in range(RUNS):
        started = time.perf_counter()
        frames = render_once()
        times.append((time.perf_counter() - started) * 1000)
    return f"{statistics.median(times):.1f} ms (min {min(times):.1f})", len(frames), sum(len(f) for f in frames)


async def rendering_rows() -> list[dict[str, str]]:
    events = session_events()
    log = [StoredEvent(seq=i, created_at="2026-01-01T00:00:00.000000Z", event=e) for i, e in enumerate(events, 1)]
    history = _history(log)
    epoch = Epoch.mint()
    rows: list[dict[str, str]] = []
    cases: list[tuple[str, Callable[[], list[bytes]]]] = [
        ("v1 replay (session/load)", lambda: _v1(history, live=False)),
        ("v2 replay (session/resume)", lambda: _v2(history, live=False)),
        ("v2 replay with cursors", lambda: _v2(history, live=False, epoch=epoch)),
        ("v1 live", lambda: _v1(log, live=True)),
        ("v2 live", lambda: _v2(log, live=True)),
        ("v2 live with cursors", lambda: _v2(log, live=True, epoch=epoch)),
    ]
    for name, case in cases:
        value, frames, size = _timed(case)
        note = f"{frames} updates, {size / 1024:.0f} KiB framed; median of {RUNS}, in-process, rendering + JSON"
        rows.append({"name": f"render {EVENTS:,} events: {name}", "value": value, "note": note})
    rows += await _rejoin_rows(events, epoch)
    return rows


async def _rejoin_rows(events: list[SessionEvent], epoch: Epoch) -> list[dict[str, str]]:
    with tempfile.TemporaryDirectory(prefix="hermes-bench-v2-") as folder:
        store = await SqliteSessionStore.open(Path(folder) / "state.db")
        try:
            now = utc_now()
            await store.create_session(
                SessionRecord(id="s", cwd=folder, created_at=now, updated_at=now, mode_id="default")
            )
            written = await store.append_events("s", events)
            cursor = epoch.cursor("s", written[-MISSED - 1].seq)

            async def full() -> int:
                history = _history(await store.load_events("s"))
                return sum(len(f) for f in _v2(history, live=False, epoch=epoch))

            async def by_cursor() -> int:
                plan = await rejoin(store, epoch, "s", cursor)
                return sum(len(f) for f in _v2(plan.events, live=False, epoch=epoch))

            rows = []
            for name, run in (("full replay", full), (f"rejoin by cursor, {MISSED} missed", by_cursor)):
                times, size = [], 0
                for _ in range(RUNS):
                    started = time.perf_counter()
                    size = await run()
                    times.append((time.perf_counter() - started) * 1000)
                rows.append(
                    {
                        "name": f"v2 resume of {EVENTS:,} stored events: {name}",
                        "value": f"{statistics.median(times):.1f} ms (min {min(times):.1f})",
                        "note": f"SQLite read + rendering + JSON, {size / 1024:.0f} KiB; median of {RUNS}, in-process",
                    }
                )
            return rows
        finally:
            await store.aclose()
