"""The turn loop on fake ports: a scripted model, an in-memory store that can refuse chosen writes, a sink that
records what the editor was sent, and a gate that answers permission questions from a script or holds them.

``Loop.turn(text)`` runs one turn the way a session does (the repair of what a failed write left open first, with
the words a session uses). ``Loop.stored()`` is the complete stored event list with message ids made stable
(``m1``, ``m2``… in order of appearance) so tests can compare it whole with the events they expect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from hermes_acp.core import ModeId, SessionEvent, TextBlock, Usage
from hermes_acp.core.notice import Notice
from hermes_acp.errors import StorageError
from hermes_acp.providers.catalog import CatalogModel
from hermes_acp.providers.scripted import ScriptedProvider
from hermes_acp.storage import InMemorySessionStore, SessionRecord, StoredEvent, utc_now
from hermes_acp.tools.base import AnyTool
from hermes_acp.tools.context import ToolEnvironment, Workspace
from hermes_acp.turns import (
    CheckpointPolicy,
    LiveUpdate,
    PermissionAnswer,
    PermissionQuestion,
    Recorder,
    SessionProjection,
    TurnDeps,
    TurnResult,
    TurnState,
    run_turn,
)
from hermes_acp.turns.ports import LiveTextChunk, PermissionChoice
from hermes_acp.turns.recovery import STORE_FAILED_TEXT, recovery_events
from hermes_acp.turns.state import CompactionPolicy
from tests.fakes.server import scripted_model

__all__ = ["MODEL", "USAGE", "FailingStore", "FixedSurface", "Gate", "Loop", "Sink", "open_loop", "stable_ids"]

MODEL = scripted_model()
USAGE = Usage(input_tokens=100, output_tokens=20)
"""What every scripted reply reports."""


@dataclass(frozen=True)
class FixedSurface:
    """The loop's tool surface in these tests: the tools given, in ``default`` mode."""

    offered: tuple[AnyTool, ...]
    mode: ModeId = "default"

    def tools(self) -> list[AnyTool]:
        return list(self.offered)

    def why_unavailable(self, name: str) -> str:
        return f"the session is in {self.mode} mode"


@dataclass
class Sink:
    """What the editor was sent: ``(live, event)`` for stored events, and the transient updates."""

    events: list[tuple[bool, SessionEvent]] = field(default_factory=list)
    updates: list[LiveUpdate] = field(default_factory=list)
    arrived: anyio.Event = field(default_factory=anyio.Event)
    """Set (and replaced by a fresh one) by every send."""

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        self.events.append((live, event))
        self._arrived()

    async def emit_live(self, update: LiveUpdate) -> None:
        self.updates.append(update)
        self._arrived()

    async def notice(self, notice: Notice) -> bool:
        return False

    def _arrived(self) -> None:
        self.arrived.set()
        self.arrived = anyio.Event()

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        with anyio.fail_after(10):
            while not predicate():
                await self.arrived.wait()

    @property
    def text(self) -> str:
        return "".join(u.text for u in self.updates if isinstance(u, LiveTextChunk))


@dataclass
class Gate:
    """Answers permission questions in order from ``answers``; with ``hold`` set, waits for it first."""

    answers: list[PermissionAnswer] = field(default_factory=list)
    hold: anyio.Event | None = None
    asked: list[PermissionQuestion] = field(default_factory=list)
    was_asked: anyio.Event = field(default_factory=anyio.Event)

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        self.asked.append(question)
        self.was_asked.set()
        if self.hold is not None:
            await self.hold.wait()
        return self.answers.pop(0) if self.answers else "reject_once"

    async def choose(
        self, question: PermissionQuestion, choices: Sequence[PermissionChoice], *, refusal: str
    ) -> str | None:
        """The choice of the same kind as the next answer (``cancelled``: None)."""
        answer = await self.ask(question)
        if answer == "cancelled":
            return None
        return next((c.id for c in choices if c.kind == answer), refusal)


class FailingStore(InMemorySessionStore):
    """Refuses the next write whose events ``refuse_once``'s predicate matches, as a full disk would."""

    def __init__(self) -> None:
        super().__init__()
        self.refuse: Callable[[Sequence[SessionEvent]], bool] = lambda events: False
        self.refused: list[list[SessionEvent]] = []
        self.wrote = anyio.Event()
        """Set (and replaced by a fresh one) after every write."""

    def refuse_once(self, matches: Callable[[Sequence[SessionEvent]], bool]) -> None:
        self.refuse = matches

    async def append_events(self, session_id: str, events: Sequence[SessionEvent]) -> list[StoredEvent]:
        if self.refuse(events):
            self.refuse = lambda events: False
            self.refused.append(list(events))
            raise StorageError("session store: disk full: database or disk is full (SQLITE_FULL)", cause="disk_full")
        stored = await super().append_events(session_id, events)
        self.wrote.set()
        self.wrote = anyio.Event()
        return stored


@dataclass
class Loop:
    store: FailingStore
    sink: Sink
    gate: Gate
    provider: ScriptedProvider
    recorder: Recorder
    deps: TurnDeps
    turns: int = 0

    async def turn(self, text: str) -> TurnResult:
        """One turn, as a session runs it: first the repair a failed write may have left to do."""
        repairs = recovery_events(self.recorder.projection, text=STORE_FAILED_TEXT, inputs=False)
        if repairs:
            await self.recorder.record(*repairs)
        self.turns += 1
        with anyio.fail_after(10):
            return await run_turn(TurnState(turn_id=f"t{self.turns}"), self.deps, [TextBlock(text=text)])

    async def stored(self) -> list[SessionEvent]:
        return stable_ids([s.event for s in await self.store.load_events("s1")])

    def shown(self) -> list[SessionEvent]:
        """The stored events the editor was sent live, ids made stable like ``stored``'s."""
        return stable_ids([event for live, event in self.sink.events if live])


def history(events: list[SessionEvent]) -> list[dict[str, Any]]:
    """A stored history as plain data, ids made stable (``stable_ids``), for a whole-history ``snapshot()``."""
    return [{"kind": e.kind, **e.model_dump(mode="json", exclude_defaults=True)} for e in stable_ids(events)]


def stable_ids(events: list[SessionEvent]) -> list[SessionEvent]:
    """``events`` with each message id replaced by ``m1``, ``m2``… in order of first appearance."""
    names: dict[str, str] = {}
    out: list[SessionEvent] = []
    for event in events:
        message_id = getattr(event, "message_id", None)
        if isinstance(message_id, str):
            name = names.setdefault(message_id, f"m{len(names) + 1}")
            out.append(event.model_copy(update={"message_id": name}))
        else:
            out.append(event)
    return out


async def open_loop(
    tmp_path: Path,
    provider: ScriptedProvider,
    *,
    tools: Sequence[AnyTool] = (),
    gate: Gate | None = None,
    checkpoints: CheckpointPolicy | None = None,
    max_requests: int = 10,
    model: CatalogModel = MODEL,
    compaction: CompactionPolicy | None = None,
) -> Loop:
    """The loop's wiring on fakes; checkpoints are off unless a test asks for them (they are timed)."""
    store = FailingStore()
    now = utc_now()
    await store.create_session(
        SessionRecord(id="s1", cwd=str(tmp_path), created_at=now, updated_at=now, mode_id="default")
    )
    sink = Sink()
    gate = gate or Gate()
    recorder = Recorder("s1", store, sink, SessionProjection())
    deps = TurnDeps(
        model=model,
        provider=provider,
        system_prompt="You are a test.",
        surface=FixedSurface(tuple(tools)),
        recorder=recorder,
        gate=gate,
        env=ToolEnvironment(session_id="s1", workspace=Workspace(cwd=tmp_path), cache_dir=tmp_path / "cache"),
        max_requests=max_requests,
        permission_timeout_s=0,
        checkpoints=checkpoints,
        compaction=compaction or CompactionPolicy(),
    )
    return Loop(store, sink, gate, provider, recorder, deps)
