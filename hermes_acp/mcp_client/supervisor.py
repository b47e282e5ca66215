"""One supervised MCP connection: owned by one task, rebuilt after a drop, every request bounded and at most once.

``SupervisedConnection`` is the one implementation of this for every MCP client in hermes_acp: the editor's MCP
servers (``ServerConnection``) and the cua-driver (``computer_use.driver``). What differs between them is given
as hooks: ``setup`` runs on each new connection before it is published (list the tools, declare a session label)
and returns what the users keep beside the wire (``Live.prepared``); ``farewell`` runs before an orderly close
(end that session), bounded.

The owner task runs ``supervise`` (or enters ``running()``, which does): it connects when asked (at once on
start), holds the connection until it ends — the server went away, or a request dropped it after a timeout or a
broken transport — and connects again only when the next request needs it, so a crashed server is respawned by
the next call, not in a loop. The SDK's task groups are entered and left by that one task, as anyio requires.
``close()`` ends it: an orderly goodbye when a connection is held, then the transport's own shutdown (a stdio
child: stdin closed, then SIGTERM, then SIGKILL), all bounded by ``STOP_GRACE_S``; the SDK shields that shutdown.

Its state is a ``LinkState``; every change wakes the waiters of one condition (``wait_for``). Requests
(``request`` / ``call``), from any task:

- every wait is bounded: connecting (``connect_s``: spawn, ``initialize``, ``setup``) and each request (its
  ``timeout_s``); a request waits at most ``connect_s + READY_MARGIN_S`` for a connection;
- a request that times out or whose transport breaks ends the connection it was sent on (a newer one is left
  alone); ``generation`` moves on, so users can drop what they learned from the old one;
- a request that is not ``replay_safe`` is then NOT sent again: ``RequestLost`` (its ``code`` is
  ``timeout_outcome_unknown`` / ``transport_outcome_unknown``);
- a ``replay_safe`` request is sent once more on a fresh connection, and ``RequestLost`` follows a second loss;
- a server that was already gone before the request was sent is reconnected first; nothing was sent, so even a
  request that is not replay-safe may then go out once;
- no connection to be had: ``NotConnected`` (nothing was sent). An error answer: ``ServerRejected``;
- a server that wants a sign-in the stored tokens cannot give (at connect, or a request refused with a 401) puts the
  connection in ``SIGN_IN`` and the request fails with ``SignInRequired`` (nothing was sent); the next request tries
  again (tokens may have been stored since, by a sign-in here or in another session of the home). A token refused
  although it could be refreshed (``TokensStale``) costs one fresh connection, which refreshes it first: a request
  that met it goes out on that connection (it was not sent), and a connect that met it is tried again at once;
- while a person is being asked something on the server's behalf (``asking_user()``), the deadlines of the
  connection's requests stand still: the time the question was open is added to each.

This module does not import the mcp SDK: ``_wire`` (the adapter, behind the ``wire_port`` seam) is loaded in a
worker thread the first time a connection starts, unless an ``open_wire`` of another kind was given. It knows
nothing about tools, sessions or what a result means.
"""

from __future__ import annotations

import contextlib
import enum
import importlib
import math
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TextIO, TypeVar, cast

import anyio
import structlog

from hermes_acp import anchored
from hermes_acp.telemetry import private_opener

from ._failures import (
    Failure,
    NotConnected,
    RequestLost,
    ServerRejected,
    SignInRequired,
    TokensStale,
    TransportDropped,
)
from .specs import HttpSpec, StdioSpec
from .wire_port import McpWire, OpenWire, ProgressFn, SignInFlow, WireHooks

__all__ = [
    "FAREWELL_TIMEOUT_S",
    "READY_MARGIN_S",
    "STDERR_LOG_BYTES",
    "STOP_GRACE_S",
    "LinkState",
    "Live",
    "SupervisedConnection",
    "load_sign_in",
]

P = TypeVar("P")
T = TypeVar("T")

READY_MARGIN_S = 10.0
"""Added to ``connect_s`` when a request waits for a reconnect: the old connection's shutdown comes first."""
STOP_GRACE_S = 4.0
"""How long ``close()`` lets a held connection say goodbye and shut down before cancelling it."""
FAREWELL_TIMEOUT_S = 1.0
"""Bound on the ``farewell`` hook at an orderly close."""
STDERR_LOG_BYTES = 1024 * 1024
"""A server's stderr log is started afresh when it has grown past this."""
_log = structlog.get_logger("hermes_acp.mcp")


class LinkState(enum.StrEnum):
    IDLE = "idle"
    """Not connected yet; the first attempt is asked for at once."""
    STARTING = "starting"
    READY = "ready"
    DOWN = "down"
    """A connection ended; the next request connects again."""
    FAILED = "failed"
    """The last attempt failed (``error`` says why); the next request tries again."""
    SIGN_IN = "sign_in"
    """The server wants the user to sign in; the next request tries again (with whatever tokens are stored then)."""
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Live(Generic[P]):
    """One live connection: the wire and what ``setup`` made of it."""

    wire: McpWire
    prepared: P


async def _load_adapter(name: str) -> Any:
    """Import an SDK adapter module off the event loop (importing ``mcp`` takes over a second)."""
    return await anyio.to_thread.run_sync(importlib.import_module, f"{__package__}.{name}", abandon_on_cancel=True)


async def _load_open_wire() -> OpenWire:
    opener: OpenWire = (await _load_adapter("_wire")).open_wire
    return opener


async def load_sign_in() -> SignInFlow:
    """The SDK's interactive sign-in (``_oauth.sign_in``), loaded like the connection adapter."""
    flow: SignInFlow = (await _load_adapter("_oauth")).sign_in
    return flow


@dataclass(eq=False)
class _Held(Generic[P]):
    live: Live[P]
    over: anyio.Event
    """Set to end this connection (``_wire`` sets it too when the server goes away)."""
    ended: bool = False
    """The connection was given up (dropped or gone) before the owner closed it: ``generation`` counted it."""
    sign_in: str | None = None
    """Why it was given up when the server wanted a sign-in."""


class _Deadlines:
    """The deadlines of one connection's requests in flight, which stand still while a person is being asked."""

    def __init__(self) -> None:
        self._open: dict[anyio.CancelScope, float] = {}
        """Each request's scope, and (while paused) the time it had left."""
        self._asking = 0

    @contextlib.contextmanager
    def bounded(self, timeout_s: float) -> Iterator[anyio.CancelScope]:
        """A scope (to enter) that is cancelled after ``timeout_s`` of time in which nobody was being asked."""
        now = anyio.current_time()
        scope = anyio.CancelScope(deadline=math.inf if self._asking else now + timeout_s)
        self._open[scope] = timeout_s
        try:
            yield scope
        finally:
            del self._open[scope]

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        if self._asking == 0:
            now = anyio.current_time()
            for scope in self._open:
                self._open[scope] = max(0.0, scope.deadline - now)
                scope.deadline = math.inf
        self._asking += 1
        try:
            yield
        finally:
            self._asking -= 1
            if self._asking == 0:
                now = anyio.current_time()
                for scope, left in self._open.items():
                    scope.deadline = now + left


@dataclass
class _Attempt:
    errlog: TextIO
    start: int = 0
    ready: bool = False
    reason: str | None = None


class SupervisedConnection(Generic[P]):
    def __init__(
        self,
        spec: StdioSpec | HttpSpec,
        *,
        setup: Callable[[McpWire], Awaitable[P]],
        connect_s: float,
        cwd: Path | None = None,
        stderr_log: Path | None = None,
        farewell: Callable[[Live[P]], Awaitable[None]] | None = None,
        on_change: Callable[[], None] = lambda: None,
        open_wire: OpenWire | None = None,
        hooks: WireHooks | None = None,
    ):
        """``stderr_log``: where a stdio server's stderr goes (None: a temporary file); either way its last lines
        explain a failure to start. ``open_wire``: how a connection is opened (None: the SDK adapter, ``_wire``;
        tests give an in-memory one). ``hooks``: what each connection hands the server's own requests to, and how
        it signs in."""
        self.spec = spec
        self.connect_s = connect_s
        self._setup = setup
        self._farewell = farewell
        self._cwd = cwd
        self._stderr_log = stderr_log
        self._on_change = on_change
        self._open_wire = open_wire
        self._hooks = hooks
        self._deadlines = _Deadlines()
        self.state = LinkState.IDLE
        self.error: str | None = None
        """Why the last attempt failed or the connection ended."""
        self.attempts = 0
        """Finished connection attempts (ready or failed)."""
        self.connections = 0
        """Connections that became ready (1 + reconnects)."""
        self.generation = 0
        """Connections given up before the owner closed them: what was learned on an older one is void."""
        self._held: _Held[P] | None = None
        self._want = anyio.Event()
        self._want.set()
        self._changed = anyio.Event()
        self._closing = False
        self._scope = anyio.CancelScope()

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def settling(self) -> bool:
        """An attempt is under way (or about to start: the first one is asked for on creation)."""
        return self.state == LinkState.STARTING or (self.state == LinkState.IDLE and self.attempts == 0)

    # -- the owner side ---------------------------------------------------------------------------------------

    async def supervise(self) -> None:
        """Connect when asked, hold the connection until it ends, repeat, until ``close()``. Never raises."""
        try:
            with self._scope:
                await self._supervise()
        finally:
            self._closing = True
            self._set(LinkState.CLOSED, self.error)

    async def _supervise(self) -> None:
        try:
            open_wire = self._open_wire or await _load_open_wire()
        except Exception as exc:
            _log.exception("the MCP client could not be loaded", server=self.name)
            self._finish_attempt(LinkState.FAILED, f"the MCP client could not be loaded: {exc}")
            return
        while True:
            await self._want.wait()
            self._want = anyio.Event()
            if self._closing:
                return
            try:
                await self._hold_one(open_wire)
            except Exception as exc:
                _log.exception("MCP connection failed unexpectedly", server=self.name)
                self._finish_attempt(LinkState.FAILED, f"unexpected error: {type(exc).__name__}: {exc}")

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[SupervisedConnection[P]]:
        """``supervise`` in a task group of its own, closed on the way out (enter it in the owner task)."""
        async with anyio.create_task_group() as group:
            group.start_soon(self.supervise, name=f"mcp connection {self.name}")
            try:
                yield self
            finally:
                self.close()

    def close(self) -> None:
        """End ``supervise``: a held connection says goodbye and shuts down (bounded), an attempt is cancelled.

        No request is accepted from now on. The SDK shuts a server down inside a cancellation shield, so even a
        cancelled close leaves no child behind."""
        self._closing = True
        self._want.set()
        held = self._held
        if held is None:
            self._scope.cancel()
        else:
            held.over.set()
            self._scope.deadline = min(self._scope.deadline, anyio.current_time() + STOP_GRACE_S)
        self._notify()

    async def _hold_one(self, open_wire: OpenWire) -> None:
        over = anyio.Event()
        self._set(LinkState.STARTING, None)
        errlog, start = await anyio.to_thread.run_sync(self._open_errlog)
        attempt = _Attempt(errlog, start)
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self.connect_s) as scope:
                opened = (
                    open_wire(self.spec, cwd=self._cwd, errlog=errlog, connect_timeout_s=self.connect_s, dropped=over)
                    if self._hooks is None
                    else open_wire(
                        self.spec,
                        cwd=self._cwd,
                        errlog=errlog,
                        connect_timeout_s=self.connect_s,
                        dropped=over,
                        hooks=self._hooks,
                    )
                )
                async with opened as wire:
                    prepared = await self._setup(wire)
                    scope.deadline = math.inf
                    await self._serve(_Held(Live(wire, prepared), over), attempt)
            if scope.cancelled_caught and not attempt.ready:
                self._finish_attempt(LinkState.FAILED, f"it did not finish starting within {self.connect_s:g} s")
        except TokensStale as exc:  # refused while connecting: the next attempt refreshes them first
            self._finish_attempt(LinkState.DOWN, str(exc))
            self._want.set()
        except SignInRequired as exc:
            if attempt.ready:
                self._set(LinkState.SIGN_IN, str(exc))
            else:
                self._finish_attempt(LinkState.SIGN_IN, str(exc))
        except Exception as exc:
            if not isinstance(exc, TransportDropped | ServerRejected | OSError):
                _log.warning("MCP connection error", server=self.name, error=f"{type(exc).__name__}: {exc}")
            reason = self._describe_failure(exc, attempt)
            if attempt.ready:
                self._set(LinkState.DOWN, attempt.reason or reason)
            else:
                self._finish_attempt(LinkState.FAILED, reason)
        finally:
            self._held = None
            over.set()
            with contextlib.suppress(OSError):
                errlog.close()
        if self.state == LinkState.SIGN_IN:
            _log.info("MCP server needs a sign-in", server=self.name)
        elif self.state == LinkState.DOWN:
            _log.info("MCP connection ended", server=self.name, reason=self.error)
        elif self.state == LinkState.FAILED:
            _log.warning("MCP server failed to start", server=self.name, reason=self.error)

    async def _serve(self, held: _Held[P], attempt: _Attempt) -> None:
        """Publish the connection and hold it until it ends; then say goodbye when the end is an orderly close."""
        attempt.ready = True
        self._held = held
        self.connections += 1
        _log.info("MCP connection ready", server=self.name, connection=self.connections)
        self._finish_attempt(LinkState.READY, None)
        if self._closing:
            held.over.set()
        await held.over.wait()
        self._held = None
        if not held.ended and not self._closing:
            self._give_up(held, None)  # the server went away between requests
        attempt.reason = self.error if held.ended else "the connection was closed"
        if not held.ended and self._farewell is not None:
            with anyio.move_on_after(FAREWELL_TIMEOUT_S):
                try:
                    await self._farewell(held.live)
                except (TransportDropped, ServerRejected) as exc:
                    _log.info("MCP farewell failed", server=self.name, error=str(exc))
        if held.sign_in is not None and not self._closing:
            self._set(LinkState.SIGN_IN, held.sign_in)
        elif not self._closing:
            self._set(LinkState.DOWN, attempt.reason or "the connection ended")

    def _open_errlog(self) -> tuple[TextIO, int]:
        """Where a stdio server's stderr goes: ``stderr_log`` (restarted past ``STDERR_LOG_BYTES``) or a temp file."""
        path = self._stderr_log
        if path is None or not isinstance(self.spec, StdioSpec):
            return cast("TextIO", tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")), 0
        with contextlib.suppress(OSError):
            if path.stat().st_size > STDERR_LOG_BYTES:
                anchored.remove_file(path.parent, path)
        # 0600 in a folder 0700, never through a link; the caller owns (and closes) the handle
        handle = open(path, "a+", encoding="utf-8", errors="replace", opener=private_opener)  # noqa: SIM115
        return handle, handle.tell()

    def _describe_failure(self, exc: BaseException, attempt: _Attempt) -> str:
        cause = exc.__cause__
        if isinstance(exc, OSError) or isinstance(cause, OSError):
            error = exc if isinstance(exc, OSError) else cause
            if isinstance(error, FileNotFoundError) and isinstance(self.spec, StdioSpec):
                return f"command not found: {self.spec.command!r}"
            return f"{type(error).__name__}: {error}"
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, TransportDropped) and isinstance(self.spec, StdioSpec):
            reason = "the server process exited or closed its output"
        tail = _stderr_tail(attempt.errlog, attempt.start)
        return f"{reason} (stderr: {tail})" if tail else reason

    def _notify(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()
        self._on_change()

    def changed(self) -> None:
        """Something its users keep beside the connection changed: wake ``wait_for`` and ``on_change``."""
        self._notify()

    def _set(self, state: LinkState, error: str | None) -> None:
        self.state = state
        self.error = error
        self._notify()

    def _finish_attempt(self, state: LinkState, error: str | None) -> None:
        self.attempts += 1
        self._set(state, error)

    def _give_up(self, held: _Held[P], reason: str | None) -> None:
        """Stop using ``held``; the owner task tears it down. Counted once in ``generation``."""
        if held.ended:
            return
        held.ended = True
        self.generation += 1
        if reason is not None:
            self.error = reason
        held.over.set()

    # -- the caller side (any task) ---------------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[SupervisedConnection[P]], bool]) -> None:
        """Until ``predicate(self)`` holds, re-checked at every state change. Unbounded: bound it."""
        while True:
            changed = self._changed
            if predicate(self):
                return
            await changed.wait()

    def _live_held(self) -> _Held[P] | None:
        held = self._held
        ok = self.state == LinkState.READY and held is not None and not held.over.is_set()
        return held if ok else None

    def live(self) -> Live[P] | None:
        """The live connection now, if there is one (without waiting or connecting)."""
        held = self._live_held()
        return held.live if held is not None else None

    async def ready(self) -> Live[P]:
        """A live connection: the current one, or a new one (bounded by ``connect_s`` + ``READY_MARGIN_S``)."""
        return (await self._ready()).live

    async def _ready(self) -> _Held[P]:
        held = self._live_held()
        if held is not None:
            return held
        if self._closing:
            raise NotConnected(f"MCP server {self.name!r} is shutting down; the request was not sent")
        asked_at = self.attempts + (0 if self.settling else 1)
        if not self.settling:
            self._want.set()

        def failed(conn: SupervisedConnection[P]) -> bool:
            return conn.state in (LinkState.FAILED, LinkState.SIGN_IN) and conn.attempts >= asked_at

        with anyio.move_on_after(self.connect_s + READY_MARGIN_S):
            await self.wait_for(lambda conn: conn._live_held() is not None or failed(conn) or conn._closing)
        held = self._live_held()
        if held is not None:
            return held
        if failed(self) and self.state == LinkState.SIGN_IN:
            raise SignInRequired(f"MCP server {self.name!r} needs you to sign in; the request was not sent")
        if failed(self):
            raise NotConnected(f"MCP server {self.name!r} is unavailable: {self.error}; the request was not sent")
        if self._closing:
            raise NotConnected(f"MCP server {self.name!r} is shutting down; the request was not sent")
        raise NotConnected(f"MCP server {self.name!r} did not become ready in time; the request was not sent")

    async def reconnect(self) -> Live[P]:
        """End the current connection (if one is held) and connect again, as a request would after a drop; the new
        connection (bounded like ``ready``), or ``NotConnected`` saying why there is none. For a user's explicit
        ask: a request in flight on the old connection loses its answer (``RequestLost``)."""
        held = self._live_held()
        if held is not None:
            self._give_up(held, "a reconnect was asked for")
        return await self.ready()

    async def request(
        self, op: Callable[[Live[P]], Awaitable[T]], *, what: str, timeout_s: float, replay_safe: bool
    ) -> T:
        """``op`` on a live connection, under the at-most-once rules of the module docstring."""
        attempts = 2 if replay_safe else 1
        failure: Failure = "timeout"
        detail = ""
        attempt = 0
        refreshed = False
        while attempt < attempts:
            attempt += 1
            held = await self._ready()
            try:
                with self._deadlines.bounded(timeout_s) as scope, scope:
                    return await op(held.live)
                failure, detail = "timeout", f"no answer within {timeout_s:g} s"
            except TokensStale as exc:
                self._give_up(held, str(exc))
                if refreshed:  # the tokens were refreshed for it, and still refused
                    raise SignInRequired(f"MCP server {self.name!r} needs you to sign in; nothing was sent") from None
                refreshed, attempt = True, attempt - 1  # nothing was sent: it goes out on a fresh connection
                continue
            except SignInRequired as exc:
                held.sign_in = str(exc)
                self._give_up(held, str(exc))
                raise
            except TransportDropped as exc:
                failure, detail = "transport", f"the connection broke ({exc})"
            self._give_up(held, f"{what}: {detail}")
            _log.warning("MCP request lost", request=what, failure=failure, attempt=attempt, replay_safe=replay_safe)
        raise RequestLost(failure, detail, replay_safe=replay_safe, attempts=attempts)

    def asking_user(self) -> contextlib.AbstractContextManager[None]:
        """While entered, the deadlines of this connection's requests stand still (a person is being asked)."""
        return self._deadlines.paused()

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        replay_safe: bool,
        timeout_s: float,
        on_progress: ProgressFn | None = None,
    ) -> dict[str, Any]:
        """``tools/call``; the result as the server sent it (its progress notifications to ``on_progress``)."""

        def op(live: Live[P]) -> Awaitable[dict[str, Any]]:
            if on_progress is None:
                return live.wire.call_tool(tool, dict(arguments))
            return live.wire.call_tool(tool, dict(arguments), on_progress=on_progress)

        return await self.request(
            op,
            what=f"{self.name}/{tool}",
            timeout_s=timeout_s,
            replay_safe=replay_safe,
        )


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
