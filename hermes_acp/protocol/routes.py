"""A connection's routes per (version, method), and operations applied once.

The dispatcher has one route per method name; a connection speaks v1 or v2 (``Handshake.version``, fixed by its
``initialize``), and the two versions share some methods, rename some (``authenticate`` → ``auth/login``), drop
some (``session/load``, ``session/set_mode``) and add some (``tool_call/cancel``). ``VersionedRoutes`` puts one
route per method of either version on the dispatcher, each handing the request to that version's handler, or
answering -32601 for a method the connection's version does not have. A method's ``cancel`` hook is its version's
(v1's ``session/prompt`` cancels the turn; v2's leaves the request's scope to be cancelled, which withdraws a held
prompt). Any request marks the handshake as followed by other requests (v2 refuses a repeated ``initialize`` then).

A state-changing request (``STATE_CHANGING``) sent with ``_meta.hermes.operationId`` goes through the app's
``OperationLedger``: applied the first time, a repeat answered with the first outcome (its result, or its error
again) without running anything; its answer says so in ``_meta.hermes.operationReceipt``. The scope of the ids is
the client's ``_meta.hermes.clientInstanceId`` from its ``initialize`` (the same across its reconnects), else its
connection. The first attempt runs in the app's task group (``spawn``), not in the request: a request whose link
dropped stops waiting, the operation goes on and its outcome is kept for the client's resend (a v1 prompt resent
after a reconnect waits for the same turn and gets its stop reason).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any

import anyio

from hermes_acp.jsonrpc.boundary import ClientRequestError
from hermes_acp.jsonrpc.dispatcher import Handler, RequestContext, Route

from .handshake import Handshake
from .reliable import meta
from .reliable.operations import OperationKey, OperationLedger, fingerprint

__all__ = ["STATE_CHANGING", "Spawn", "VersionedRoutes"]

STATE_CHANGING = frozenset(
    {
        "session/new",
        "session/prompt",
        "session/cancel",
        "session/set_config_option",
        "session/set_mode",
        "session/set_model",
        "session/set_title",
        "session/fork",
        "session/archive",
        "session/unarchive",
        "session/delete",
        "session/close",
        "_session/steering",
        "_session/rewind",
        "providers/set",
        "providers/disable",
    }
)
"""The requests (and the ``session/cancel`` notification) an operation id makes apply once."""
WITHDRAW_WAIT_S = 35.0
"""How long a withdrawn request waits for its operation to say what it made of the withdrawal."""
Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]], str], None]
"""Starts a task in the app's task group."""


class VersionedRoutes:
    """See the module docstring. ``scope``: the ledger scope of this connection's operation ids, asked per request
    (the client names its instance in ``initialize``)."""

    def __init__(
        self,
        handshake: Handshake,
        tables: Mapping[int, Sequence[Route]],
        *,
        ledger: OperationLedger | None = None,
        scope: Callable[[], str] = lambda: "",
        spawn: Spawn | None = None,
    ):
        self._handshake = handshake
        self._tables = {version: {route.method: route for route in routes} for version, routes in tables.items()}
        self._ledger = ledger
        self._scope = scope
        self._spawn = spawn

    def routes(self) -> list[Route]:
        methods = sorted({method for table in self._tables.values() for method in table})
        return [Route(method, self._handler(method), cancel=self._cancel(method)) for method in methods]

    def _route(self, method: str) -> Route:
        version = self._handshake.version
        route = self._tables.get(version, {}).get(method)
        if route is None:
            raise ClientRequestError(
                -32601, f"Method not found: {method} (this connection speaks ACP v{version})", {"method": method}
            )
        return route

    def _handler(self, method: str) -> Handler:
        async def handle(ctx: RequestContext, raw: Any) -> Any:
            self._handshake.requested = True
            route = self._route(method)
            ledger = self._ledger
            operation = None
            if ledger is not None and method in STATE_CHANGING:
                operation = meta.operation_id(raw, epoch=self._handshake.epoch.id)
            if ledger is None or operation is None:
                return await route.handler(ctx, raw)
            session_id = raw.get("sessionId") if isinstance(raw, dict) else None
            key = OperationKey(self._scope(), session_id if isinstance(session_id, str) else "", operation)
            identity = fingerprint(method, raw)
            result = await self._detached(
                lambda: ledger.apply(key, identity, lambda: route.handler(ctx, raw)),
                f"operation {method}",
                withdrawn=route.cancel is None,
            )
            if ctx.request_id is None:  # a notification: nothing to answer
                return result
            answer = result if isinstance(result, dict) else {}
            return meta.with_result_meta(answer, operationReceipt=meta.receipt(operation))

        return handle

    def _cancel(self, method: str) -> Callable[[Any], bool | None]:
        def cancel(raw: Any) -> bool | None:
            route = self._tables.get(self._handshake.version, {}).get(method)
            if route is None or route.cancel is None:
                return False
            return route.cancel(raw)

        return cancel

    async def _detached(self, run: Callable[[], Awaitable[Any]], name: str, *, withdrawn: bool) -> Any:
        """``run`` in the app's task group; its outcome, waited for here. A request that is withdrawn while it
        waits (``$/cancel_request``, or its client gone) withdraws the operation too when its route has no cancel
        hook of its own (``withdrawn``: a v2 prompt not yet started is taken back, one inserted answers its id),
        and gets what that made of it; one whose route has a hook (a v1 prompt: the hook cancels the turn, a link
        that dropped does not) stops waiting and leaves it running."""
        if self._spawn is None:
            return await run()
        done = anyio.Event()
        outcome: dict[str, Any] = {}
        scope = anyio.CancelScope()

        async def work() -> None:
            try:
                with scope:
                    outcome["result"] = await run()
            except Exception as exc:
                outcome["error"] = exc
            finally:
                done.set()

        self._spawn(work, name)
        try:
            await done.wait()
        except anyio.get_cancelled_exc_class():
            if not withdrawn:
                raise
            scope.cancel()
            with anyio.CancelScope(shield=True), anyio.move_on_after(WITHDRAW_WAIT_S):
                await done.wait()
            if not outcome:
                raise
        if "error" in outcome:
            raise outcome["error"]
        if "result" not in outcome:
            raise ClientRequestError(-32603, "the operation was interrupted (the server is shutting down)")
        return outcome["result"]
