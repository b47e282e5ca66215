"""One MCP server of one session: its connection's life, and every request to it bounded and at most once.

``ServerConnection.supervise`` runs in the session's MCP task group (inside the session's owner task, DESIGN
§4.8): it connects when asked (at once on creation), holds the connection until it ends — the server went away,
or a caller asked for a rebuild after a timeout or a broken transport — and connects again only when the next
request needs it. So the SDK's task groups are entered and left by this one task, and a crashed stdio server is
respawned by the next call, not in a loop.

Requests (DESIGN §4.7):

- every wait is bounded: connecting (``connect_s``: spawn, ``initialize``, ``tools/list``), each call
  (``call_s``), each list/read (``list_s``);
- a call that times out or whose transport breaks ends the connection (it is rebuilt before the next request);
- a mutating tool (no ``readOnlyHint``) is then NOT retried: the caller gets ``OutcomeUnknownError`` with code
  ``timeout_outcome_unknown`` / ``transport_outcome_unknown``;
- a read-only request is retried once on a fresh connection;
- a server that was already gone before the request was sent is reconnected first; nothing was sent, so even a
  mutating call may then go out once.

The timeouts are module constants read when a ``McpTimeouts`` is made (tests shorten them). This module does not
import the mcp SDK: ``_wire`` (the adapter) is loaded in a worker thread the first time a server is started.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TextIO

import anyio
import structlog

from hermes_acp.errors import OutcomeUnknownError, ToolError, ToolTimeoutError

from ._failures import ServerRejected, TransportDropped
from .naming import sanitise
from .specs import HttpSpec, StdioSpec

if TYPE_CHECKING:
    from ._wire import Wire

__all__ = [
    "CALL_TIMEOUT_S",
    "CONNECT_TIMEOUT_S",
    "LIST_TIMEOUT_S",
    "McpTimeouts",
    "McpUnavailableError",
    "ServerConnection",
    "State",
]

CONNECT_TIMEOUT_S = 30.0
"""Spawn or connect, ``initialize`` and the first ``tools/list`` of one server."""
CALL_TIMEOUT_S = 120.0
"""One ``tools/call``."""
LIST_TIMEOUT_S = 30.0
"""One list, ``resources/read`` or ``prompts/get``."""
READY_MARGIN_S = 10.0
"""Added to ``connect_s`` when a request waits for a reconnect: the old connection's shutdown comes first."""
STDERR_LOG_BYTES = 1024 * 1024
"""A server's stderr log is started afresh when it has grown past this."""

State = Literal["idle", "starting", "ready", "down", "failed"]
_log = structlog.get_logger("hermes_acp.mcp")


@dataclass(frozen=True, slots=True)
class McpTimeouts:
    connect_s: float = field(default_factory=lambda: CONNECT_TIMEOUT_S)
    call_s: float = field(default_factory=lambda: CALL_TIMEOUT_S)
    list_s: float = field(default_factory=lambda: LIST_TIMEOUT_S)


class McpUnavailableError(ToolError):
    """The server could not be (re)connected for this request; nothing was sent."""

    code = "mcp_server_unavailable"


class _OpenWire(Protocol):
    def __call__(
        self, spec: StdioSpec | HttpSpec, *, cwd: Path, errlog: TextIO, connect_timeout_s: float, dropped: anyio.Event
    ) -> AbstractAsyncContextManager[Wire]: ...


async def _load_open_wire() -> _OpenWire:
    """Import the SDK adapter off the event loop (importing ``mcp`` takes over a second)."""
    module = await anyio.to_thread.run_sync(importlib.import_module, f"{__package__}._wire", abandon_on_cancel=True)
    opener: _OpenWire = module.open_wire
    return opener


class ServerConnection:
    def __init__(
        self,
        spec: StdioSpec | HttpSpec,
        index: int,
        *,
        cwd: Path,
        stderr_dir: Path | None,
        timeouts: McpTimeouts,
        on_change: Callable[[], None] = lambda: None,
    ):
        self.spec = spec
        self.index = index
        self.timeouts = timeouts
        self._cwd = cwd
        self._stderr_dir = stderr_dir
        self._on_change = on_change
        self.state: State = "idle"
        self.error: str | None = None
        """Why the last attempt failed or the connection ended."""
        self.attempts = 0
        """Finished connection attempts (ready or failed)."""
        self.connections = 0
        """Connections that became ready (1 + reconnects)."""
        self.tools: list[dict[str, Any]] = []
        """The last ``tools/list`` (kept while the connection is rebuilt, so the tool surface stays stable)."""
        self.listing_version = 0
        self.has_resources = False
        self.has_prompts = False
        self._wire: Wire | None = None
        self._over = anyio.Event()
        self._want = anyio.Event()
        self._want.set()
        self._changed = anyio.Event()
        self._scope = anyio.CancelScope()

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def settling(self) -> bool:
        """An attempt is under way (or about to start: the first one is asked for on creation)."""
        return self.state == "starting" or (self.state == "idle" and self.attempts == 0)

    @property
    def offered(self) -> bool:
        """Whether its tools belong on the tool surface: listed at least once and not failed since."""
        return self.listing_version > 0 and self.state != "failed"

    # -- the owner side ---------------------------------------------------------------------------------------

    def stop(self) -> None:
        """End ``supervise`` (an anyio cancel, so the SDK's shielded shutdown of the server runs to its end)."""
        self._scope.cancel()

    async def supervise(self) -> None:
        """Connect when asked, hold the connection until it ends, repeat, until ``stop()``. Never raises."""
        with self._scope:
            await self._supervise()

    async def _supervise(self) -> None:
        try:
            open_wire = await _load_open_wire()
        except Exception as exc:
            _log.exception("the MCP client could not be loaded", server=self.name)
            self._finish_attempt("failed", f"the MCP client could not be loaded: {exc}")
            return
        while True:
            await self._want.wait()
            self._want = anyio.Event()
            try:
                await self._hold_one(open_wire)
            except Exception as exc:
                _log.exception("MCP connection failed unexpectedly", server=self.name)
                self._finish_attempt("failed", f"unexpected error: {type(exc).__name__}: {exc}")

    async def _hold_one(self, open_wire: _OpenWire) -> None:
        self._over = over = anyio.Event()
        self._set("starting", None)
        errlog, start = await anyio.to_thread.run_sync(self._open_errlog)
        ready = False
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self.timeouts.connect_s) as scope:
                async with open_wire(
                    self.spec, cwd=self._cwd, errlog=errlog, connect_timeout_s=self.timeouts.connect_s, dropped=over
                ) as wire:
                    await self._list(wire)
                    scope.deadline = math.inf
                    ready = True
                    self._wire = wire
                    self.connections += 1
                    _log.info("MCP server ready", server=self.name, tools=len(self.tools), connection=self.connections)
                    self._finish_attempt("ready", None)
                    await over.wait()
                    self._wire = None
                    self._set("down", self.error or "the connection ended")
            if scope.cancelled_caught and not ready:
                self._finish_attempt("failed", f"it did not finish starting within {self.timeouts.connect_s:g} s")
        except Exception as exc:
            if not isinstance(exc, TransportDropped | ServerRejected | OSError):
                _log.warning("MCP connection error", server=self.name, error=f"{type(exc).__name__}: {exc}")
            reason = self._describe_failure(exc, errlog, start)
            if ready:
                self._set("down", reason)
            else:
                self._finish_attempt("failed", reason)
        finally:
            self._wire = None
            over.set()
            with contextlib.suppress(OSError):
                errlog.close()
        if self.state == "down":
            _log.info("MCP connection ended", server=self.name, reason=self.error)
        elif self.state == "failed":
            _log.warning("MCP server failed to start", server=self.name, reason=self.error)

    async def _list(self, wire: Wire) -> None:
        tools = await wire.list_tools()
        self.has_resources = wire.has_resources
        self.has_prompts = wire.has_prompts
        if tools != self.tools or self.listing_version == 0:
            self.tools = tools
            self.listing_version += 1

    def _open_errlog(self) -> tuple[TextIO, int]:
        """Where a stdio server's stderr goes: ``<stderr_dir>/<server>.log`` (or a temporary file)."""
        if self._stderr_dir is None or not isinstance(self.spec, StdioSpec):
            return tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"), 0
        self._stderr_dir.mkdir(parents=True, exist_ok=True)
        path = self._stderr_dir / f"{sanitise(self.name)}.log"
        with contextlib.suppress(OSError):
            if path.stat().st_size > STDERR_LOG_BYTES:
                path.unlink()
        handle = path.open("a+", encoding="utf-8", errors="replace")
        return handle, handle.tell()

    def _describe_failure(self, exc: BaseException, errlog: TextIO, start: int) -> str:
        cause = exc.__cause__
        if isinstance(exc, OSError) or isinstance(cause, OSError):
            error = exc if isinstance(exc, OSError) else cause
            if isinstance(error, FileNotFoundError) and isinstance(self.spec, StdioSpec):
                return f"command not found: {self.spec.command!r}"
            return f"{type(error).__name__}: {error}"
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, TransportDropped) and isinstance(self.spec, StdioSpec):
            reason = "the server process exited or closed its output"
        tail = _stderr_tail(errlog, start)
        return f"{reason} (stderr: {tail})" if tail else reason

    def _set(self, state: State, error: str | None) -> None:
        self.state = state
        self.error = error
        changed, self._changed = self._changed, anyio.Event()
        changed.set()
        self._on_change()

    def _finish_attempt(self, state: State, error: str | None) -> None:
        self.attempts += 1
        self._set(state, error)

    def _end_connection(self, reason: str) -> None:
        """Tear the current connection down (the owner task does it); the next request reconnects."""
        self.error = reason
        self._over.set()

    # -- the caller side (any task) ---------------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[ServerConnection], bool]) -> None:
        """Until ``predicate(self)`` holds, re-checked at every state change. Unbounded: bound it."""
        while True:
            changed = self._changed
            if predicate(self):
                return
            await changed.wait()

    def _live_wire(self) -> Wire | None:
        """The current connection when it is ready and has not ended."""
        wire = self._wire
        return wire if self.state == "ready" and wire is not None and not self._over.is_set() else None

    async def ready(self) -> Wire:
        """A live connection: the current one, or a new one (bounded by ``connect_s`` + ``READY_MARGIN_S``)."""
        wire = self._live_wire()
        if wire is not None:
            return wire
        asked_at = self.attempts + (0 if self.settling else 1)
        if not self.settling:
            self._want.set()

        def failed(conn: ServerConnection) -> bool:
            return conn.state == "failed" and conn.attempts >= asked_at

        with anyio.move_on_after(self.timeouts.connect_s + READY_MARGIN_S):
            await self.wait_for(lambda conn: conn._live_wire() is not None or failed(conn))
        wire = self._live_wire()
        if wire is not None:
            return wire
        if failed(self):
            raise McpUnavailableError(f"MCP server {self.name!r} is unavailable: {self.error}; not sent")
        raise McpUnavailableError(f"MCP server {self.name!r} did not become ready in time; the request was not sent")

    async def call_tool(self, tool: str, arguments: dict[str, Any], *, read_only: bool) -> dict[str, Any]:
        """``tools/call`` under the at-most-once rules of the module docstring."""
        what = f"{self.name}/{tool}"
        return await self._request(
            lambda wire: wire.call_tool(tool, arguments), what, self.timeouts.call_s, read_only=read_only
        )

    async def read(self, op: Callable[[Wire], Awaitable[dict[str, Any]]], what: str) -> dict[str, Any]:
        """A read-only request (lists, ``resources/read``, ``prompts/get``)."""
        return await self._request(op, f"{self.name}/{what}", self.timeouts.list_s, read_only=True)

    async def list_resources(self) -> list[dict[str, Any]]:
        result = await self.read(lambda wire: _as_result("resources", wire.list_resources()), "resources/list")
        return list(result["resources"])

    async def list_prompts(self) -> list[dict[str, Any]]:
        result = await self.read(lambda wire: _as_result("prompts", wire.list_prompts()), "prompts/list")
        return list(result["prompts"])

    async def _request(
        self,
        op: Callable[[Wire], Awaitable[dict[str, Any]]],
        what: str,
        timeout_s: float,
        *,
        read_only: bool,
    ) -> dict[str, Any]:
        for attempt in (1, 2):
            wire = await self.ready()
            failure: Literal["timeout", "transport"]
            try:
                with anyio.move_on_after(timeout_s):
                    return await op(wire)
                failure, detail = "timeout", f"no answer within {timeout_s:g} s"
            except TransportDropped as exc:
                failure, detail = "transport", f"the connection broke ({exc})"
            except ServerRejected as exc:
                raise ToolError(f"{what}: the server answered with an error: {exc}") from exc
            self._end_connection(f"{what}: {detail}")
            _log.warning("MCP request failed", request=what, failure=failure, attempt=attempt, read_only=read_only)
            if not read_only:
                raise OutcomeUnknownError(
                    f"{what}: {detail}. The tool may or may not have acted; it was not retried."
                    " Check the current state before trying again.",
                    code=f"{failure}_outcome_unknown",
                )
            if attempt == 2:
                if failure == "timeout":
                    raise ToolTimeoutError(f"{what}: {detail} (tried twice)")
                raise ToolError(f"{what}: {detail} (tried twice)")
        raise AssertionError("unreachable")


async def _as_result(key: str, items: Awaitable[list[dict[str, Any]]]) -> dict[str, Any]:
    return {key: await items}


def _stderr_tail(errlog: TextIO, start: int, limit: int = 300) -> str:
    try:
        errlog.flush()
        errlog.seek(start)
        text = errlog.read()
    except (OSError, ValueError):
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    tail = " | ".join(lines[-3:])
    return tail[-limit:]
