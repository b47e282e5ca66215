"""``McpServers``: the MCP servers an editor gave one session (and config.toml's ``[mcp.servers]``) — started at
once, offered as tools when ready.

The session creates it from the editor's specs and enters ``running()`` in its owner task: that opens a task group
in which each server's supervised connection (``ServerConnection.supervise``) runs, and returns at once
(session/new never waits for a server). Leaving it — session close, delete, process exit — closes them; each
connection's SDK transport shuts its server down, shielded and bounded (a stdio child: stdin closed, then
SIGTERM, then SIGKILL).

Before a turn, ``prepare_turn()`` waits (bounded by ``ready_wait_s``) until no server is still starting and returns
notices for the user: a server that failed (and why), one still starting, a spec that cannot be used. Each is reported
once. ``tools()`` is the MCP part of the tool surface, derived on every call from the live state
(docs/architecture.md §4.6): the tools of every server that has listed them and has not failed since, plus
resource/prompt helpers, named by ``naming`` and sorted by name. ``status()`` describes each server for the user
(state, why it failed, the tools it offers now); ``reconnect(name)`` drops a server's connection and connects again
through its supervised connection.

What the servers may ask of the session goes through two ports the session supplies (phase 2: over its editors):
``Questions`` (a server's ``elicitation/create``; declined at once without one) and ``SignIn`` (the user's step of
an OAuth sign-in). An HTTP or SSE server behind OAuth signs in with the tokens stored in ``auth_dir`` without
asking anyone; when that is not enough it waits in "needs sign-in" (the session goes on; its tools appear once it is
ready), and the first time it does a sign-in starts by itself when a ``SignIn`` port is there; ``sign_in(name)``
starts one (or joins the one running) at the user's request, ``finish_sign_in(name, address)`` ends one with the
address a browser on another machine ended on, ``sign_out(name)`` forgets the server's tokens. The
servers see the session's directories as MCP roots (``set_roots`` tells them of a change). A server's list changes
are taken at the next ``prepare_turn()``, never in the middle of a turn; ``prompts()`` and ``get_prompt()`` serve the
``/server:prompt`` commands. It knows nothing about modes, providers or ACP.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import structlog

from hermes_acp.config import McpServerSettings
from hermes_acp.core.bounds import MAX_MCP_TOOLS_PER_SERVER
from hermes_acp.core.flags import Changed
from hermes_acp.errors import ToolError
from hermes_acp.exec.environment import EnvPolicy
from hermes_acp.tools.base import AnyTool

from ._failures import NotConnected, SignInFailed
from .auth import OAuthClient, SignIn, WireAuth, environment_secret, redirect_query
from .connection import McpTimeouts, ServerConnection
from .elicitation import Questions
from .naming import ToolKey, assign_names
from .prompts import ServerPrompt, prompt_text, read_prompts
from .remote_tools import UTILITY_TOOLS, McpTool, Utility, UtilityTool
from .specs import HttpSpec, StdioSpec, UnusableSpec, parse_specs
from .supervisor import LinkState, load_sign_in
from .wire_port import OpenWire

__all__ = ["READY_WAIT_S", "McpServers", "ServerStatus"]

READY_WAIT_S = 20.0
"""How long the first model request of a turn waits for servers that are still starting, unless told otherwise."""
_log = structlog.get_logger("hermes_acp.mcp")
_STATES: dict[LinkState, str] = {
    LinkState.IDLE: "starting",
    LinkState.STARTING: "starting",
    LinkState.READY: "ready",
    LinkState.DOWN: "disconnected (it reconnects at its next call)",
    LinkState.FAILED: "failed",
    LinkState.SIGN_IN: "needs sign-in",
    LinkState.CLOSED: "closed",
}
SIGNING_IN = "signing in"


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server as the user is shown it. Names and errors are as the editor and the server gave them."""

    name: str
    transport: str
    """``stdio``, ``http`` or ``sse`` (``-`` for a spec that could not be used)."""
    state: str
    error: str | None
    tools: tuple[str, ...]
    """The model-facing names of the tools it offers now (none while it is not offered)."""
    signs_in: bool = False
    """It signs in with OAuth when the server asks (an HTTP or SSE server of a session with a token folder)."""


@dataclass(eq=False)
class _SignInRun:
    """One sign-in under way: the page shown to the user, and how it ended."""

    shown: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    url: str | None = None
    error: str | None = None
    redirect: dict[str, str] | None = None
    """The redirect's parameters as the user pasted its address (a browser on another machine)."""
    pasted: anyio.Event = field(default_factory=anyio.Event)

    async def wait_pasted(self) -> dict[str, str]:
        await self.pasted.wait()
        assert self.redirect is not None
        return self.redirect


class McpServers:
    def __init__(
        self,
        specs: Sequence[Mapping[str, object]],
        *,
        cwd: Path,
        stderr_dir: Path | None = None,
        timeouts: McpTimeouts | None = None,
        pass_env: Sequence[str] = (),
        open_wire: OpenWire | None = None,
        configured: Mapping[str, McpServerSettings] | None = None,
        auth_dir: Path | None = None,
        roots: Sequence[Path] = (),
        questions: Questions | None = None,
        sign_in: SignIn | None = None,
        ready_wait_s: float = READY_WAIT_S,
    ):
        """``timeouts`` bound every wait of every server; ``pass_env`` names the variables a stdio server's base
        environment takes beyond the safe list; ``open_wire`` is how each connection is opened (None: the SDK
        adapter; tests give an in-memory one). ``configured``: config.toml's ``[mcp.servers]``; ``auth_dir``: where
        OAuth tokens are kept (None: no server signs in); ``roots``: the session's directories; ``questions`` and
        ``sign_in``: the ports of the module docstring (``use`` sets them later); ``ready_wait_s`` bounds a turn's wait
        for servers still starting (``[mcp] ready_wait_s``)."""
        entries, clients = _with_configured(specs, configured or {})
        parsed = parse_specs(entries, base_env=EnvPolicy.of(pass_env).base(os.environ))
        self.ready_wait_s = ready_wait_s
        self._changed = Changed()
        self.timeouts = timeouts = timeouts or McpTimeouts()
        self._roots: tuple[Path, ...] = tuple(roots)
        self._questions = questions
        self._sign_in = sign_in
        self.connections: list[ServerConnection] = [
            ServerConnection(
                spec,
                index,
                cwd=cwd,
                stderr_dir=stderr_dir,
                timeouts=timeouts,
                on_change=self._poke,
                open_wire=open_wire,
                auth=_auth_for(spec, auth_dir, clients),
                questions=lambda: self._questions,
                roots=self._root_entries,
            )
            for index, spec in enumerate(parsed)
            if not isinstance(spec, UnusableSpec)
        ]
        self.unusable: list[UnusableSpec] = [spec for spec in parsed if isinstance(spec, UnusableSpec)]
        self._reported: set[tuple[object, ...]] = set()
        self._cache_key: tuple[object, ...] | None = None
        self._cache: list[AnyTool] = []
        self._names: dict[int, tuple[str, ...]] = {}
        """The offered tool names of each connection (by index), as of the cached tool list."""
        self._running = False
        self._group: anyio.abc.TaskGroup | None = None
        self._signing: dict[int, _SignInRun] = {}
        self._asked_once: set[int] = set()
        """Servers whose sign-in was started by itself once (later ones wait for the user to ask)."""

    def __bool__(self) -> bool:
        return bool(self.connections or self.unusable)

    def use(self, *, questions: Questions | None, sign_in: SignIn | None) -> None:
        """Set (or clear) the ports the servers' questions and sign-ins go through."""
        self._questions = questions
        self._sign_in = sign_in
        self._poke()

    def _poke(self) -> None:
        self._changed.notify()
        if self._sign_in is None or self._group is None:
            return
        for conn in self.connections:
            if conn.state == LinkState.SIGN_IN and conn.index not in self._asked_once and not conn.signing_in:
                self._asked_once.add(conn.index)
                self._start_sign_in(conn)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[McpServers]:
        """Start every server; enter this in the session's owner task (it returns without waiting for them).

        Each server's supervisor runs in this task group and enters and leaves its own SDK connection; leaving
        closes them (``close``: bounded), and the SDK's shielded shutdown of each server runs.
        """
        async with anyio.create_task_group() as group:
            for connection in self.connections:
                group.start_soon(connection.supervise, name=f"mcp server {connection.name}")
            self._running = True
            self._group = group
            try:
                yield self
            finally:
                self._running = False
                self._group = None
                for run in list(self._signing.values()):
                    run.scope.cancel()  # a sign-in under way ends with the session
                for connection in self.connections:
                    connection.close()

    def connection(self, name: str) -> ServerConnection | None:
        return next((c for c in self.connections if c.name == name), None)

    async def prepare_turn(self, wait_s: float | None = None) -> list[str]:
        """Wait (bounded) for servers still starting, take the list changes servers announced (each list again,
        bounded); the notices this turn should show."""
        await self.settled(wait_s)
        await self.refresh()
        return self._notices()

    async def refresh(self) -> None:
        """List again what the ready servers said changed (each bounded; a failure leaves the old list)."""
        stale = [c for c in self.connections if c.stale and c.state == LinkState.READY]
        if not stale:
            return

        changed = False

        async def one(conn: ServerConnection) -> None:
            nonlocal changed
            try:
                with anyio.move_on_after(conn.timeouts.list_s):
                    changed |= await conn.refresh()
            except ToolError as exc:
                _log.info("MCP list refresh failed", server=conn.name, error=str(exc))

        async with anyio.create_task_group() as group:
            for conn in stale:
                group.start_soon(one, conn)
        if changed:
            self._poke()  # whoever follows the prompts (the commands) looks again

    async def settled(self, wait_s: float | None = None) -> None:
        """Wait (bounded by ``wait_s``, default ``ready_wait_s``) until no server is still starting."""
        limit = self.ready_wait_s if wait_s is None else wait_s
        if self._running:
            with anyio.move_on_after(limit):
                while any(c.settling for c in self.connections):
                    await self._changed.wait()

    def _notices(self) -> list[str]:
        notices: list[str] = []
        for spec in self.unusable:
            if self._once(("unusable", spec.name)):
                notices.append(f"⚠ MCP server '{spec.name}' was not started: {spec.reason}.")
        for conn in self.connections:
            if conn.state == "failed" and self._once((conn.index, "failed", conn.attempts)):
                notices.append(
                    f"⚠ MCP server '{conn.name}' could not be started: {conn.error}. Its tools are not available."
                )
            elif conn.tools_cut and self._once((conn.index, "cut", conn.listing_version)):
                notices.append(
                    f"⚠ MCP server '{conn.name}' lists more than {MAX_MCP_TOOLS_PER_SERVER} tools; only the first"
                    f" {MAX_MCP_TOOLS_PER_SERVER} are offered to the model."
                )
            elif conn.state == LinkState.SIGN_IN and self._once((conn.index, "sign-in", conn.attempts)):
                notices.append(
                    f"🔑 MCP server '{conn.name}' needs you to sign in (/mcp login {conn.name}); its tools will be"
                    " offered once you have."
                )
            elif conn.settling and self._once((conn.index, "starting", conn.attempts)):
                notices.append(
                    f"⏳ MCP server '{conn.name}' is still starting; its tools will be offered once it is ready."
                )
        for text in notices:
            _log.info("MCP notice", notice=text)
        return notices

    def _once(self, key: tuple[object, ...]) -> bool:
        if key in self._reported:
            return False
        self._reported.add(key)
        return True

    def tools(self) -> list[AnyTool]:
        """The MCP tools to offer now, sorted by name (the same state always gives the same list)."""
        offered = [c for c in self.connections if c.offered]
        key = tuple((c.index, c.listing_version, c.has_resources, c.has_prompts) for c in offered)
        if key == self._cache_key:
            return self._cache
        entries: list[tuple[ToolKey, ServerConnection, Mapping[str, object] | Utility]] = []
        for conn in offered:
            seen: set[str] = set()
            for remote in conn.tools:
                name = remote.get("name")
                if isinstance(name, str) and name not in seen:
                    seen.add(name)
                    entries.append((ToolKey(conn.index, conn.name, name), conn, remote))
            for capability, helpers in UTILITY_TOOLS.items():
                if (capability == "resources" and conn.has_resources) or (capability == "prompts" and conn.has_prompts):
                    entries.extend((ToolKey(conn.index, conn.name, h, utility=True), conn, h) for h in helpers)
        names = assign_names([k for k, _, _ in entries])
        tools: list[AnyTool] = []
        for tool_key, conn, source in entries:
            if isinstance(source, str):
                tools.append(UtilityTool(names[tool_key], conn, source))
            else:
                tools.append(McpTool(names[tool_key], conn, source))
        tools.sort(key=lambda t: t.name)
        by_connection: dict[int, list[str]] = {}
        for tool_key, _, _ in entries:
            by_connection.setdefault(tool_key.server_index, []).append(names[tool_key])
        self._names = {index: tuple(sorted(found)) for index, found in by_connection.items()}
        self._cache_key, self._cache = key, tools
        return tools

    def status(self) -> list[ServerStatus]:
        """Every server of the session, in the editor's order, the unusable specs last."""
        self.tools()  # brings the offered names up to date
        statuses = [
            ServerStatus(
                name=conn.name,
                transport="stdio" if isinstance(conn.spec, StdioSpec) else conn.spec.transport,
                state=SIGNING_IN if conn.signing_in else _STATES[conn.state],
                error=_error(conn),
                tools=self._names.get(conn.index, ()) if conn.offered else (),
                signs_in=conn.auth is not None,
            )
            for conn in self.connections
        ]
        statuses += [ServerStatus(spec.name, "-", "not started", spec.reason, ()) for spec in self.unusable]
        return statuses

    async def changed(self) -> None:
        """Until a server's state next changes (unbounded: bound it, or cancel it)."""
        await self._changed.wait()

    def waiting_for_sign_in(self) -> list[str]:
        """The servers that wait for the user to sign in (a sign-in under way included), in the editor's order."""
        return [c.name for c in self.connections if c.state == LinkState.SIGN_IN]

    async def reconnect(self, name: str) -> None:
        """Drop the named server's connection and connect again (bounded); ``KeyError`` for an unknown name,
        ``NotConnected`` (saying why) when the new connection could not be made."""
        await self._named(name).link.reconnect()

    def _named(self, name: str) -> ServerConnection:
        connection = self.connection(name)
        if connection is None:
            raise KeyError(name)
        return connection

    # -- signing in --------------------------------------------------------------------------------------------

    async def sign_in(self, name: str) -> str | None:
        """Start signing in to the named server (or join the sign-in under way) and return once the user was
        shown the authorization page — its address, for a command to repeat — or the sign-in ended without one
        (None: it worked without the user). The rest goes on in the servers' task group; ``SignIn.finished`` and the
        server's state tell how it ended. ``KeyError``: no such server; ``SignInFailed``: it cannot sign in, or the
        sign-in failed before a page was shown."""
        conn = self._named(name)
        if conn.auth is None:
            raise SignInFailed(f"MCP server {name!r} does not sign in (only HTTP and SSE servers do)")
        if self._group is None:
            raise SignInFailed("the session's MCP servers are not running")
        run = self._start_sign_in(conn)
        with anyio.fail_after(self.timeouts.sign_in_s):
            await run.shown.wait()
        if run.url is None and run.error is not None:
            raise SignInFailed(run.error)
        return run.url

    def _start_sign_in(self, conn: ServerConnection) -> _SignInRun:
        run = self._signing.get(conn.index)
        if run is None:
            run = self._signing[conn.index] = _SignInRun()
            assert self._group is not None
            self._group.start_soon(self._run_sign_in, conn, run, name=f"mcp sign-in {conn.name}")
        return run

    async def _run_sign_in(self, conn: ServerConnection, run: _SignInRun) -> None:
        port = self._sign_in

        async def open_url(url: str) -> bool:
            shown = True if port is None else await port.open_url(conn.name, url)
            if shown:  # else the sign-in fails, and says so when it has
                run.url = url
                run.shown.set()
            return shown

        try:
            with run.scope:
                await conn.sign_in(await load_sign_in(), open_url, self.timeouts.sign_in_s, run.wait_pasted)
            if run.scope.cancelled_caught:
                run.error = "the session ended first"
        except (SignInFailed, NotConnected) as exc:
            run.error = str(exc)
        except Exception as exc:
            _log.exception("MCP sign-in failed unexpectedly", server=conn.name)
            run.error = f"unexpected error: {type(exc).__name__}: {exc}"
        finally:
            del self._signing[conn.index]
            run.shown.set()
            run.done.set()
        if run.error is not None:
            _log.info("MCP sign-in did not work", server=conn.name, error=run.error)
        if port is not None and not run.scope.cancelled_caught:  # a session that ended tells nobody
            with anyio.move_on_after(conn.timeouts.list_s):
                await port.finished(conn.name, run.error)

    async def finish_sign_in(self, name: str, address: str) -> bool:
        """The address the user's browser ended on, for the sign-in under way (a browser on another machine cannot
        reach our loopback listener: the user pastes it). True once signed in; False when that takes longer than a
        list does (it goes on). ``KeyError``: no such server; ``SignInFailed``: no sign-in is under way, the address
        is not the sign-in's redirect, or the sign-in failed with it."""
        conn = self._named(name)
        run = self._signing.get(conn.index)
        if run is None or run.url is None:
            raise SignInFailed(f"no sign-in of {name!r} is waiting for its address; /mcp login {name} starts one")
        query = redirect_query(address)
        if query is None:
            raise SignInFailed(
                "that is not the address a sign-in ends on (it starts with http://127.0.0.1:PORT/callback?code=)"
            )
        if run.pasted.is_set():
            raise SignInFailed("this sign-in was given its address already")
        run.redirect = query
        run.pasted.set()
        with anyio.move_on_after(self.timeouts.list_s):
            await run.done.wait()
        if run.done.is_set() and run.error is not None:
            raise SignInFailed(run.error)
        return run.done.is_set()

    async def sign_out(self, name: str) -> bool:
        """Forget the named server's tokens (the next request needs a sign-in); False when none were stored.
        ``KeyError``: no such server."""
        return await self._named(name).sign_out()

    # -- roots and prompts ---------------------------------------------------------------------------------------

    def _root_entries(self) -> list[dict[str, Any]]:
        return [{"uri": Path(os.path.abspath(root)).as_uri(), "name": root.name or str(root)} for root in self._roots]

    async def set_roots(self, roots: Sequence[Path]) -> None:
        """The session's directories changed: servers are told (``notifications/roots/list_changed``)."""
        new = tuple(roots)
        if new == self._roots:
            return
        self._roots = new
        async with anyio.create_task_group() as group:
            for conn in self.connections:
                group.start_soon(conn.roots_changed)

    @property
    def prompts_version(self) -> tuple[int, ...]:
        """Changes whenever ``prompts()`` may have (a command list built from it is then stale)."""
        return tuple(c.prompts_version if c.offered else -1 for c in self.connections)

    def prompts(self) -> list[ServerPrompt]:
        """The prompts of the servers that are offered now, in the servers' order."""
        return [p for c in self.connections if c.offered for p in read_prompts(c.name, c.prompts)]

    async def get_prompt(self, server: str, prompt: str, arguments: Mapping[str, str]) -> str:
        """``prompts/get``, as the text of a user's turn. ``KeyError``: no such server; ``ToolError`` (its
        subclasses) when the server cannot be reached or answers an error."""
        return prompt_text(await self._named(server).get_prompt(prompt, arguments))


def _error(conn: ServerConnection) -> str | None:
    """What the user is told of a server that is not ready: why it failed or ended, why its sign-in did not work."""
    if conn.state in (LinkState.FAILED, LinkState.DOWN):
        return conn.error
    if conn.state == LinkState.SIGN_IN and not conn.signing_in:
        return conn.sign_in_error
    return None


def _with_configured(
    specs: Sequence[Mapping[str, object]], configured: Mapping[str, McpServerSettings]
) -> tuple[list[Mapping[str, object]], dict[str, tuple[str, OAuthClient]]]:
    """The editor's entries with config.toml's servers after them (a name the editor uses is the editor's), and the
    OAuth clients config.toml gives, by server name, with the url they are for."""
    entries = list(specs)
    names = {entry.get("name") for entry in entries}
    clients: dict[str, tuple[str, OAuthClient]] = {}
    for name, settings in configured.items():
        if settings.url is not None and settings.client_id is not None:
            client = OAuthClient(
                settings.client_id, environment_secret(settings.client_secret_env), settings.redirect_port
            )
            clients[name] = (settings.url, client)
        if name in names:
            continue
        if settings.command is not None:
            command, *args = settings.command
            env = [{"name": k, "value": v} for k, v in settings.env.items()]
            entries.append({"name": name, "command": command, "args": args, "env": env})
        else:
            headers = [{"name": k, "value": v} for k, v in settings.headers.items()]
            entries.append({"type": settings.transport, "name": name, "url": settings.url, "headers": headers})
    return entries, clients


def _auth_for(
    spec: StdioSpec | HttpSpec, auth_dir: Path | None, clients: Mapping[str, tuple[str, OAuthClient]]
) -> WireAuth | None:
    """How ``spec`` signs in: HTTP and SSE servers of a session with a token folder, unless the editor sends an
    ``Authorization`` header of its own."""
    if auth_dir is None or not isinstance(spec, HttpSpec):
        return None
    if any(header.lower() == "authorization" for header in spec.headers):
        return None
    url, client = clients.get(spec.name, ("", None))
    return WireAuth.for_server(auth_dir, spec.name, spec.url, client if url == spec.url else None)
