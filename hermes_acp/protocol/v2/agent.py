"""``V2Agent``: the handlers of ACP v2's methods, for a connection whose ``initialize`` chose v2.

It is the v1 agent (``protocol/agent.py``) where v2 did not change a method (``session/list``, ``session/delete``,
``session/cancel``, the unstable ``set_title``, ``archive``, ``unarchive``, ``providers/*``, the steering and rewind
extensions; ``auth/login`` and ``auth/logout`` are v1's ``authenticate`` and ``logout`` renamed), and its own where
v2 did:

- ``session/new``, ``session/fork``: ``mcpServers`` optional and checked as the SDK checks them
  (``wire.mcp_servers``); the answer has config options, no modes or models (the bridge's ``view``);
- ``session/resume`` replaces ``session/load``: with ``replayFrom: {"type": "start"}`` the history first, with
  ``_meta.hermes.afterCursor`` only what came after that cursor (``rejoin``), then, replay or not, exactly one
  ``state_update`` (where the session's foreground work stands), then the answer;
- ``session/prompt`` is answered ``{messageId}`` once the prompt is inserted (its user message stored), not when
  its turn ends; the turn's progress and end arrive as ``state_update`` s. A prompt held behind another that is
  cancelled, withdrawn (``$/cancel_request``) or dropped before it started is answered -32800; ``$/cancel_request``
  for a prompt already inserted changes nothing (v1's cancels the session's turn instead);
- ``session/close`` cancels the session's foreground work first when this connection is the only one attached (its
  final updates and the cancelled idle state go out), then answers; an unknown session is closed already;
- ``session/set_config_option`` takes the value's ``type`` (``id`` or ``boolean``);
- ``session/status`` (unstable) says ``open`` with the session's state, or ``saved``;
- ``tool_call/cancel`` stops one announced tool call, running or queued (it settles failed as ``cancelled``);
  ``terminal/cancel`` stops only the command of an agent-owned terminal (killed, or never started while its call
  is queued or waits for approval): the call is not cancelled, it settles with what the command printed and how it
  ended (-32602 for a terminal that is unknown or whose command has ended).

The routes of a connection are chosen per (version, method) in ``protocol/routes.py``.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio

from hermes_acp.errors import InvalidParamsError, SessionNotFoundError
from hermes_acp.jsonrpc.boundary import CANCELLED, ClientRequestError
from hermes_acp.jsonrpc.dispatcher import RequestContext, Route
from hermes_acp.protocol.agent import REWIND_METHOD, STEERING_METHOD, HermesAgent, _server_entries
from hermes_acp.protocol.convert import prompt_to_display
from hermes_acp.protocol.lifecycle_params import client_system_prompt
from hermes_acp.protocol.rejoin import rejoin_point
from hermes_acp.protocol.reliable import meta
from hermes_acp.protocol.wire import parse
from hermes_acp.sessions.views import PromptTicket

from . import render, wire
from .bridge import state_update

__all__ = ["INSERT_WAIT_S", "V2Agent"]

INSERT_WAIT_S = 30.0
"""How long a prompt whose request was withdrawn after it started still waits to be inserted (to be answered with
its id rather than as cancelled)."""


class V2Agent(HermesAgent):
    def routes(self) -> list[Route]:
        return [
            Route("auth/login", self.authenticate),
            Route("auth/logout", self.logout),
            Route("session/new", self.new_session),
            Route("session/resume", self.resume_session),
            Route("session/fork", self.fork_session),
            Route("session/list", self.list_sessions),
            Route("session/status", self.session_status),
            Route("session/close", self.close_session),
            Route("session/delete", self.delete_session),
            Route("session/set_config_option", self.set_config_option),
            Route("session/set_title", self.set_title),
            Route("session/archive", self.archive_session),
            Route("session/unarchive", self.unarchive_session),
            Route("session/prompt", self.prompt),
            Route("session/cancel", self.cancel),
            Route("tool_call/cancel", self.cancel_tool_call),
            Route("terminal/cancel", self.cancel_terminal),
            Route("providers/list", self._provider_routes.list),
            Route("providers/set", self._provider_routes.set),
            Route("providers/disable", self._provider_routes.disable),
            Route(STEERING_METHOD, self.steer),
            Route(REWIND_METHOD, self.rewind),
        ]

    # -- session lifecycle ----------------------------------------------------------------------------------------

    async def new_session(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        params = parse(wire.NewSessionParams, raw)
        session = await self.manager.new_session(
            params.cwd,
            params.additional_directories,
            _server_entries(wire.mcp_servers(params.mcp_servers)),
            client=self._bridge,
            system_prompt=client_system_prompt(params.system_prompt),
        )
        self._announce_commands(ctx, session)
        return {"sessionId": session.id, **self._view(session)}

    async def resume_session(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        params = parse(wire.ResumeSessionParams, raw)
        servers = _server_entries(wire.mcp_servers(params.mcp_servers))
        after, recovery = await rejoin_point(self.manager, self._bridge.epoch, params.session_id, raw)
        if recovery is None and params.replay_from is not None:
            recovery = "full"
        session = await self.manager.open_existing(
            params.session_id,
            params.cwd,
            params.additional_directories,
            servers,
            replay=recovery is not None,
            client=self._bridge,
            system_prompt=client_system_prompt(params.system_prompt),
            after=after,
        )
        await self._bridge.state_changed(session.id, session.audience.state)  # the one snapshot, before the answer
        self._announce_commands(ctx, session)
        result = self._view(session)
        return meta.with_result_meta(result, recovery=recovery) if recovery is not None else result

    async def fork_session(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        wire.mcp_servers(parse(wire.ForkSessionParams, raw).mcp_servers)
        return await super().fork_session(ctx, raw)

    async def close_session(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        session_id = parse(wire.CloseParams, raw).session_id
        session = self.manager.live(session_id)
        if session is not None and session.audience.has(self._bridge) and len(session.audience) == 1:
            session.cancel()
            await session.queue.settled()  # its final updates and the cancelled idle state go out first
        with contextlib.suppress(SessionNotFoundError):  # closed already, as far as the client can tell
            await self.manager.close_session(session_id, client=self._bridge)
        return {}

    async def session_status(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        session_id = parse(wire.StatusParams, raw).session_id
        if await self.manager.status(session_id) == "saved":
            return render.session_status(None)
        session = self.manager.live(session_id)
        assert session is not None
        return render.session_status(state_update(session.audience.state))

    async def set_config_option(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        parse(wire.SetConfigOptionParams, raw)  # v2's typed value; v1's handler does the rest
        return await super().set_config_option(ctx, raw)

    # -- prompts --------------------------------------------------------------------------------------------------

    async def prompt(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        params = parse(wire.PromptParams, raw)
        session = await self._session(params.session_id)
        ticket = session.submit(prompt_to_display(params.prompt), origin=self._bridge)
        if not await _inserted(ticket, params.session_id):
            raise _cancelled(params.session_id, "the prompt was cancelled before it started")
        return {"messageId": ticket.message_id}

    async def cancel_tool_call(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        """``tool_call/cancel``: the call settles failed as cancelled (its ``tool_call_update`` says so)."""
        params = parse(wire.ToolCallCancelParams, raw)
        session = await self._session(params.session_id)
        if not session.wiring.cancel_call(params.tool_call_id):
            raise InvalidParamsError(
                f"toolCallId: no call {params.tool_call_id!r} of this session can be cancelled now (unknown or"
                " settled)",
                field="toolCallId",
            )
        return {}

    async def cancel_terminal(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        """``terminal/cancel``: the terminal's command is stopped (answered once accepted; its ``terminal_update``
        with ``exitStatus`` confirms it); its call goes on and settles with what the command printed."""
        params = parse(wire.TerminalCancelParams, raw)
        session = await self._session(params.session_id)
        if not session.wiring.stop_terminal(params.terminal_id):
            raise InvalidParamsError(
                f"terminalId: terminal {params.terminal_id!r} of this session cannot be cancelled (unknown, or its"
                " command has ended)",
                field="terminalId",
            )
        return {}


def _cancelled(session_id: str, why: str) -> ClientRequestError:
    return ClientRequestError(CANCELLED["code"], f"Request cancelled: {why}", {"sessionId": session_id})


async def _inserted(ticket: PromptTicket, session_id: str) -> bool:
    """Whether the prompt was inserted. A request withdrawn (``$/cancel_request``, the client leaving) takes back a
    prompt that has not started (answered -32800, the outcome an operation id keeps); one that has is still answered
    with its id once it is inserted (bounded)."""
    try:
        return await ticket.inserted()
    except anyio.get_cancelled_exc_class():
        if ticket.withdraw():
            raise _cancelled(session_id, "the prompt was withdrawn before it started") from None
        inserted = False
        with anyio.CancelScope(shield=True), anyio.move_on_after(INSERT_WAIT_S):
            inserted = await ticket.inserted()
        if not inserted:
            raise
        return True
