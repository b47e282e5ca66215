"""``SessionManager``: the lifecycle of sessions — new, load, resume, fork, list, close, delete.

It keeps the live sessions of this process, opens stored ones (repairing what a crash left open, then optionally
replaying the log to the client), and starts each session's owner task in the root task group it was attached to.
Paths from the client are checked here: ``cwd`` must be absolute and is stored normalised. No ACP here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import structlog
from anyio.abc import TaskGroup

from hermes_acp.core import SessionEvent
from hermes_acp.core.ids import new_session_id
from hermes_acp.errors import SessionNotFoundError
from hermes_acp.mcp_client import McpServers
from hermes_acp.storage.base import PAGE_SIZE, SessionPage, SessionRecord, utc_now
from hermes_acp.tools.context import Workspace
from hermes_acp.turns.projection import SessionProjection, transcript_events
from hermes_acp.turns.recorder import Recorder

from ._runtime import SessionRuntime
from .effort import EFFORT_META_KEY
from .instructions import load_instructions
from .prompt_files import load_prompt_files
from .records import directories, new_record, normalise_cwd
from .recovery import recovery_events
from .session import Session, SessionServices
from .switches import SWITCHES
from .turn_imports import warm_up_turn_modules

__all__ = ["SessionManager"]

_log = structlog.get_logger("hermes_acp.sessions")
SWITCH_IDS = tuple(switch.id for switch in SWITCHES)


class SessionManager:
    def __init__(self, services: SessionServices):
        self.services = services
        self._live: dict[str, Session] = {}
        self._task_group: TaskGroup | None = None

    def attach(self, task_group: TaskGroup) -> None:
        """Owner tasks of sessions are started in this (root) task group."""
        self._task_group = task_group

    def get(self, session_id: str) -> Session:
        session = self._live.get(session_id)
        if session is None:
            raise SessionNotFoundError(session_id)
        return session

    def live(self, session_id: str) -> Session | None:
        return self._live.get(session_id)

    async def new_session(
        self, cwd: str, additional: Sequence[str] | None, mcp_servers: list[dict[str, object]]
    ) -> Session:
        record = await new_record(cwd, additional, self.services.catalog.default_id)
        await self.services.store.create_session(record)
        return await self._open(record, SessionProjection(), mcp_servers)

    async def open_existing(
        self,
        session_id: str,
        cwd: str,
        additional: Sequence[str] | None,
        mcp_servers: list[dict[str, object]],
        *,
        replay: bool,
    ) -> Session:
        """``session/load`` (replay=True) and ``session/resume`` (replay=False)."""
        real = normalise_cwd(cwd)
        extra = directories(additional)
        live = self._live.get(session_id)
        if live is not None:
            if replay:
                await self._replay(live, [stored.event for stored in await self.services.store.load_events(session_id)])
            return live
        record = await self.services.store.get_session(session_id)
        if record is None:
            raise SessionNotFoundError(session_id)
        changes: dict[str, object] = {}
        if real != record.cwd:
            changes["cwd"] = real
        if additional is not None and extra != record.meta.get("additional_directories"):
            changes["meta"] = {**record.meta, "additional_directories": extra}
        if changes:
            record = await self.services.store.update_session(session_id, **changes)
        events = [stored.event for stored in await self.services.store.load_events(session_id)]
        projection = SessionProjection()
        for event in events:
            projection.apply(event)
        repairs = recovery_events(projection)
        if repairs:
            _log.info("repairing interrupted session", session_id=session_id, events=len(repairs))
            await self.services.store.append_events(session_id, repairs)
            for event in repairs:
                projection.apply(event)
            events.extend(repairs)
        session = await self._open(record, projection, mcp_servers, warm_up=not replay)
        if replay:
            await self._replay(session, events)
            self._warm_up(session)  # after the replay, which it would slow down by competing for the interpreter
        return session

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional: Sequence[str] | None,
        mcp_servers: list[dict[str, object]],
    ) -> Session:
        real = normalise_cwd(cwd)
        parent = self._live.get(session_id)
        source = parent.record if parent is not None else await self.services.store.get_session(session_id)
        if source is None:
            raise SessionNotFoundError(session_id)
        if parent is not None and parent.busy:
            _log.info("forking a session while it runs a turn", session_id=session_id)
        now = utc_now()
        extra = directories(additional) if additional is not None else source.meta.get("additional_directories", [])
        record = SessionRecord(
            id=new_session_id(),
            cwd=real,
            created_at=now,
            updated_at=now,
            mode_id=source.mode_id,
            model_id=source.model_id,
            title=f"{source.title} (fork)" if source.title else None,
            parent_id=source.id,
            meta={
                "additional_directories": extra,
                "forked_from": {"sessionId": source.id, "at": now},
                **{key: source.meta[key] for key in (EFFORT_META_KEY, *SWITCH_IDS) if key in source.meta},
            },
        )
        await self.services.store.fork_session(source.id, record)
        servers = mcp_servers or (parent.mcp_servers if parent is not None else [])
        return await self.open_existing(record.id, cwd, additional, servers, replay=False)

    async def list_sessions(self, cwd: str | None, cursor: str | None) -> SessionPage:
        real = normalise_cwd(cwd) if cwd is not None else None
        return await self.services.store.list_sessions(cwd=real, cursor=cursor, limit=PAGE_SIZE)

    async def close_session(self, session_id: str) -> None:
        session = self._live.pop(session_id, None)
        if session is None:
            if await self.services.store.get_session(session_id) is None:
                raise SessionNotFoundError(session_id)
            return
        await session.close()

    async def delete_session(self, session_id: str) -> None:
        """Archive: hidden from ``session/list``; the history stays and can still be loaded by id."""
        if await self.services.store.get_session(session_id) is None:
            raise SessionNotFoundError(session_id)
        session = self._live.pop(session_id, None)
        if session is not None:
            await session.close()
        await self.services.store.update_session(session_id, archived=True)

    async def aclose(self) -> None:
        """Close every live session, all at once (process exit); each close is bounded."""
        sessions, self._live = list(self._live.values()), {}
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for session in sessions:
                    group.start_soon(session.close, name=f"close session {session.id}")

    async def _open(
        self,
        record: SessionRecord,
        projection: SessionProjection,
        mcp_servers: list[dict[str, object]],
        *,
        warm_up: bool = True,
    ) -> Session:
        if self._task_group is None:
            raise RuntimeError("SessionManager.attach() must be called before sessions are opened")
        runtime = SessionRuntime(record.id)
        await self._task_group.start(runtime.run)
        try:
            servers = McpServers(mcp_servers, cwd=Path(record.cwd), stderr_dir=self.services.settings.logs_dir / "mcp")
            if servers:
                await runtime.enter(servers.running())  # starts them; does not wait for them
            recorder = Recorder(record.id, self.services.store, self.services.client.sink(record.id), projection)
            extra = tuple(Path(p) for p in record.meta.get("additional_directories", []) if isinstance(p, str))
            workspace = Workspace(cwd=Path(record.cwd), additional=extra)
            session = Session(
                record,
                recorder,
                runtime,
                self.services,
                workspace=workspace,
                mcp_servers=list(mcp_servers),
                mcp=servers,
                instructions=await load_instructions(workspace, self.services.settings.home),
                prompt_files=await load_prompt_files(workspace.cwd, self.services.settings.home),
            )
        except BaseException:
            with anyio.CancelScope(shield=True):  # the owner task would outlive a session that never opened
                await runtime.aclose()
            raise
        self._live[record.id] = session
        if warm_up:
            self._warm_up(session)
        return session

    def _warm_up(self, session: Session) -> None:
        """Find the session's skills, then load the turn machinery and the session's model provider (its HTTP stack
        costs ~0.1 s to import) in the background, so the first prompt does not wait for them."""
        model = session.current_model()
        providers = self.services.providers

        async def warm_up() -> None:  # one after the other: two threads importing at once could wait on each other
            await session.skills.ensure()
            await warm_up_turn_modules()
            if model is not None:
                await providers.warm_up(model)

        session.runtime.submit(warm_up, "warm up")

    async def _replay(self, session: Session, events: list[SessionEvent]) -> None:
        """Re-emit every stored event, in order, before the load responds (docs/architecture.md §4.2)."""
        sink = session.recorder.sink
        for event in transcript_events(events):
            await sink.emit_event(event, live=False)
