"""The cua-driver adapter: one MCP stdio connection per session, owned by the session's owner task, at most once.

``DriverClient`` is what the tool talks to. On the first call it enters a ``DriverHost`` in the session's owner
task (``OwnerRuntime.enter``); the host's supervisor task spawns the driver (``stdio_client`` + ``ClientSession``),
initialises it, reads the raw ``tools/list`` (keeping what the SDK's models drop, such as the logged
``capability_version``) into a ``DriverSurface``, declares a session label, and keeps the connection until it
is dropped or the session closes. Entering and exiting the SDK's task groups happens in that one supervisor
task, as anyio requires.

Calls are bounded by ``computer_use.call_timeout_s``. A timeout or a dropped transport marks the connection
suspect: it is torn down, ``generation`` moves on (callers drop their target and element tokens), and the next
call starts a fresh driver. Only the replay-safe reads are sent again; a mutation whose answer was lost raises
``OutcomeUnknownError`` (``timeout_outcome_unknown`` / ``transport_outcome_unknown``) and is never repeated
(DESIGN §4.7). ``isError`` results and JSON-RPC errors become ``ComputerUseError``s here; nothing from the SDK
leaves this module. This is the only module of computer_use that imports ``mcp``.

It deliberately knows nothing about the model-facing schema, targets, images or approval.
"""

from __future__ import annotations

import importlib
import math
import sys
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Protocol, TextIO, TypeVar, cast

import anyio
import anyio.to_thread
import structlog
from anyio.abc import TaskGroup
from pydantic import BaseModel, ConfigDict, ValidationError

from hermes_acp.errors import DriverUnavailableError, OutcomeUnknownError
from hermes_acp.version import __version__

from .results import ComputerUseRefusal, DriverRefusal, DriverReply
from .surface import REPLAY_SAFE_TOOLS, DriverSurface

if TYPE_CHECKING:
    from mcp import ClientSession

__all__ = ["DriverClient", "DriverHost", "DriverParams", "OwnerRuntime"]

T = TypeVar("T")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 4.0
END_SESSION_TIMEOUT_S = 1.0


class _Raw(BaseModel):
    """Any JSON object, every key kept (the SDK's typed results drop cua-driver's extensions)."""

    model_config = ConfigDict(extra="allow")

    def data(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


_log = structlog.get_logger("hermes_acp.computer_use")


class OwnerRuntime(Protocol):
    """The session's owner task (``hermes_acp.sessions`` ``SessionRuntime`` satisfies it)."""

    async def enter(self, manager: AbstractAsyncContextManager[T]) -> T: ...


@dataclass(frozen=True, slots=True)
class DriverParams:
    argv: Sequence[str]
    env: Mapping[str, str]
    call_timeout_s: float = 30.0
    start_timeout_s: float = START_TIMEOUT_S
    stderr_log: Path | None = None
    """Where the driver's stderr goes (our stderr carries JSON log lines only); None: inherit."""
    label: str = field(default_factory=lambda: f"hermes-{uuid.uuid4().hex[:12]}")


class _Lost(Exception):
    """The answer to a call never arrived: ``code`` says whether it timed out or the transport broke."""

    def __init__(self, code: str, detail: str):
        super().__init__(detail)
        self.code = code


@dataclass(slots=True)
class _Connection:
    session: ClientSession
    surface: DriverSurface


async def _send(session: ClientSession, tool: str, arguments: Mapping[str, Any], limit_s: float) -> dict[str, Any]:
    import mcp.types as mcp_types
    from mcp import MCPError

    request = mcp_types.CallToolRequest(params=mcp_types.CallToolRequestParams(name=tool, arguments=dict(arguments)))
    try:
        with anyio.move_on_after(limit_s):
            return (await session.send_request(request, _Raw)).data()
    except MCPError as exc:
        if exc.code == mcp_types.CONNECTION_CLOSED:
            raise _Lost("transport_outcome_unknown", f"the driver connection closed: {exc.message}") from None
        if exc.code == mcp_types.REQUEST_TIMEOUT:
            raise _Lost("timeout_outcome_unknown", f"no answer within {limit_s:g} s") from None
        raise ComputerUseRefusal(
            f"{tool}: the driver answered JSON-RPC error {exc.code}: {exc.message}", code="driver_protocol_error"
        ) from None
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, ConnectionError) as exc:
        raise _Lost("transport_outcome_unknown", f"the driver connection broke: {type(exc).__name__}") from None
    except ValidationError as exc:
        raise ComputerUseRefusal(
            f"{tool}: unreadable answer from the driver: {exc}", code="driver_protocol_error"
        ) from None
    raise _Lost("timeout_outcome_unknown", f"no answer within {limit_s:g} s")


async def _list_tools(session: ClientSession) -> dict[str, Any]:
    """The raw ``tools/list`` (all pages), keeping the non-standard keys the SDK's models drop."""
    import mcp.types as mcp_types

    tools: list[Any] = []
    listing: dict[str, Any] = {}
    cursor: str | None = None
    for _ in range(20):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = (await session.send_request(mcp_types.ListToolsRequest(params=params), _Raw)).data()
        listing.update({k: v for k, v in page.items() if k != "tools"})
        tools.extend(page.get("tools") or [])
        cursor = page.get("nextCursor")
        if not cursor:
            break
    listing["tools"] = tools
    return listing


class DriverHost:
    """Owns the driver process and its MCP session inside the owner task; rebuilds it on request."""

    def __init__(self, params: DriverParams):
        self._params = params
        self._conn: _Connection | None = None
        self._error: BaseException | None = None
        self._changed = anyio.Event()
        self._want_connect = anyio.Event()
        self._want_drop = anyio.Event()
        self._suspect = False
        self._closing = False
        self._stopped = anyio.Event()
        self._tg: TaskGroup | None = None

    async def __aenter__(self) -> DriverHost:
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        tg.start_soon(self._supervise)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closing = True
        self._want_drop.set()
        self._want_connect.set()
        assert self._tg is not None
        with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_TIMEOUT_S):
            await self._stopped.wait()
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)

    def _notify(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def acquire(self) -> _Connection:
        """The live connection, starting the driver when there is none (bounded)."""
        try:
            with anyio.fail_after(self._params.start_timeout_s + STOP_TIMEOUT_S):
                while True:
                    changed = self._changed
                    if self._conn is not None:
                        return self._conn
                    if self._error is not None:
                        error, self._error = self._error, None
                        raise error
                    if self._closing:
                        raise DriverUnavailableError("the session is closing; the desktop driver was stopped")
                    self._want_connect.set()
                    await changed.wait()
        except TimeoutError:
            raise DriverUnavailableError("the desktop driver did not become ready in time") from None

    def drop(self, *, suspect: bool) -> None:
        """Stop using the current connection now; the supervisor tears it down (bounded) in the owner task."""
        if self._conn is None:
            return
        self._suspect = suspect
        self._conn = None
        self._want_drop.set()
        self._notify()

    async def _supervise(self) -> None:
        try:
            while True:
                await self._want_connect.wait()
                self._want_connect = anyio.Event()
                if self._closing:
                    return
                await self._serve_one()
        finally:
            self._stopped.set()
            self._notify()

    async def _serve_one(self) -> None:
        published = False
        params = self._params
        try:
            with anyio.CancelScope() as scope:
                scope.deadline = anyio.current_time() + params.start_timeout_s
                # The MCP SDK costs over a second to import: load it off the event loop, once, on first use.
                await anyio.to_thread.run_sync(importlib.import_module, "mcp")
                import mcp.types as mcp_types
                from mcp import ClientSession, StdioServerParameters, stdio_client

                async with AsyncExitStack() as stack:
                    errlog = await self._errlog(stack)
                    server = StdioServerParameters(
                        command=params.argv[0], args=list(params.argv[1:]), env=dict(params.env)
                    )
                    read, write = await stack.enter_async_context(stdio_client(server, errlog=errlog))
                    client_info = mcp_types.Implementation(name="hermes-acp", version=__version__)
                    session = await stack.enter_async_context(ClientSession(read, write, client_info=client_info))
                    init = await session.initialize()
                    listing = await _list_tools(session)
                    surface = DriverSurface.from_listing(listing, server_version=init.server_info.version)
                    if surface.has("start_session"):
                        await _send(session, "start_session", {"session": params.label}, params.call_timeout_s)
                    scope.deadline = math.inf
                    self._suspect = False
                    self._want_drop = anyio.Event()
                    self._conn = _Connection(session, surface)
                    published = True
                    _log.info(
                        "cua-driver ready",
                        server=init.server_info.name,
                        version=surface.server_version,
                        capability_version=listing.get("capability_version"),
                        tools=len(surface.tools),
                    )
                    self._notify()
                    await self._want_drop.wait()
                    self._conn = None
                    if not self._suspect and surface.has("end_session"):
                        with anyio.move_on_after(END_SESSION_TIMEOUT_S):
                            await _send(session, "end_session", {"session": params.label}, END_SESSION_TIMEOUT_S)
            if scope.cancelled_caught and not published:
                self._error = DriverUnavailableError(
                    f"the desktop driver ({params.argv[0]}) did not start within {params.start_timeout_s:g} s"
                )
        except Exception as exc:
            if not published:
                self._error = DriverUnavailableError(f"the desktop driver ({params.argv[0]}) could not start: {exc}")
            else:
                _log.warning("cua-driver connection ended with an error", error=repr(exc))
        finally:
            self._conn = None
            self._notify()

    async def _errlog(self, stack: AsyncExitStack) -> TextIO:
        path = self._params.stderr_log
        if path is None:
            return sys.stderr

        def open_log() -> IO[str]:
            path.parent.mkdir(parents=True, exist_ok=True)
            return path.open("a", encoding="utf-8")

        handle = await anyio.to_thread.run_sync(open_log)
        stack.callback(handle.close)
        return cast(TextIO, handle)


class DriverClient:
    """The session's driver, started lazily in the owner task; every call bounded and at most once."""

    def __init__(self, runtime: OwnerRuntime, params: DriverParams):
        self._runtime = runtime
        self._params = params
        self._host: DriverHost | None = None
        self._lock = anyio.Lock()
        self._start_lock = anyio.Lock()
        self.generation = 0
        """Moves on whenever the connection is dropped as suspect: targets and tokens from before are void."""
        self.busy_s = 0.0
        """Total time spent waiting for the driver's answers (for overhead measurements)."""

    async def ensure(self) -> DriverSurface:
        """Start the driver if needed and return what it accepts."""
        return (await self._connection()).surface

    async def _connection(self) -> _Connection:
        async with self._start_lock:
            if self._host is None:
                try:
                    with anyio.fail_after(self._params.start_timeout_s):
                        self._host = await self._runtime.enter(DriverHost(self._params))
                except (TimeoutError, RuntimeError) as exc:
                    raise DriverUnavailableError(
                        f"the desktop driver could not be attached to the session: {exc}"
                    ) from exc
            return await self._host.acquire()

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> DriverReply:
        """Call ``tool``; raises ``DriverRefusal`` for ``isError``, ``OutcomeUnknownError`` for a lost mutation."""
        async with self._lock:
            return await self._call(tool, arguments)

    async def _call(self, tool: str, arguments: Mapping[str, Any]) -> DriverReply:
        replay_safe = tool in REPLAY_SAFE_TOOLS
        attempts_left = 2 if replay_safe else 1
        revived = False
        while True:
            connection = await self._connection()
            args = dict(arguments)
            if connection.surface.accepts(tool, "session"):
                args.setdefault("session", self._params.label)
            started = anyio.current_time()
            attempts_left -= 1
            try:
                raw = await _send(connection.session, tool, args, self._params.call_timeout_s)
            except _Lost as lost:
                self.busy_s += anyio.current_time() - started
                self._mark_suspect()
                _log.warning(
                    "cua-driver call lost", tool=tool, code=lost.code, replay=replay_safe and attempts_left > 0
                )
                if attempts_left > 0:
                    continue
                if replay_safe:
                    raise ComputerUseRefusal(
                        f"{tool}: {lost} (also after a restart)", code="driver_unresponsive"
                    ) from None
                raise OutcomeUnknownError(
                    f"{tool}: {lost}. The input may or may not have been delivered; it was not repeated. "
                    "Capture to observe the current state before doing anything else.",
                    code=lost.code,
                ) from None
            reply = DriverReply.parse(raw, anyio.current_time() - started)
            self.busy_s += reply.elapsed_s
            if not reply.is_error:
                return reply
            if (
                reply.code == "session_ended"
                and not revived
                and tool not in ("start_session", "end_session")
                and connection.surface.has("start_session")
            ):
                revived = True
                attempts_left += 1
                await self._revive(connection)
                continue
            raise DriverRefusal(tool, reply)

    async def _revive(self, connection: _Connection) -> None:
        """The driver ended our session label (and refused the call): declare it again, then resend once."""
        try:
            await _send(
                connection.session, "start_session", {"session": self._params.label}, self._params.call_timeout_s
            )
        except _Lost as lost:
            self._mark_suspect()
            raise ComputerUseRefusal(f"start_session: {lost}", code="driver_unresponsive") from None

    def _mark_suspect(self) -> None:
        self.generation += 1
        if self._host is not None:
            self._host.drop(suspect=True)
