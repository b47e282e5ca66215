"""The session layer's own answers: queued work and cancel (docs/architecture.md §4.10, §4.11), titles, models."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from hermes_acp.core import DisplayBlock, SessionEvent, TextBlock, TextPart
from hermes_acp.providers.scripted import ScriptedProvider, ScriptedReply

from .support import Bridge, RecordingSink, client_of, open_manager

pytestmark = pytest.mark.anyio


async def test_cancel_answers_a_queued_command_cancelled_and_it_never_runs(tmp_path: Path) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text="busy for a while")], hold=hold)])
    results: dict[str, Any] = {}
    with anyio.fail_after(5):
        async with open_manager(tmp_path, provider) as manager:
            session = await manager.new_session(str(tmp_path), None, [], client=client_of(manager))

            async def turn() -> None:
                results["turn"] = await session.prompt([TextBlock(text="work")])

            async def command() -> None:
                display: list[DisplayBlock] = [TextBlock(text="/mode read_only")]
                results["command"] = await session.prompt(display)

            async with anyio.create_task_group() as group:
                group.start_soon(turn)
                await anyio.wait_all_tasks_blocked()
                group.start_soon(command)
                await anyio.wait_all_tasks_blocked()
                session.cancel()
    assert results["turn"].stop_reason == "cancelled"
    assert results["command"].stop_reason == "cancelled"
    assert session.options.mode == "default"


class _NoSinkBridge(Bridge):
    def sink(self, session_id: str) -> RecordingSink:
        raise RuntimeError("no update sink for this session")


async def test_a_session_that_fails_to_open_leaves_no_owner_task_behind(tmp_path: Path) -> None:
    with anyio.fail_after(5):
        async with open_manager(tmp_path, ScriptedProvider(), bridge=_NoSinkBridge()) as manager:
            with pytest.raises(RuntimeError, match="no update sink"):
                await manager.new_session(str(tmp_path), None, [], client=client_of(manager))


class _WaitsForTheOther:
    """Held by one session's owner task; leaving it waits until the other session's is being left too."""

    def __init__(self, name: str, own: anyio.Event, other: anyio.Event, met: list[str]) -> None:
        self.name, self.own, self.other, self.met = name, own, other, met

    async def __aenter__(self) -> _WaitsForTheOther:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.own.set()
        await self.other.wait()
        self.met.append(self.name)


async def test_closing_the_manager_closes_its_sessions_at_once(tmp_path: Path) -> None:
    first_leaving, second_leaving = anyio.Event(), anyio.Event()
    met: list[str] = []
    with anyio.fail_after(10):
        async with open_manager(tmp_path, ScriptedProvider()) as manager:
            first = await manager.new_session(str(tmp_path), None, [], client=client_of(manager))
            second = await manager.new_session(str(tmp_path), None, [], client=client_of(manager))
            await first.runtime.enter(_WaitsForTheOther("first", first_leaving, second_leaving, met))
            await second.runtime.enter(_WaitsForTheOther("second", second_leaving, first_leaving, met))
    assert sorted(met) == ["first", "second"]


class _YieldingSink(RecordingSink):
    """Lets other tasks run at every event, as a real connection does."""

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        await anyio.lowlevel.checkpoint()
        await super().emit_event(event, live=live, seq=seq)


class _YieldingBridge(Bridge):
    def sink(self, session_id: str) -> RecordingSink:
        return self.sinks.setdefault(session_id, _YieldingSink())


async def test_a_load_replays_first_and_warms_the_turn_machinery_up_after(tmp_path: Path) -> None:
    """Warming up imports in a worker thread; started before a replay, it competes with it for the interpreter
    (a 200-turn load took three times as long)."""
    bridge = _YieldingBridge()
    seen_at_warm_up: list[int] = []
    opened: dict[str, str] = {}

    async def recording_warm_up() -> None:
        seen_at_warm_up.append(len(bridge.sink(opened["id"]).events))

    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text="hello")])])
    with anyio.fail_after(5):
        async with open_manager(tmp_path, provider, bridge=bridge, warm_up=recording_warm_up) as manager:
            session = await manager.new_session(str(tmp_path), None, [], client=client_of(manager))
            opened["id"] = session.id
            await session.prompt([TextBlock(text="hi")])
            await manager.close_session(session.id)
            before_load = len(bridge.sink(session.id).events)
            await manager.open_existing(session.id, str(tmp_path), None, [], replay=True, client=client_of(manager))
            await anyio.wait_all_tasks_blocked()
            replayed = len(bridge.sink(session.id).events) - before_load
    assert replayed >= 3, "the load replayed the prompt, the answer and the turn's end"
    assert len(seen_at_warm_up) == 2, "each opening warms up once"
    assert seen_at_warm_up[1] == before_load + replayed, "the warm-up of the load began after its replay"
