"""``HermesAgent``: one handler per ACP method for one connection, and the route table that puts them on its
dispatcher.

Every connection has its own agent (its own ``initialize``, capabilities and environment, in its ``bridge``); all of
them share the host's ``SessionManager``. Handlers are thin: they read their params (``wire.parse``), call the
manager or the session (a ``LiveSession``), and build the JSON result (``session_view``). Errors propagate to the
dispatcher's single exception → wire boundary. A session is used through a connection attached to it (one that
created, loaded or resumed it); ``session/status`` answers for any (``open`` / ``saved``, no side effect) and
``session/list`` says in ``_meta`` which sessions are open and running.
Notifications a session sends outside a turn come from here: ``available_commands_update`` once the response that
opened the session is on the wire (``RequestContext.after_response``; JetBrains needs the session id first; it
waits for the session's first scan of its skills, which the response does not; then the session tells, in the
background, which of its MCP servers could not start), and
after a ``session/load`` the context meter as it stands (``usage_update``: a live turn sends one after every model
call, a replay needs only the last; it derives the tool surface, which a fresh process imports, so it goes after
the response), ``current_mode_update`` after a mode switch, ``config_option_update`` after any option changes (mode,
model, thinking effort; through ``session/set_config_option``, the legacy methods or a slash command). A session
sends ``available_commands_update`` itself when its prompt files change (through the client bridge).

A prompt handler calls ``LiveSession.prompt`` without awaiting anything first, so its turn is queued (and cancellable)
before the next frame — a ``session/cancel`` right behind it — is handled.
"""

from __future__ import annotations

import os
from typing import Any

import structlog

from hermes_acp.errors import (
    HermesError,
    InvalidParamsError,
    NoProviderError,
    ProviderAuthError,
    TurnFailedError,
)
from hermes_acp.jsonrpc.dispatcher import RequestContext, Route
from hermes_acp.mcp_client.specs import unreadable_entry
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.sessions import SessionManager, SessionServices
from hermes_acp.sessions.switches import SWITCHES
from hermes_acp.sessions.turn_imports import warm_up_turn_modules
from hermes_acp.sessions.views import LiveSession

from .client_bridge import AcpClientBridge
from .convert import cost_json, prompt_to_display, usage_json
from .initialize import ENV_METHOD_ID, FORM_SETUP_METHOD_ID, SETUP_METHOD_ID, key_variables
from .lifecycle_params import archive_filter, client_system_prompt
from .provider_routes import ProviderRoutes
from .rejoin import rejoin_point
from .reliable.meta import with_result_meta
from .session_view import (
    EFFORT_OPTION_ID,
    MODE_OPTION_ID,
    MODEL_OPTION_ID,
    rewind_result,
    session_meta,
)
from .setup_route import setup_in_editor
from .wire import (
    AuthenticateParams,
    ForkSessionParams,
    ListSessionsParams,
    LoadSessionParams,
    NewSessionParams,
    PromptParams,
    ResumeSessionParams,
    RewindParams,
    SessionIdParams,
    SetConfigOptionParams,
    SetModelParams,
    SetModeParams,
    SetTitleParams,
    SteeringParams,
    parse,
)

__all__ = ["REWIND_METHOD", "STEERING_METHOD", "HermesAgent"]

STEERING_METHOD = "_session/steering"
"""Add a message to the running turn (claude-agent-acp's and codex-acp's extension, in their shapes)."""
REWIND_METHOD = "_session/rewind"
"""Go back to just before a user message (docs/architecture.md §6.10)."""

_log = structlog.get_logger("hermes_acp.protocol")


class HermesAgent:
    def __init__(
        self, manager: SessionManager | None, bridge: AcpClientBridge, *, startup_error: HermesError | None = None
    ):
        self._manager = manager
        self._bridge = bridge
        self._startup_error = startup_error
        self._provider_routes = ProviderRoutes(self._services, self._announce_all)

    def routes(self) -> list[Route]:
        """Every method the agent answers (``initialize`` is answered before the server has loaded, elsewhere)."""
        return [
            Route("authenticate", self.authenticate),
            Route("logout", self.logout),
            Route("session/new", self.new_session),
            Route("session/load", self.load_session),
            Route("session/resume", self.resume_session),
            Route("session/fork", self.fork_session),
            Route("session/list", self.list_sessions),
            Route("session/status", self.session_status),
            Route("session/close", self.close_session),
            Route("session/delete", self.delete_session),
            Route("session/set_mode", self.set_mode),
            Route("session/set_config_option", self.set_config_option),
            Route("session/set_model", self.set_model),
            Route("session/set_title", self.set_title),
            Route("session/archive", self.archive_session),
            Route("session/unarchive", self.unarchive_session),
            Route("session/prompt", self.prompt, cancel=self._cancel_prompt),
            Route("session/cancel", self.cancel),
            Route("providers/list", self._provider_routes.list),
            Route("providers/set", self._provider_routes.set),
            Route("providers/disable", self._provider_routes.disable),
            Route(STEERING_METHOD, self.steer),
            Route(REWIND_METHOD, self.rewind),
        ]

    @property
    def manager(self) -> SessionManager:
        if self._startup_error is not None:
            raise self._startup_error
        assert self._manager is not None
        return self._manager

    async def _session(self, session_id: str) -> LiveSession:
        """A live session this connection is attached to (one it created, loaded or resumed); else the error that
        says why (``SessionManager.attached``)."""
        return await self.manager.attached(session_id, self._bridge)

    # -- auth -----------------------------------------------------------------------------------------------------

    async def authenticate(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        params = parse(AuthenticateParams, raw)
        if params.method_id not in (SETUP_METHOD_ID, ENV_METHOD_ID, FORM_SETUP_METHOD_ID):
            raise InvalidParamsError(f"unknown authentication method {params.method_id!r}", field="methodId")
        if self._startup_error is not None:
            raise ProviderAuthError(f"the configuration has errors: {self._startup_error}")
        services = self._bridge.services
        if params.method_id == FORM_SETUP_METHOD_ID:
            await setup_in_editor(ctx, self._bridge, services.providers, services.catalog)
            await self._announce_all(services.catalog)
            return {}
        if not any(m.usable for m in services.catalog.models):
            variables = ", ".join(sorted(set(key_variables(services.env).values())))
            raise NoProviderError(
                "no usable model provider yet: run `hermes-acp --setup`, or set one of "
                f"{variables} in the agent's environment, then restart the agent"
            )
        return {}

    async def logout(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        """Nothing to forget: ``authenticate`` only checks what the configuration and environment provide."""
        return {}

    # -- session lifecycle ----------------------------------------------------------------------------------------

    async def new_session(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        params = parse(NewSessionParams, raw)
        session = await self.manager.new_session(
            params.cwd,
            params.additional_directories,
            _server_entries(params.mcp_servers),
            client=self._bridge,
            system_prompt=client_system_prompt(params.system_prompt),
        )
        self._announce_commands(ctx, session)
        return {"sessionId": session.id, **self._view(session)}

    async def load_session(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        """``session/load``; with ``_meta.hermes.afterCursor``, only what came after that cursor (``rejoin``)."""
        params = parse(LoadSessionParams, raw)
        after, recovery = await rejoin_point(self.manager, self._bridge.epoch, params.session_id, raw)
        session = await self.manager.open_existing(
            params.session_id,
            params.cwd,
            params.additional_directories,
            _server_entries(params.mcp_servers),
            replay=True,
            client=self._bridge,
            system_prompt=client_system_prompt(params.system_prompt),
            after=after,
        )
        self._announce_commands(ctx, session)
        self._announce_usage(ctx, session)
        result = self._view(session)
        return with_result_meta(result, recovery=recovery) if recovery is not None else result

    async def resume_session(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        params = parse(ResumeSessionParams, raw)
        session = await self.manager.open_existing(
            params.session_id,
            params.cwd,
            params.additional_directories,
            _server_entries(params.mcp_servers or []),
            replay=False,
            client=self._bridge,
            system_prompt=client_system_prompt(params.system_prompt),
        )
        self._announce_commands(ctx, session)
        return self._view(session)

    async def fork_session(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        """``session/fork``; ``_meta.messageId`` forks at that message (inclusive) instead of the end."""
        params = parse(ForkSessionParams, raw)
        message_id = params.meta.message_id if params.meta is not None else None
        session = await self.manager.fork_session(
            params.session_id,
            params.cwd,
            params.additional_directories,
            _server_entries(params.mcp_servers or []),
            client=self._bridge,
            system_prompt=client_system_prompt(params.system_prompt),
            message_id=message_id,
        )
        self._announce_commands(ctx, session)
        hermes: dict[str, Any] = {"parentSessionId": params.session_id, "forkedAt": session.options.record.created_at}
        if message_id is not None:
            hermes["messageId"] = message_id
        meta = {"hermes": hermes}
        return {"sessionId": session.id, "_meta": meta, **self._view(session)}

    async def list_sessions(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        params = parse(ListSessionsParams, raw)
        page = await self.manager.list_sessions(
            params.cwd, params.cursor, archive_filter(params.archived), subagents=params.subagents
        )
        sessions = []
        for record in page.sessions:
            info: dict[str, Any] = {
                "sessionId": record.id,
                "cwd": record.cwd,
                "title": record.title or f"New session in {os.path.basename(record.cwd) or record.cwd}",
                "updatedAt": record.updated_at,
                "archived": record.archived,
            }
            extra = record.meta.get("additional_directories")
            if extra:
                info["additionalDirectories"] = extra
            hermes = session_meta(record, self.manager.live(record.id))
            if hermes:
                info["_meta"] = {"hermes": hermes}
            sessions.append(info)
        result: dict[str, Any] = {"sessions": sessions}
        if page.next_cursor is not None:
            result["nextCursor"] = page.next_cursor
        return result

    async def session_status(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        """``session/status`` (unstable): ``open`` (in memory, for any connection) or ``saved``; no side effect."""
        return {"status": await self.manager.status(parse(SessionIdParams, raw).session_id)}

    async def close_session(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        """This connection leaves the session; the session closes when no other connection is attached."""
        await self.manager.close_session(parse(SessionIdParams, raw).session_id, client=self._bridge)
        return {}

    async def delete_session(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        """``session/delete``: archived, hidden from ``session/list``; the history stays loadable by id."""
        await self.manager.delete_session(parse(SessionIdParams, raw).session_id)
        return {}

    # -- metadata -----------------------------------------------------------------------------------------------

    async def set_title(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        """``session/set_title`` (unstable): any session ``session/list`` could return, open or not."""
        params = parse(SetTitleParams, raw)
        return {"title": await self.manager.set_title(params.session_id, params.title)}

    async def archive_session(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        """``session/archive`` (unstable): an open session's work is cancelled and it is closed first."""
        await self.manager.archive(parse(SessionIdParams, raw).session_id)
        return {}

    async def unarchive_session(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        await self.manager.unarchive(parse(SessionIdParams, raw).session_id)
        return {}

    # -- conversation control -------------------------------------------------------------------------------

    async def steer(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        """``_session/steering``: ``injected`` (the running turn applies it at its next safe point),
        ``startedNewTurn``, or ``{"outcome": "promptRequired", "reason": "noRunningTurn"}`` when the client asked
        to get it back (``_meta.steering.idleBehavior``) and no turn runs."""
        params = parse(SteeringParams, raw)
        session = await self._session(params.session_id)
        outcome = await session.steer(
            prompt_to_display(params.prompt),
            origin=self._bridge,
            idle="promptRequired" if params.prompt_required else "startNewTurn",
        )
        if outcome == "promptRequired":
            return {"outcome": outcome, "reason": "noRunningTurn"}
        return {"outcome": outcome}

    async def rewind(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        """``_session/rewind``: the session goes back to just before the user message ``messageId``."""
        params = parse(RewindParams, raw)
        session = await self._session(params.session_id)
        rewound = await session.rewind(params.message_id)
        return rewind_result(rewound)

    # -- modes and models -----------------------------------------------------------------------------------------

    async def set_mode(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        params = parse(SetModeParams, raw)
        session = await self._session(params.session_id)
        await session.options.set_mode(params.mode_id)
        await self._announce_config(session, mode_changed=True)
        return {}

    async def set_config_option(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        params = parse(SetConfigOptionParams, raw)
        session = await self._session(params.session_id)
        offered = [str(option.get("configId", option.get("id"))) for option in self._options(session)]  # v2's, v1's
        if params.config_id not in offered:
            raise InvalidParamsError(
                f"configId: unknown option {params.config_id!r}; this session's options: {', '.join(offered)}",
                field="configId",
            )
        if any(switch.id == params.config_id for switch in SWITCHES):
            if not isinstance(params.value, bool):
                raise InvalidParamsError(f"value: option {params.config_id!r} takes true or false", field="value")
            await session.options.set_switch(params.config_id, params.value)
            await self._announce_config(session, mode_changed=False)
            return {"configOptions": self._options(session)}
        if not isinstance(params.value, str):
            raise InvalidParamsError(f"value: option {params.config_id!r} takes a string value", field="value")
        if params.config_id == MODE_OPTION_ID:
            await session.options.set_mode(params.value)
        elif params.config_id == MODEL_OPTION_ID:
            await session.options.set_model(params.value)
        else:
            assert params.config_id == EFFORT_OPTION_ID
            await session.options.set_effort(params.value)
        await self._announce_config(session, mode_changed=params.config_id == MODE_OPTION_ID)
        return {"configOptions": self._options(session)}

    async def set_model(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        """The legacy ``session/set_model`` (removed from the schema; JetBrains and older Zed still send it)."""
        params = parse(SetModelParams, raw)
        session = await self._session(params.session_id)
        await session.options.set_model(params.model_id)
        await self._announce_config(session, mode_changed=False)
        return {}

    # -- prompts --------------------------------------------------------------------------------------------------

    async def prompt(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        params = parse(PromptParams, raw)
        session = await self._session(params.session_id)
        result = await session.prompt(prompt_to_display(params.prompt), origin=self._bridge)
        if result.failure is not None and result.failure.is_error:  # the notice is in the transcript already
            raise TurnFailedError(result.failure)
        usage = result.usage
        answer: dict[str, Any] = {"stopReason": result.stop_reason}
        hermes: dict[str, Any] = {}
        if result.user_message_id is not None:  # what _session/rewind and a fork at a message name
            hermes["userMessageId"] = result.user_message_id
        if result.failure is not None:  # a limit (a budget, max_turn_requests): which one
            hermes["limit"] = result.failure.to_json()
        if result.cost is not None:
            hermes["cost"] = cost_json(result.cost)
        if hermes:
            answer["_meta"] = {"hermes": hermes}
        if usage is None:  # no model was asked (a slash command the session answered, or cancelled while queued)
            return answer
        return {**answer, "usage": usage_json(usage)}

    def _cancel_prompt(self, raw: Any) -> None:
        """``$/cancel_request`` for a prompt in flight (or the client leaving): cancel it like ``session/cancel``."""
        session_id = raw.get("sessionId") if isinstance(raw, dict) else None
        session = self.manager.live(session_id) if isinstance(session_id, str) and self._manager else None
        if session is not None:
            session.cancel()

    async def cancel(self, ctx: RequestContext, raw: Any) -> None:
        """``session/cancel``: a session's turn and everything queued, its subagents' work too; a subagent's id
        (which ``subagent_update`` advertises as cancellable) stops that child only."""
        session = self.manager.live(parse(SessionIdParams, raw).session_id)
        if session is None:
            _log.info("cancel for a session that is not open")
            return
        session.cancel()

    # -- notifications outside turns ----------------------------------------------------------------------------

    def _view(self, session: LiveSession) -> dict[str, Any]:
        return self._bridge.view(session.options)

    def _options(self, session: LiveSession) -> list[dict[str, Any]]:
        return self._bridge.options(session.options)

    def _announce_commands(self, ctx: RequestContext, session: LiveSession) -> None:
        async def send() -> None:  # the first listing has the skills (the scan is off the response's path)
            await self._bridge.commands_changed(session.id, await session.commands.listing())
            session.runtime.submit(session.notices.report_servers, "report MCP servers")

        ctx.after_response(send)

    def _announce_usage(self, ctx: RequestContext, session: LiveSession) -> None:
        async def send() -> None:
            await warm_up_turn_modules()  # off the event loop: a request right behind the load need not wait
            meter = session.wiring.usage()
            if meter is not None:
                await self._bridge.sink(session.id).emit_live(meter)

        ctx.after_response(send)

    def _services(self) -> SessionServices:
        """This connection's services (its environment's catalog and providers); the startup error if none."""
        if self._startup_error is not None:
            raise self._startup_error
        return self._bridge.services

    async def _announce_all(self, catalog: ModelCatalog) -> None:
        """``catalog``'s models changed (setup, ``providers/*``): every open session using it gets its options."""
        for session in self.manager.sessions:
            if session.options.catalog is catalog:
                await self._announce_config(session, mode_changed=False)

    async def _announce_config(self, session: LiveSession, *, mode_changed: bool) -> None:
        """Every attached connection is told, each as it can show the options (``AcpClientBridge.config_changed``)."""
        await session.audience.config_changed(session.options, mode_changed=mode_changed)


def _server_entries(raw: list[Any]) -> list[dict[str, object]]:
    """The editor's ``mcpServers`` entries for the MCP client, which reads each one (or reports it as not started);
    an entry that is not even an object stands as one it cannot read, in its place."""
    return [entry if isinstance(entry, dict) else unreadable_entry(None, "the entry is not an object") for entry in raw]
