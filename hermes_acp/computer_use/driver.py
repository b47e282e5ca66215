"""The cua-driver adapter: a thin typed facade over mcp_client's supervised connection, with cua-driver specifics.

``DriverClient`` is what the tool talks to. On the first call it enters the driver's ``SupervisedConnection``
(``hermes_acp.mcp_client``) in the session's owner task (``OwnerRuntime.enter``). The connection's life and the
at-most-once rules are the supervisor's, as for every MCP server: the driver is spawned over stdio and rebuilt
after a drop; each call is bounded by ``computer_use.call_timeout_s``; a lost answer drops the connection and
``generation`` moves on (callers drop their target and element tokens); only the replay-safe reads
(``REPLAY_SAFE_TOOLS``) are sent again; a mutation whose answer was lost raises ``OutcomeUnknownError``
(``timeout_outcome_unknown`` / ``transport_outcome_unknown``) and is never repeated.

What this module adds, the cua-driver's specifics:

- each new connection reads ``tools/list`` into a ``DriverSurface`` and declares the session label
  (``start_session``); an orderly close ends it (``end_session``, bounded);
- the label goes with every call whose tool accepts ``session``;
- a result is kept with all its keys (``DriverReply``), ``isError`` becomes a ``DriverRefusal``;
- a call refused because the driver ended our label (``session_ended``) is revived once: ``start_session``, then
  the call again (it was refused, so it did not act);
- what the system must grant the driver (macOS: Accessibility, Screen Recording) is asked of its
  ``check_permissions`` before a call that needs it (``require``, ``permissions``);
- the supervisor's failures become ``ComputerUseError``s (``driver_unavailable``, ``driver_unresponsive``,
  ``driver_protocol_error``) or ``OutcomeUnknownError``.

It imports no SDK and deliberately knows nothing about the model-facing schema, targets, images or approval.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
import structlog

from hermes_acp.errors import DriverUnavailableError, OutcomeUnknownError
from hermes_acp.mcp_client import (
    Live,
    NotConnected,
    RequestLost,
    ServerRejected,
    StdioSpec,
    SupervisedConnection,
)

from .permissions import NEEDS, DesktopAccess, Need
from .results import ComputerUseRefusal, DriverRefusal, DriverReply
from .surface import REPLAY_SAFE_TOOLS, DriverSurface

if TYPE_CHECKING:
    from hermes_acp.mcp_client.wire_port import McpWire

__all__ = ["DriverClient", "DriverParams", "OwnerRuntime"]

T = TypeVar("T")
START_TIMEOUT_S = 30.0
_SESSION_TOOLS = frozenset({"start_session", "end_session"})
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
    """Where the driver's stderr goes (our stderr carries JSON log lines only); None: a temporary file."""
    label: str = field(default_factory=lambda: f"hermes-{uuid.uuid4().hex[:12]}")


class DriverClient:
    """The session's driver, started lazily in the owner task; every call bounded and at most once."""

    def __init__(self, runtime: OwnerRuntime, params: DriverParams):
        self._runtime = runtime
        self._params = params
        self._conn: SupervisedConnection[DriverSurface] | None = None
        self._lock = anyio.Lock()
        self._start_lock = anyio.Lock()
        self.busy_s = 0.0
        """Total time spent waiting for the driver's answers (for overhead measurements)."""
        self._granted: dict[int, frozenset[Need]] = {}
        """The permissions the driver reported granted, for the connection (generation) that reported them."""

    @property
    def params(self) -> DriverParams:
        """What the driver is started with: its command, its environment, its bounds."""
        return self._params

    @property
    def link(self) -> SupervisedConnection[DriverSurface] | None:
        """The supervised connection, once the first call made it (its state and counters, for reports)."""
        return self._conn

    @property
    def generation(self) -> int:
        """Moves on whenever a connection is given up: targets and tokens from before are void."""
        return self._conn.generation if self._conn is not None else 0

    async def ensure(self) -> DriverSurface:
        """Start the driver if needed and return what it accepts."""
        conn = await self._connection()
        try:
            live = await conn.ready()
        except NotConnected as exc:
            raise self._unavailable(exc) from None
        return live.prepared

    async def require(self, needs: tuple[Need, ...]) -> None:
        """Raise ``desktop_permission_missing`` when the driver reports that the system has not granted what a call
        ``needs`` (``permissions``): asked each time until granted, then trusted for the connection's life (a grant
        takes effect without a reconnect; a revoked one shows in the driver's own answers). Nothing to ask when the
        driver does not list ``check_permissions``; a report it refuses to give blocks nothing."""
        surface = await self.ensure()
        granted = self._granted.get(self.generation, frozenset())
        if not surface.has("check_permissions") or granted.issuperset(needs):
            return
        try:
            reply = await self.call("check_permissions", {})
        except DriverRefusal:
            access = DesktopAccess()
        else:
            access = DesktopAccess.from_report(reply.structured)
        self._granted = {self.generation: frozenset(n for n in NEEDS if getattr(access, n) is not False)}
        access.require(needs)

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> DriverReply:
        """Call ``tool``; raises ``DriverRefusal`` for ``isError``, ``OutcomeUnknownError`` for a lost mutation."""
        async with self._lock:
            conn = await self._connection()
            reply, surface = await self._send(conn, tool, arguments)
            if reply.is_error and self._revivable(tool, reply, surface):
                await self._send(conn, "start_session", {"session": self._params.label})
                reply, _ = await self._send(conn, tool, arguments)
            if reply.is_error:
                raise DriverRefusal(tool, reply)
            return reply

    # -- the connection ---------------------------------------------------------------------------------------

    async def _connection(self) -> SupervisedConnection[DriverSurface]:
        async with self._start_lock:
            if self._conn is None:
                params = self._params
                conn = SupervisedConnection(
                    StdioSpec(name="cua-driver", command=params.argv[0], args=tuple(params.argv[1:]), env=params.env),
                    setup=self._setup,
                    farewell=self._farewell,
                    connect_s=params.start_timeout_s,
                    stderr_log=params.stderr_log,
                )
                try:
                    with anyio.fail_after(params.start_timeout_s):
                        await self._runtime.enter(conn.running())
                except (TimeoutError, RuntimeError) as exc:
                    raise DriverUnavailableError(
                        f"the desktop driver could not be attached to the session: {exc}"
                    ) from exc
                self._conn = conn
            return self._conn

    async def _setup(self, wire: McpWire) -> DriverSurface:
        """A new connection: what the driver accepts, and our session label declared."""
        surface = DriverSurface.from_listing({"tools": await wire.list_tools()}, server_version=wire.server_version)
        if surface.has("start_session"):
            await wire.call_tool("start_session", {"session": self._params.label})
        _log.info("cua-driver ready", version=surface.server_version, tools=len(surface.tools))
        return surface

    async def _farewell(self, live: Live[DriverSurface]) -> None:
        if live.prepared.has("end_session"):
            await live.wire.call_tool("end_session", {"session": self._params.label})

    # -- one call ---------------------------------------------------------------------------------------------

    async def _send(
        self, conn: SupervisedConnection[DriverSurface], tool: str, arguments: Mapping[str, Any]
    ) -> tuple[DriverReply, DriverSurface]:
        label = self._params.label

        async def send(live: Live[DriverSurface]) -> tuple[DriverReply, DriverSurface]:
            args = dict(arguments)
            if live.prepared.accepts(tool, "session"):
                args.setdefault("session", label)
            started = anyio.current_time()
            try:
                raw = await live.wire.call_tool(tool, args)
            finally:
                elapsed = anyio.current_time() - started
                self.busy_s += elapsed
            return DriverReply.parse(raw, elapsed), live.prepared

        replay_safe = tool in REPLAY_SAFE_TOOLS or tool in _SESSION_TOOLS  # declaring a label twice is harmless
        try:
            return await conn.request(
                send, what=f"cua-driver/{tool}", timeout_s=self._params.call_timeout_s, replay_safe=replay_safe
            )
        except NotConnected as exc:
            raise self._unavailable(exc) from None
        except ServerRejected as exc:
            raise ComputerUseRefusal(
                f"{tool}: the driver answered with an error: {exc}", code="driver_protocol_error"
            ) from None
        except RequestLost as lost:
            if lost.replay_safe:
                raise ComputerUseRefusal(
                    f"{tool}: {lost.detail} (also after a restart)", code="driver_unresponsive"
                ) from None
            raise OutcomeUnknownError(
                f"{tool}: {lost.detail}. The input may or may not have been delivered; it was not repeated. "
                "Capture to observe the current state before doing anything else.",
                code=lost.code,
            ) from None

    @staticmethod
    def _revivable(tool: str, reply: DriverReply, surface: DriverSurface) -> bool:
        """The driver ended our session label and refused the call: declare it again, then resend once."""
        return reply.code == "session_ended" and tool not in _SESSION_TOOLS and surface.has("start_session")

    def _unavailable(self, exc: NotConnected) -> DriverUnavailableError:
        return DriverUnavailableError(f"the desktop driver ({self._params.argv[0]}) is not available: {exc}")
