"""``SessionManager``: the lifecycle of sessions — new, load, resume, fork, list, close, delete, status —, the
metadata a client sets on any stored session (title, archive), and the live children of ``delegate`` calls
(``child_record``, ``open_child``, ``close_child``: the ``ChildOpener`` of ``subagents.lineage``).

It keeps the live sessions of this process (the host's: every connection shares them), opens stored ones
(repairing what a crash left open), and attaches the connection that asked: ``session/load`` with catch-up (the
log so far, then live), ``session/resume`` without. A session opened by a connection runs with that connection's
services (its environment's keys and variables). It starts each session's owner task, and its turns, in the root
task group it was attached to. Paths from the client are checked here: ``cwd`` must be absolute and is stored
normalised. A session's history is its log's timeline (``turns.timeline``: what rewinds cut is left out); a fork
may end at a message of it. A system prompt a client gives is stored with the session (a live session keeps the
one it opened with: another is refused). Archiving a live session cancels its work and closes it first; deleting
hides it for good (its log stays, loadable by id). No ACP here.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import anyio
import structlog
from anyio.abc import TaskGroup

from hermes_acp.commands.instructions import load_instructions
from hermes_acp.commands.prompt_files import load_prompt_files
from hermes_acp.core import SessionEvent, TitleSet, TurnEnded
from hermes_acp.core.notice import Notice
from hermes_acp.errors import InvalidParamsError, SessionNotFoundError, SessionNotOpenError
from hermes_acp.mcp_client import McpServers
from hermes_acp.providers.catalog import CatalogModel
from hermes_acp.storage.base import PAGE_SIZE, ArchiveFilter, SessionPage, SessionRecord, StoredEvent
from hermes_acp.subagents.lineage import ChildView, ParentView, SubagentLink
from hermes_acp.subagents.view import Relay
from hermes_acp.tools.context import Workspace
from hermes_acp.turns.projection import SessionProjection
from hermes_acp.turns.recorder import Recorder
from hermes_acp.turns.recovery import recovery_events
from hermes_acp.turns.system_prompt import ClientSystemPrompt
from hermes_acp.turns.timeline import effective, fork_point

from ._runtime import SessionRuntime
from .audience import Audience
from .mcp_user import McpUser
from .metadata import normalise_title, stored_system_prompt, with_system_prompt
from .records import child_record, derived_record, directories, new_record, normalise_cwd
from .services import SessionServices
from .session import Session
from .turn_imports import warm_up_turn_modules
from .views import ClientBridge, Foreground

__all__ = ["SessionManager"]


def _event(stored: StoredEvent) -> SessionEvent:
    return stored.event


_log = structlog.get_logger("hermes_acp.sessions")


SessionStatus = Literal["open", "saved"]


class SessionManager:
    def __init__(
        self,
        services: SessionServices,
        *,
        wait_for_attach: bool = False,
        unattended_wait_s: float = 0.0,
        warm_up: Callable[[], Awaitable[None]] = warm_up_turn_modules,
    ):
        """``services``: the host's own (its store and home). ``wait_for_attach``: a question nobody is attached
        to answer waits for the next connection (a session host), bounded by ``unattended_wait_s`` (0: as long as
        the turn lives); otherwise it fails at once (inline mode: the one client has gone). ``warm_up``: loads the
        turn machinery in the background once a session opened (``turn_imports``)."""
        self.services = services
        self._warm_up_turns = warm_up
        self._wait_for_attach = wait_for_attach
        self._unattended_wait_s = unattended_wait_s
        self._live: dict[str, Session] = {}
        self._task_group: TaskGroup | None = None

    def attach(self, task_group: TaskGroup) -> None:
        """Owner tasks of sessions are started in this (root) task group."""
        self._task_group = task_group

    def background(self, work: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
        """Run ``work`` in the root task group: it outlives the request that started it."""
        if self._task_group is None:
            raise RuntimeError("SessionManager.attach() must be called first")
        self._task_group.start_soon(work, name=name)

    async def attached(self, session_id: str, client: ClientBridge) -> Session:
        """The live session ``client`` is attached to (one it created, loaded or resumed). For any other id the error
        says why, from the store read as ``session/load`` reads it (``_stored``): a damaged store names the database
        (``StorageError``), an id never stored is not found, and a stored session is not open in this connection."""
        session = self._live.get(session_id)
        if session is not None and session.audience.has(client):
            return session
        if session is None:
            await self._stored(session_id)
        raise SessionNotOpenError(session_id)  # it is stored: never "not found" for one that exists

    async def _stored(self, session_id: str) -> tuple[SessionRecord, list[StoredEvent]]:
        """A stored session's record and log, read as a load reads them: ``SessionNotFoundError`` when there is none,
        the store's ``StorageError`` (naming the database) when they cannot be read."""
        record = await self.services.store.get_session(session_id)
        if record is None:
            raise SessionNotFoundError(session_id)
        return record, await self.services.store.load_events(session_id)

    def live(self, session_id: str) -> Session | None:
        return self._live.get(session_id)

    @property
    def sessions(self) -> list[Session]:
        """The live sessions."""
        return list(self._live.values())

    async def status(self, session_id: str) -> SessionStatus:
        """``open`` (live in this process, for any connection) or ``saved``; ``SessionNotFoundError`` otherwise."""
        if session_id in self._live:
            return "open"
        if await self.services.store.get_session(session_id) is None:
            raise SessionNotFoundError(session_id)
        return "saved"

    async def new_session(
        self,
        cwd: str,
        additional: Sequence[str] | None,
        mcp_servers: list[dict[str, object]],
        *,
        client: ClientBridge,
        system_prompt: ClientSystemPrompt | None = None,
    ) -> Session:
        services = client.services
        record = await new_record(cwd, additional, services.catalog.default_id)
        if system_prompt is not None:
            record = replace(record, meta=with_system_prompt(record.meta, system_prompt))
        await self.services.store.create_session(record)
        session = await self._open(record, SessionProjection(), mcp_servers, services)
        await session.attach(client)
        return session

    async def open_existing(
        self,
        session_id: str,
        cwd: str,
        additional: Sequence[str] | None,
        mcp_servers: list[dict[str, object]],
        *,
        replay: bool,
        client: ClientBridge,
        system_prompt: ClientSystemPrompt | None = None,
        after: int | None = None,
    ) -> Session:
        """``session/load`` (replay=True: the log so far, then live; ``after``: only the events after that seq, for
        a client that rejoins by cursor) and ``session/resume`` (replay=False)."""
        real = normalise_cwd(cwd)
        extra = directories(additional)
        live = self._live.get(session_id)
        if live is not None:
            if system_prompt is not None and system_prompt != live.options.client_system_prompt:
                raise InvalidParamsError(
                    "systemPrompt: this session is open with another system prompt, which stays byte for byte"
                    " while it is open; send the same one, or none, or close the session first",
                    field="systemPrompt",
                )
            await live.attach(client, catch_up=replay, after=after)
            return live
        record, logged = await self._stored(session_id)
        changes: dict[str, object] = {}
        if real != record.cwd:
            changes["cwd"] = real
        meta = record.meta
        if additional is not None and extra != meta.get("additional_directories"):
            meta = {**meta, "additional_directories": extra}
        if system_prompt is not None and system_prompt != stored_system_prompt(meta):
            meta = with_system_prompt(meta, system_prompt)
        if meta is not record.meta:
            changes["meta"] = meta
        store = self.services.store
        if changes and store.read_only is None:  # a read-only store still loads: it keeps the old values
            record = await store.update_session(session_id, **changes)
        kept = effective(logged, _event)
        history: list[SessionEvent | StoredEvent] = list(kept)
        projection = SessionProjection()
        for stored in history:
            projection.apply(stored.event if isinstance(stored, StoredEvent) else stored)
        repairs = recovery_events(projection)
        if repairs:
            _log.info("repairing interrupted session", session_id=session_id, events=len(repairs))
            for event in repairs:
                projection.apply(event)
            if store.read_only is None:  # else shown and folded only: stored by the next load that can write
                history.extend(await store.append_events(session_id, repairs))
            else:
                history.extend(repairs)
        projection_events = [item.event if isinstance(item, StoredEvent) else item for item in history]
        if after is not None:
            history = [item for item in history if not isinstance(item, StoredEvent) or item.seq > after]
        session = await self._open(record, projection, mcp_servers, client.services, warm_up=not replay)
        ended = next((e for e in reversed(projection_events) if isinstance(e, TurnEnded)), None)
        if ended is not None:  # idle, as its last turn left it
            session.audience.state = Foreground("idle", ended.stop_reason)
        await session.attach(client, replay=history, catch_up=replay)
        if replay:
            self._warm_up(session)  # after the replay, which it would slow down by competing for the interpreter
        return session

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional: Sequence[str] | None,
        mcp_servers: list[dict[str, object]],
        *,
        client: ClientBridge,
        system_prompt: ClientSystemPrompt | None = None,
        message_id: str | None = None,
    ) -> Session:
        """A copy of the session under a new id: its whole log, or (``message_id``) its timeline up to and including
        that message (an agent message with its calls' results), as the fork-at-message proposal has it."""
        real = normalise_cwd(cwd)
        parent = self._live.get(session_id)
        source = parent.options.record if parent is not None else await self.services.store.get_session(session_id)
        if source is None:
            raise SessionNotFoundError(session_id)
        provenance = source.provenance
        if provenance is not None and provenance.kind == "subagent":
            raise InvalidParamsError(
                f"sessionId: {session_id} is a subagent of session {provenance.session_id} and cannot be forked;"
                " fork its parent (the fork shows the subagent's work in place, without copying it)",
                field="sessionId",
            )
        if parent is not None and parent.busy:
            _log.info("forking a session while it runs a turn", session_id=session_id)
        until = None
        if message_id is not None:
            until = await self._fork_seq(session_id, message_id)
        record = derived_record(
            source,
            kind="fork",
            title=f"{source.title} (fork)" if source.title else None,
            cwd=real,
            additional=directories(additional) if additional is not None else None,
            message_id=message_id,
            meta=with_system_prompt({}, system_prompt),
        )
        await self.services.store.fork_session(source.id, record, until_seq=until)
        servers = mcp_servers or (parent.mcp_servers if parent is not None else [])
        return await self.open_existing(record.id, cwd, additional, servers, replay=False, client=client)

    async def _fork_seq(self, session_id: str, message_id: str) -> int:
        """The sequence number of the last event a fork at ``message_id`` keeps; -32602 for a message that is not
        in the session's timeline."""
        timeline = effective(await self.services.store.load_events(session_id), _event)
        last = fork_point([stored.event for stored in timeline], message_id)
        if last is None:
            raise InvalidParamsError(
                f"_meta.messageId: {message_id!r} is not a message of this session's history", field="_meta.messageId"
            )
        return timeline[last].seq

    async def list_sessions(
        self, cwd: str | None, cursor: str | None, archived: ArchiveFilter = "exclude", *, subagents: bool = False
    ) -> SessionPage:
        """``subagents``: child sessions too (by default they are reached through their parent)."""
        real = normalise_cwd(cwd) if cwd is not None else None
        return await self.services.store.list_sessions(
            cwd=real, cursor=cursor, limit=PAGE_SIZE, archived=archived, subagents=subagents
        )

    async def _listable(self, session_id: str) -> SessionRecord:
        """A stored session ``session/list`` could return (archived or not); deleted ones are not found."""
        record = await self.services.store.get_session(session_id)
        if record is None or record.deleted:
            raise SessionNotFoundError(session_id)
        return record

    async def set_title(self, session_id: str, title: str) -> str:
        """``session/set_title``: for any listable session, open or not; stored (normalised) before the answer, the
        ``TitleSet`` in its log, and the attached connections told. Returns the title as stored."""
        live = self._live.get(session_id)
        if live is not None:
            return await live.options.set_title(title)
        await self._listable(session_id)
        title = normalise_title(title)
        record = await self.services.store.update_session(session_id, title=title)
        stored = record.title or title
        await self.services.store.append_events(session_id, [TitleSet(title=stored, updated_at=record.updated_at)])
        return stored

    async def archive(self, session_id: str) -> None:
        """``session/archive``: a live session's work is cancelled and it is closed for every connection first."""
        await self._listable(session_id)
        session = self._live.pop(session_id, None)
        if session is not None:
            await session.close()
        await self.services.store.update_session(session_id, archived=True)

    async def unarchive(self, session_id: str) -> None:
        """``session/unarchive``: listed again; it is not opened."""
        await self._listable(session_id)
        await self.services.store.update_session(session_id, archived=False)

    async def close_session(self, session_id: str, *, client: ClientBridge | None = None) -> None:
        """``session/close``: ``client`` is detached; the session closes once no other connection is attached."""
        session = self._live.get(session_id)
        if session is None:
            if await self.services.store.get_session(session_id) is None:
                raise SessionNotFoundError(session_id)
            return
        if client is not None:
            await session.detach(client)
            if len(session.audience):
                return
        self._live.pop(session_id, None)
        await session.close()

    async def detach_everywhere(self, client: ClientBridge, *, cancel_turns: bool) -> None:
        """The connection ``client`` left: detach it from every session (its turns go on unless ``cancel_turns``)."""
        for session in list(self._live.values()):
            await session.detach(client, cancel_turns=cancel_turns)

    async def delete_session(self, session_id: str) -> None:
        """Delete: never listed again (archived or not); the history stays and can still be loaded by id."""
        if await self.services.store.get_session(session_id) is None:
            raise SessionNotFoundError(session_id)
        session = self._live.pop(session_id, None)
        if session is not None:
            await session.close()
        await self.services.store.update_session(session_id, deleted=True)

    async def aclose(self) -> None:
        """Close every live session, all at once (process exit); each close is bounded."""
        sessions, self._live = list(self._live.values()), {}
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for session in sessions:
                    group.start_soon(session.close, name=f"close session {session.id}")

    def child_record(self, parent: ParentView, link: SubagentLink, model: CatalogModel | None) -> SessionRecord:
        """The record of a subagent of ``parent`` (``records.child_record``)."""
        return child_record(
            parent.options.record,
            parent.workspace.additional,
            tool_call_id=link.tool_call_id,
            mode_id=link.mode(),
            model_id=model.id if model is not None else None,
            title=link.title,
            role=link.role,
            depth=link.depth,
        )

    async def open_child(self, record: SessionRecord, link: SubagentLink, relay: Relay) -> Session:
        """A subagent's session (its record is stored already): live like any other, with its parent's
        directories, MCP connections (the same ones: nothing new starts), instruction files and services, its
        traffic relayed to its parent's connections."""
        parent = self._live.get(link.parent.id)
        if parent is None:
            raise RuntimeError(f"session {link.parent.id} is not open, so it cannot start a subagent")
        runtime, spawn = await self._start_runtime(record.id)
        try:
            audience = Audience(
                record.id, wait_for_attach=self._wait_for_attach, unattended_wait_s=self._unattended_wait_s, relay=relay
            )
            recorder = Recorder(record.id, self.services.store, audience, SessionProjection())
            session = Session(
                record,
                recorder,
                runtime,
                parent.services,
                audience=audience,
                spawn=spawn,
                workspace=parent.workspace,
                mcp_servers=parent.mcp_servers,
                mcp=parent.mcp,
                instructions=parent.instructions,
                link=link,
                children=self,
            )
        except BaseException:
            with anyio.CancelScope(shield=True):
                await runtime.aclose()
            raise
        self._live[record.id] = session
        return session

    async def close_child(self, child: ChildView) -> None:
        """A subagent's work is over: its turn settled (cancelled first if it still runs), it leaves the live
        sessions. Its log stays: a client may load it, and its parent's replay shows it."""
        if self._live.get(child.id) is child:
            del self._live[child.id]
        await child.close()

    async def _start_runtime(
        self, session_id: str
    ) -> tuple[SessionRuntime, Callable[[Callable[[], Coroutine[Any, Any, None]], str], None]]:
        task_group = self._task_group
        if task_group is None:
            raise RuntimeError("SessionManager.attach() must be called before sessions are opened")
        runtime = SessionRuntime(session_id)
        await task_group.start(runtime.run)

        def spawn(work: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
            task_group.start_soon(work, name=name)

        return runtime, spawn

    async def _open(
        self,
        record: SessionRecord,
        projection: SessionProjection,
        mcp_servers: list[dict[str, object]],
        services: SessionServices,
        *,
        warm_up: bool = True,
    ) -> Session:
        runtime, spawn = await self._start_runtime(record.id)
        try:
            settings = self.services.settings
            extra = tuple(Path(p) for p in record.meta.get("additional_directories", []) if isinstance(p, str))
            workspace = Workspace(cwd=Path(record.cwd), additional=extra)
            servers = McpServers(
                mcp_servers,
                cwd=Path(record.cwd),
                stderr_dir=settings.logs_dir / "mcp",
                pass_env=settings.sandbox.pass_env,
                ready_wait_s=settings.mcp.ready_wait_s,
                configured=settings.mcp.servers,
                auth_dir=settings.mcp_auth_dir,
                roots=workspace.roots,
            )
            if servers:
                await runtime.enter(servers.running())  # starts them; does not wait for them
            audience = Audience(
                record.id, wait_for_attach=self._wait_for_attach, unattended_wait_s=self._unattended_wait_s
            )
            recorder = Recorder(record.id, self.services.store, audience, projection)
            session = Session(
                record,
                recorder,
                runtime,
                services,
                audience=audience,
                spawn=spawn,
                workspace=workspace,
                mcp_servers=list(mcp_servers),
                mcp=servers,
                instructions=await load_instructions(workspace, self.services.settings.home),
                prompt_files=await load_prompt_files(workspace.cwd, self.services.settings.home),
                children=self,
            )
            if servers:
                await _serve_user(session, servers)
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
        model = session.options.current_model()
        providers = session.services.providers

        async def warm_up() -> None:  # one after the other: two threads importing at once could wait on each other
            await session.commands.skills.ensure()
            await self._warm_up_turns()
            if model is not None:
                await providers.warm_up(model)

        session.runtime.submit(warm_up, "warm up")


async def _serve_user(session: Session, servers: McpServers) -> None:
    """The session's editors answer its MCP servers' questions and sign-ins (``mcp_user``); its commands follow the
    servers' prompts (in the owner task, for the session's life)."""
    runtime, notices = session.runtime, session.notices

    def tell(notice: Notice) -> None:
        async def told() -> None:
            await notices.tell(notice)

        runtime.submit(told, "MCP notice")

    user = McpUser(session.audience, tell)
    servers.use(questions=user, sign_in=user)
    await runtime.enter(_for_life(session.commands.follow_servers))


@contextlib.asynccontextmanager
async def _for_life(work: Callable[[], Coroutine[Any, Any, None]]) -> AsyncIterator[None]:
    """``work`` runs until the session closes (its owner task leaves this)."""
    async with anyio.create_task_group() as group:
        group.start_soon(work)
        try:
            yield
        finally:
            group.cancel_scope.cancel()
