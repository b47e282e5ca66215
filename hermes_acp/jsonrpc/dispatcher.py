"""The JSON-RPC dispatcher: one route per method, a cancel scope per request in flight, the requests we send, and
the one exception → wire boundary.

Modelled on the MCP Python SDK's JSON-RPC dispatcher. ``run`` reads frames (``framing``) until the client closes its
input and starts one task per incoming request or notification, in arrival order, each inside a ``CancelScope``
registered in the in-flight table *before* the task starts, so a ``$/cancel_request`` that follows finds it.

- **Routes.** ``add_routes`` installs ``Route``s: a method name and an async handler taking the ``RequestContext``
  and the raw params. A request for a method not yet routed waits until the server has loaded (``ready``), so the
  answer to ``initialize`` never waits for the rest of the server; after that an unknown method is -32601.
- **Errors.** ``_answer`` is the single place where a handler's exception becomes a JSON-RPC error
  (``boundary.to_wire``, with the ``ErrorMap`` the server hands in for its own exceptions); a cancelled request is
  -32800.
- **Cancellation.** ``$/cancel_request`` for a request in flight calls its route's ``cancel`` hook when it has one
  (``session/prompt`` cancels its turn, which then answers ``stopReason: cancelled``), else (or when the hook says
  False) cancels its scope. One
  that arrives as a request (with an id) is answered too (an empty result), as JSON-RPC wants.
- **Requests we send** (``request``): ids of our own, correlated with the answers, each wait bounded by the caller;
  a wait that is abandoned sends ``$/cancel_request`` to the client. The first answer to an id is final: the
  waiter leaves the table when it arrives, so a second answer, or an answer to a request we cancelled, finds
  nothing and is dropped (logged at debug). When the client goes away every waiting request fails with
  ``ClientGone``.
- **After the response.** A handler may queue work with ``RequestContext.after_response`` (e.g.
  ``available_commands_update`` after ``session/new``): it runs, bounded, once that response is on the wire.
- **The client leaving.** At EOF, at a write whose ``Writer`` says the client is gone (``link.ClientGone``: each
  transport's adapter translates its own disconnect errors into it, so this module knows no transport's) or whose
  reader stalled past ``WRITE_TIMEOUT_S``, or at ``close_input`` (the signal path and a transport that saw its peer
  go), reading stops: one path for every way of leaving, on every transport. Every request with a ``cancel`` hook
  is cancelled at once (unless ``cancel_on_leave`` is off: a session host whose turns outlive the connection), the
  others get ``EOF_GRACE_S`` to finish before their scopes are cancelled, waiting requests we sent fail with
  ``ClientGone``, and ``run`` returns. A write after that is dropped with ``ClientGone`` too, never an error of the
  turn that wrote it.

It knows JSON-RPC and nothing of ACP's methods, sessions or pydantic.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup

from .boundary import CANCELLED, ClientRequestError, ErrorMap, to_wire
from .framing import FrameError, LineReader, decode_frame, encode_frame
from .link import ClientGone, Writer

__all__ = [
    "EOF_GRACE_S",
    "HOOK_TIMEOUT_S",
    "Dispatcher",
    "FrameSource",
    "Handler",
    "RequestContext",
    "Route",
]

_log = logging.getLogger("hermes_acp.protocol")
CANCEL_REQUEST = "$/cancel_request"
EOF_GRACE_S = 1.0
"""When the client leaves, requests without a cancel hook (a session/new in progress) may finish for this long."""
HOOK_TIMEOUT_S = 10.0
"""Bound on one piece of after-response work."""
READY_TIMEOUT_S = 60.0
"""Bound on a request's wait for the server to load (it takes well under a second)."""
MAX_ABANDONED = 1024
"""How many abandoned request ids are remembered (to drop their late answers quietly)."""
WRITE_TIMEOUT_S = 30.0
"""Bound on one write: a client that stops reading has left (it cannot hold a turn forever)."""

RequestId = str | int | None


@dataclass
class RequestContext:
    """What a handler knows of the request it answers."""

    request_id: RequestId
    method: str
    _after: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def after_response(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Run ``callback`` once this request's response has been written."""
        self._after.append(callback)


Handler = Callable[[RequestContext, Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    handler: Handler
    """For a request: returns the result (JSON data). For a notification: returns nothing."""
    cancel: Callable[[Any], bool | None] | None = None
    """How ``$/cancel_request`` (or the client leaving) stops this request, given its params, when cancelling its
    scope is not the right answer (a prompt turn settles and answers ``cancelled``); a hook that returns False
    leaves it to the scope after all (a route that serves several protocol versions decides per request)."""


@dataclass
class _InFlight:
    scope: anyio.CancelScope
    route: Route | None
    params: Any


@dataclass
class _Waiter:
    """One request we sent: set when its answer arrives or the client goes away."""

    done: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    error: dict[str, Any] | None = None
    gone: bool = False


class FrameSource(Protocol):
    """Where frames come from: ``LineReader`` over a byte stream, or a transport that delivers whole messages."""

    async def read(self) -> bytes | FrameError | None:
        """The next frame, a ``FrameError`` for one that cannot be taken, or None when the client closed."""
        ...


class Dispatcher:
    def __init__(
        self,
        reader: FrameSource | LineReader,
        writer: Writer,
        *,
        cancel_on_leave: bool = True,
        errors: ErrorMap | None = None,
    ):
        self._reader = reader
        self._errors = errors
        """The server's own exceptions as JSON-RPC errors (None: every one is -32603)."""
        self.cancel_on_leave = cancel_on_leave
        """Whether the client leaving cancels requests with a cancel hook (their turns) at once."""
        self._writer = writer
        self._routes: dict[str, Route] = {}
        self._ready = anyio.Event()
        self._load_error: str | None = None
        self._in_flight: dict[RequestId, _InFlight] = {}
        self._drained = anyio.Event()
        """Set while no request is in flight."""
        self._drained.set()
        self._waiters: dict[int, _Waiter] = {}
        self._abandoned: set[int] = set()
        """Requests of ours whose wait ended without an answer (a late answer to one is no surprise)."""
        self._ids = itertools.count(1)
        self._sent = 0
        """The id of the latest request we sent (every positive id up to it was used)."""
        self._write_lock = anyio.Lock()
        self._output_closed = False
        self._input_closed = False
        self._reading: anyio.CancelScope | None = None
        self._leaving = False
        self._group: TaskGroup | None = None
        self.finished = anyio.Event()
        """Set when ``run`` has returned: the client is gone and the requests in flight have ended."""

    # -- routes ----------------------------------------------------------------------------------------------

    def add_routes(self, routes: Iterable[Route], *, complete: bool = False) -> None:
        """Install routes; ``complete`` says every route is now known (requests waiting for the server go on)."""
        for route in routes:
            self._routes[route.method] = route
        if complete:
            self._ready.set()

    def fail_routes(self, reason: str) -> None:
        """The server could not load: every request still waiting, and every later one, gets ``reason``."""
        self._load_error = reason
        self._ready.set()

    @property
    def client_gone(self) -> bool:
        return self._input_closed or self._output_closed

    # -- the read loop ---------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve until the client closes its input (or ``close_input``), then end what is in flight (bounded)."""
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                with anyio.CancelScope() as self._reading:
                    if not self._leaving:
                        await self._read_loop()
                await self._client_left()
        finally:
            self.finished.set()

    def close_input(self) -> None:
        """Stop reading as if the client had closed its input (a termination signal, a peer that went away)."""
        self._leaving = True
        if self._reading is not None:
            self._reading.cancel()

    async def _read_loop(self) -> None:
        while True:
            line = await self._reader.read()
            if line is None:
                return
            if isinstance(line, FrameError):
                await self._reply_error(line)
                continue
            if not line.strip():
                continue
            try:
                message = decode_frame(line)
            except FrameError as exc:
                await self._reply_error(exc)
                continue
            self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            self._resolve(message)
            return
        params = message.get("params")
        assert self._group is not None
        if method == CANCEL_REQUEST:
            self._cancel_request(params)
            if "id" in message:  # sent as a request: it gets its answer
                self._group.start_soon(self._write_quietly, {"jsonrpc": "2.0", "id": message["id"], "result": {}})
            return
        if "id" not in message:
            self._group.start_soon(self._notified, method, params, name=f"notification {method}")
            return
        request_id = message["id"]
        if request_id in self._in_flight:
            self._group.start_soon(
                self._reply_error, FrameError(-32600, f"Invalid request: id {request_id!r} is already in use")
            )
            return
        flight = _InFlight(anyio.CancelScope(), self._routes.get(method), params)
        self._in_flight[request_id] = flight
        if self._drained.is_set():
            self._drained = anyio.Event()
        self._group.start_soon(self._answer, request_id, method, flight, name=f"request {method}")

    # -- incoming requests and notifications -------------------------------------------------------------------

    async def _route(self, method: str) -> Route | None:
        route = self._routes.get(method)
        if route is None and not self._ready.is_set():
            with anyio.move_on_after(READY_TIMEOUT_S):
                await self._ready.wait()
            route = self._routes.get(method)
        return route

    async def _answer(self, request_id: RequestId, method: str, flight: _InFlight) -> None:
        """Run one request's handler and write its answer: the single exception → wire boundary."""
        context = RequestContext(request_id, method)
        reply: dict[str, Any]
        try:
            with flight.scope:
                route = flight.route or await self._route(method)
                if route is None and self._load_error is not None:
                    raise ClientRequestError(-32603, self._load_error)
                if route is None:
                    raise ClientRequestError(-32601, f"Method not found: {method}", {"method": method})
                flight.route = route
                result = await route.handler(context, flight.params)
            if flight.scope.cancelled_caught:
                reply = {"jsonrpc": "2.0", "id": request_id, "error": CANCELLED}
            else:
                reply = {"jsonrpc": "2.0", "id": request_id, "result": result if result is not None else {}}
        except Exception as exc:
            reply = {"jsonrpc": "2.0", "id": request_id, "error": to_wire(exc, method, self._errors)}
        finally:
            self._in_flight.pop(request_id, None)
            if not self._in_flight:
                self._drained.set()
        await self._write_quietly(reply)
        for callback in context._after:
            try:
                with anyio.fail_after(HOOK_TIMEOUT_S):
                    await callback()
            except Exception:
                _log.exception("work after the response to %s failed", method)

    async def _notified(self, method: str, params: Any) -> None:
        route = await self._route(method)
        if route is None:
            _log.debug("notification for an unknown method ignored: %s", method)
            return
        try:
            await route.handler(RequestContext(None, method), params)
        except Exception as exc:
            _log.warning("notification %s failed: %s", method, to_wire(exc, method, self._errors)["message"])

    def _cancel_request(self, params: Any) -> None:
        request_id = params.get("requestId") if isinstance(params, dict) else None
        flight = self._in_flight.get(request_id)
        if flight is None:
            _log.debug("$/cancel_request for a request not in flight: %r", request_id)
            return
        self._cancel(flight)

    @staticmethod
    def _cancel(flight: _InFlight) -> None:
        hook = flight.route.cancel if flight.route is not None else None
        if hook is None or hook(flight.params) is False:
            flight.scope.cancel()

    async def _client_left(self) -> None:
        """Cancel turns at once, give the other requests a short grace, fail the requests we still wait on."""
        self._input_closed = True
        for waiter in self._waiters.values():
            waiter.gone = True
            waiter.done.set()
        self._waiters.clear()
        if self.cancel_on_leave:
            hooked = [f for f in self._in_flight.values() if f.route is not None and f.route.cancel is not None]
            for flight in hooked:
                self._cancel(flight)
        if self._in_flight:
            _log.info("the client left with %d request(s) in flight; stopping them", len(self._in_flight))
            with anyio.move_on_after(EOF_GRACE_S):
                await self._drained.wait()
            for flight in list(self._in_flight.values()):
                flight.scope.cancel()

    # -- requests we send ----------------------------------------------------------------------------------------

    async def request(self, method: str, params: Mapping[str, Any], *, wait_s: float | None) -> Any:
        """Send a request to the client and wait for its result; ``wait_s`` None leaves the bound to the caller.

        Raises ``ClientRequestError`` for an error answer, ``TimeoutError`` when ``wait_s`` passes, and
        ``ClientGone`` (a ``ConnectionError``) when the client is gone. A wait that ends without an answer (timeout,
        cancel) tells the client with ``$/cancel_request``."""
        if self.client_gone:
            raise ClientGone("the client connection is closed")
        request_id = next(self._ids)
        self._sent = request_id
        waiter = _Waiter()
        self._waiters[request_id] = waiter
        try:
            await self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)})
            if wait_s is None:
                await waiter.done.wait()
            else:
                with anyio.fail_after(wait_s):
                    await waiter.done.wait()
        except BaseException:
            if not waiter.done.is_set():
                self._waiters.pop(request_id, None)
                self._abandoned.add(request_id)
                if len(self._abandoned) > MAX_ABANDONED:
                    self._abandoned.discard(min(self._abandoned))
                if not self.client_gone:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                        await self._write_quietly(
                            {"jsonrpc": "2.0", "method": CANCEL_REQUEST, "params": {"requestId": request_id}}
                        )
            raise
        finally:
            self._waiters.pop(request_id, None)
        if waiter.gone:
            raise ClientGone(f"the client went away before answering {method}")
        if waiter.error is not None:
            raise ClientRequestError.from_error(waiter.error)
        return waiter.result

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """Send a notification; raises ``ClientGone`` (a ``ConnectionError``) when the client is gone."""
        await self._write({"jsonrpc": "2.0", "method": method, "params": dict(params)})

    def _resolve(self, message: dict[str, Any]) -> None:
        """The first answer to a request of ours is final: the waiter leaves the table as it is answered."""
        request_id = message.get("id")
        waiter = self._waiters.pop(request_id, None) if isinstance(request_id, int) else None
        if waiter is None:
            if isinstance(request_id, int) and request_id in self._abandoned:
                _log.debug("a late answer to request %r, which we had cancelled, dropped", request_id)
            elif isinstance(request_id, int) and 0 < request_id <= self._sent:
                _log.debug("a second answer to request %r dropped (the first one counts)", request_id)
            else:
                _log.warning("an answer to no request of ours (id %r) ignored", request_id)
            return
        error = message.get("error")
        if error is not None:
            waiter.error = error if isinstance(error, dict) else {"code": -32603, "message": str(error)}
        else:
            waiter.result = message.get("result")
        waiter.done.set()

    # -- writing ---------------------------------------------------------------------------------------------

    async def _write(self, message: dict[str, Any]) -> None:
        if self._output_closed:
            raise ClientGone("the client connection is closed")
        data = encode_frame(message)
        async with self._write_lock:
            try:
                with anyio.fail_after(WRITE_TIMEOUT_S):
                    await self._writer.send(data)
            except TimeoutError:
                self._gone()
                raise ClientGone(f"the client stopped reading for {WRITE_TIMEOUT_S:g} s") from None
            except ClientGone:
                self._gone()
                raise

    def _gone(self) -> None:
        """The link dropped under a write: the client left, whichever end it closed first (the one EOF path)."""
        self._output_closed = True
        self.close_input()

    async def _write_quietly(self, message: dict[str, Any]) -> None:
        try:
            await self._write(message)
        except ClientGone:
            _log.info("the client is gone; a message to it was dropped")

    async def _reply_error(self, error: FrameError) -> None:
        _log.warning("rejected a frame: %s", error)
        await self._write_quietly(
            {"jsonrpc": "2.0", "id": error.request_id, "error": {"code": error.code, "message": str(error)}}
        )
