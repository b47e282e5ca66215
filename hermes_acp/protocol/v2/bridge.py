"""The v2 side of the client bridge (``protocol/client_bridge.py``): what changes for a connection that speaks v2.

- ``UpdateSink``: stored events and live updates rendered by ``render`` (upserts by id, ``state_update``,
  agent-owned terminals, plans by id, compactions, notices: all baseline in v2), sent through the connection's v1
  sink's ``send`` (the same ``session/update`` with the same delivery cursor). A turn's end is not rendered from
  its ``TurnEnded`` (its cursor goes with the next update): the session tells where its foreground work stands
  (``state_update``, below), which says how the prompt ended with what the event does not hold (a failure after
  the prompt was inserted). A notice is always shown: every v2 client takes them.
- ``asking``: a permission question in v2's shape (prompt copy, the tool call as the subject).
- ``state_update``: the session's ``Foreground`` as v2's ``state_update`` (a failure as ``stopReason: "error"`` with
  the JSON-RPC error object ``failures.failure_error`` makes, the one the v1 answer of such a prompt carries too;
  a limit and the cost in ``_meta.hermes``, as in a v1 answer).
- ``config_options``, ``commands_update``: the session's options and commands in v2's shapes.
- ``advertised``: what the client said in its ``initialize`` (forms, terminal auth), read as the handshake read it.

It knows the session layer's values and the renderings, not the dispatcher.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from hermes_acp.core import SessionEvent, TurnEnded
from hermes_acp.core.notice import Notice
from hermes_acp.protocol.failures import failure_error
from hermes_acp.sessions.views import Foreground
from hermes_acp.turns.ports import LiveUpdate, PermissionChoice, PermissionQuestion

from . import render
from .handshake import Advertised, read_client

__all__ = ["FEATURES", "UpdateSink", "advertised", "asking", "commands_update", "config_options", "state_update"]

FEATURES = render.Features(cancel_tool_calls=True, cancel_terminals=True)
"""What the server routes on a v2 connection beyond the baseline: ``tool_call/cancel`` and ``terminal/cancel``."""


class _Send(Protocol):
    def passed(self, seq: int | None) -> None: ...

    async def send(self, update: dict[str, Any]) -> None: ...


class UpdateSink:
    """A v2 connection's updates for one session (see the module docstring)."""

    def __init__(self, base: _Send):
        self._base = base

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        self._base.passed(seq)
        if isinstance(event, TurnEnded):
            return  # the foreground's idle state reports it (``state_update``)
        for update in render.event_updates(event, live=live, features=FEATURES):
            await self._base.send(update)

    async def emit_live(self, update: LiveUpdate) -> None:
        rendered = render.live_update(update, FEATURES)
        if rendered is not None:
            await self._base.send(rendered)

    async def notice(self, notice: Notice) -> bool:
        await self._base.send(render.notice(notice))
        return True

    async def send(self, update: dict[str, Any]) -> None:
        await self._base.send(update)


def asking(session_id: str) -> Callable[[PermissionQuestion, Sequence[PermissionChoice]], dict[str, Any]]:
    """The v2 ``session/request_permission`` params of a question in ``session_id``."""

    def params(question: PermissionQuestion, choices: Sequence[PermissionChoice]) -> dict[str, Any]:
        return render.permission_request(session_id, question, choices)

    return params


def state_update(state: Foreground) -> dict[str, Any]:
    """``state`` as v2's ``state_update``: a failure as the JSON-RPC error object a v1 prompt is answered with
    (``data`` included), the limit it stopped at and its cost in ``_meta.hermes``, as a v1 answer carries them."""
    idle = state.state == "idle"
    error = failure_error(state.failure) if idle and state.failure is not None else None
    hermes: dict[str, Any] = {}
    if idle and state.limit is not None:
        hermes["limit"] = state.limit.to_json()
    if idle and state.cost is not None:
        hermes["cost"] = {"amount": state.cost.amount, "currency": state.cost.currency}
    return render.state_update(
        state.state, stop_reason=state.stop_reason, error=error, usage=state.usage, hermes=hermes
    )


def config_options(options: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return render.config_options(options)


def commands_update(update: dict[str, Any]) -> dict[str, Any]:
    """A v1 ``available_commands_update`` in v2's shape (typed commands and inputs)."""
    return {**update, "availableCommands": render.available_commands(update["availableCommands"])}


def advertised(params: Mapping[str, Any] | None) -> Advertised:
    """What a v2 client advertised in its ``initialize`` (nothing before it sent one)."""
    return read_client(params) if params is not None else Advertised()
