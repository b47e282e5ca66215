"""``HermesAgent``: the ACP agent, implementing ``acp.interfaces.Agent`` by signature.

Handlers are thin: they translate wire shapes, call the ``SessionManager`` / ``Session``, and build responses. Errors
propagate to the ``ErrorBoundary`` installed in ``on_connect`` (the single error→wire boundary), which also carries
the two routes the SDK does not have: ``session/set_model`` (JetBrains, older Zed) and ``session/delete``.
Notifications a session emits outside a turn (mode, config options, commands) are sent from here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from acp import schema
from acp.agent.connection import AgentSideConnection
from acp.interfaces import Client
from acp.router import MessageRouter, Route
from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.config import Settings
from hermes_acp.errors import HermesError, InvalidParamsError, NoProviderError, ProviderAuthError, SessionError
from hermes_acp.mcp_client.specs import unreadable_entry
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.sessions import Session, SessionManager, SessionServices, derive_tool_surface
from hermes_acp.sessions.commands import parse_command
from hermes_acp.storage.base import SessionStore
from hermes_acp.tools.base import Tool

from .boundary import ErrorBoundary, after_response
from .client_bridge import AcpClientBridge
from .convert import PromptBlock, prompt_to_display
from .early import EarlySession
from .initialize import SETUP_METHOD_ID, initialize_result
from .mcp_entries import SKIPPED_SERVERS_META
from .session_view import MODE_OPTION_ID, MODEL_OPTION_ID, available_commands
from .views import (
    ForkSessionResponseWithModels,
    LoadSessionResponseWithModels,
    NewSessionResponseWithModels,
    ResumeSessionResponseWithModels,
    config_option_models,
    view_of,
)

__all__ = ["AgentParts", "HermesAgent"]

_log = structlog.get_logger("hermes_acp.protocol")
McpServer = schema.HttpMcpServer | schema.SseMcpServer | schema.AcpMcpServer | schema.McpServerStdio


@dataclass(frozen=True, kw_only=True)
class AgentParts:
    """What the composition root hands the agent: everything except the client connection."""

    settings: Settings
    env: dict[str, str]
    store: SessionStore
    catalog: ModelCatalog
    providers: ProviderRegistry
    attach: Callable[[SessionManager], None]
    """Attach the manager to the root task group."""
    tool_surface: Callable[[Session], Sequence[Tool]] | None = None
    """How a session's tools are derived (tests add their own tools here); None: ``derive_tool_surface``."""


class _SetModelParams(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    session_id: str = Field(alias="sessionId")
    model_id: str = Field(alias="modelId")


class _DeleteParams(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    session_id: str = Field(alias="sessionId")


class HermesAgent:
    def __init__(self, parts: AgentParts | None, *, startup_error: HermesError | None = None):
        self._parts = parts
        self._startup_error = startup_error
        self._manager: SessionManager | None = None
        self._bridge: AcpClientBridge | None = None
        self._unopened: dict[str, str] = {}
        """Sessions created early that ``adopt`` could not open, and why; ``session/load``/``resume`` retries."""

    # -- connection ---------------------------------------------------------------------------------------------

    def on_connect(self, conn: Client) -> None:
        if not isinstance(conn, AgentSideConnection):
            raise TypeError(f"HermesAgent needs an AgentSideConnection, got {type(conn).__name__}")
        router: MessageRouter = conn._conn._handler  # type: ignore[assignment]  # pinned SDK 0.12.1
        router.add_route(Route(method="session/set_model", func=self._set_model_route, kind="request"))
        router.add_route(Route(method="session/delete", func=self._delete_route, kind="request"))
        conn._conn._handler = ErrorBoundary(router)
        self._bridge = AcpClientBridge(conn)
        if self._parts is not None:
            services = SessionServices(
                settings=self._parts.settings,
                store=self._parts.store,
                catalog=self._parts.catalog,
                providers=self._parts.providers,
                client=self._bridge,
                tool_surface=self._parts.tool_surface or derive_tool_surface,
            )
            self._manager = SessionManager(services)
            self._parts.attach(self._manager)

    def client_initialized(self, params: dict[str, Any]) -> None:
        """The front door answered ``initialize``; keep what the client told us."""
        if self._bridge is not None:
            raw = params.get("clientCapabilities")
            try:
                self._bridge.capabilities = schema.ClientCapabilities.model_validate(raw or {})
            except ValueError:
                _log.warning("unreadable clientCapabilities; assuming none")

    async def adopt(self, sessions: list[EarlySession]) -> None:
        """Open the sessions the front door created before the SDK was up (no replay; MCP servers start). One that
        fails is remembered with its reason: requests for it get that reason, and ``session/load`` tries again."""
        for early in sessions:
            try:
                request = schema.NewSessionRequest.model_validate({"cwd": early.cwd, "mcpServers": early.mcp_servers})
                await self.manager.open_existing(
                    early.session_id, early.cwd, early.additional, _server_specs(request.mcp_servers, {}), replay=False
                )
            except Exception as exc:
                _log.error("could not open an early session", session_id=early.session_id, exc_info=exc)
                self._unopened[early.session_id] = str(exc) or type(exc).__name__

    def _session(self, session_id: str) -> Session:
        """The live session, or an error that says why an early one is not (rather than "not found")."""
        reason = self._unopened.get(session_id)
        if reason is not None:
            raise SessionError(
                f"session {session_id!r} was created at start-up but could not be opened: {reason};"
                " session/load retries"
            )
        return self.manager.get(session_id)

    @property
    def _catalog(self) -> ModelCatalog:
        return self.manager.services.catalog

    @property
    def manager(self) -> SessionManager:
        if self._startup_error is not None:
            raise self._startup_error
        if self._manager is None:
            raise RuntimeError("the agent is not connected")
        return self._manager

    # -- initialize / auth ----------------------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: schema.ClientCapabilities | None = None,
        client_info: schema.Implementation | None = None,
        **kwargs: Any,
    ) -> schema.InitializeResponse:
        params: dict[str, Any] = {"protocolVersion": protocol_version}
        if client_capabilities is not None:
            params["clientCapabilities"] = client_capabilities.model_dump(by_alias=True, exclude_none=True)
        self.client_initialized(params)
        return schema.InitializeResponse.model_validate(initialize_result(params))

    async def authenticate(self, method_id: str, **kwargs: Any) -> schema.AuthenticateResponse:
        env = self._parts.env if self._parts is not None else dict(os.environ)
        if method_id == SETUP_METHOD_ID:
            if self._startup_error is not None:
                raise ProviderAuthError(f"the configuration has errors: {self._startup_error}")
            catalog = self.manager.services.catalog
            if not any(m.usable for m in catalog.models):
                raise NoProviderError(
                    "no usable model provider yet: finish `hermes-acp --setup` (or set the provider's API key), then"
                    " restart the agent"
                )
            return schema.AuthenticateResponse()
        if method_id.startswith("env:"):
            provider_id = method_id.removeprefix("env:")
            usable = self._parts is not None and any(
                m.usable for m in self._parts.catalog.models if m.provider_id == provider_id
            )
            if usable or env.get(f"{provider_id.upper()}_API_KEY"):
                return schema.AuthenticateResponse()
            raise ProviderAuthError(
                f"provider {provider_id!r} has no API key in the agent's environment", provider=provider_id
            )
        raise InvalidParamsError(f"methodId: unknown authentication method {method_id!r}", field="methodId")

    # -- session lifecycle ----------------------------------------------------------------------------------------

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponseWithModels:
        session = await self.manager.new_session(cwd, additional_directories, _server_specs(mcp_servers, kwargs))
        self._announce_commands(session)
        return NewSessionResponseWithModels.model_validate({"sessionId": session.id, **view_of(session, self._catalog)})

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[McpServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponseWithModels:
        session = await self.manager.open_existing(
            session_id, cwd, additional_directories, _server_specs(mcp_servers, kwargs), replay=True
        )
        self._unopened.pop(session_id, None)
        self._announce_commands(session)
        return LoadSessionResponseWithModels.model_validate(view_of(session, self._catalog))

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponseWithModels:
        session = await self.manager.open_existing(
            session_id, cwd, additional_directories, _server_specs(mcp_servers, kwargs), replay=False
        )
        self._unopened.pop(session_id, None)
        self._announce_commands(session)
        return ResumeSessionResponseWithModels.model_validate(view_of(session, self._catalog))

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponseWithModels:
        session = await self.manager.fork_session(
            session_id, cwd, additional_directories, _server_specs(mcp_servers, kwargs)
        )
        self._announce_commands(session)
        meta = {"hermes": {"parentSessionId": session_id, "forkedAt": session.record.created_at}}
        return ForkSessionResponseWithModels.model_validate(
            {"sessionId": session.id, "_meta": meta, **view_of(session, self._catalog)}
        )

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> schema.ListSessionsResponse:
        page = await self.manager.list_sessions(cwd, cursor)
        return schema.ListSessionsResponse(
            sessions=[
                schema.SessionInfo(
                    session_id=record.id,
                    cwd=record.cwd,
                    title=record.title or f"New session in {os.path.basename(record.cwd) or record.cwd}",
                    updated_at=record.updated_at,
                    additional_directories=record.meta.get("additional_directories") or None,
                )
                for record in page.sessions
            ],
            next_cursor=page.next_cursor,
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> schema.CloseSessionResponse:
        await self.manager.close_session(session_id)
        self._unopened.pop(session_id, None)
        return schema.CloseSessionResponse()

    async def _delete_route(self, params: Any) -> dict[str, Any]:
        """``session/delete`` (stable since 2026-06; not routed by SDK 0.12.1)."""
        parsed = _DeleteParams.model_validate(params)
        await self.manager.delete_session(parsed.session_id)
        self._unopened.pop(parsed.session_id, None)
        return {}

    # -- modes and models -----------------------------------------------------------------------------------------

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> schema.SetSessionModeResponse:
        session = self._session(session_id)
        await session.set_mode(mode_id)
        await self._announce_config(session)
        return schema.SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> schema.SetSessionConfigOptionResponse:
        session = self._session(session_id)
        if config_id not in (MODE_OPTION_ID, MODEL_OPTION_ID):
            raise InvalidParamsError(
                f"configId: unknown option {config_id!r}; options: {MODE_OPTION_ID}, {MODEL_OPTION_ID}",
                field="configId",
            )
        if not isinstance(value, str):
            raise InvalidParamsError(f"value: option {config_id!r} takes a string value", field="value")
        if config_id == MODE_OPTION_ID:
            await session.set_mode(value)
        else:
            await session.set_model(value)
        await self._announce_config(session)
        return schema.SetSessionConfigOptionResponse(config_options=config_option_models(session, self._catalog))

    async def _set_model_route(self, params: Any) -> dict[str, Any]:
        """The legacy ``session/set_model`` (removed from the schema; JetBrains and older Zed still send it)."""
        parsed = _SetModelParams.model_validate(params)
        session = self._session(parsed.session_id)
        await session.set_model(parsed.model_id)
        await self._announce_config(session)
        return {}

    # -- prompts --------------------------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[PromptBlock], **kwargs: Any) -> schema.PromptResponse:
        session = self._session(session_id)
        display = prompt_to_display(prompt)
        command = parse_command(display)
        if command is not None:
            outcome = await session.run_command(*command, display)
            if outcome.mode_changed or outcome.model_changed:
                await self._announce_config(session)
            return schema.PromptResponse(stop_reason=outcome.stop_reason)
        result = await session.prompt(display)
        usage = result.usage
        return schema.PromptResponse(
            stop_reason=result.stop_reason,
            usage=schema.Usage(
                total_tokens=usage.input_tokens + usage.output_tokens,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                thought_tokens=usage.thought_tokens,
                cached_read_tokens=usage.cached_read_tokens,
                cached_write_tokens=usage.cache_write_tokens,
            ),
        )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.manager.live(session_id)
        if session is None:
            _log.info("cancel for a session that is not open", session_id=session_id)
            return
        session.cancel()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp.exceptions import RequestError

        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        _log.debug("extension notification ignored", method=method)

    # -- notifications outside turns ----------------------------------------------------------------------------

    def _announce_commands(self, session: Session) -> None:
        bridge = self._bridge
        if bridge is None:
            return
        update = schema.AvailableCommandsUpdate.model_validate(
            {"sessionUpdate": "available_commands_update", "availableCommands": available_commands()}
        )

        async def send() -> None:
            await bridge.send(session.id, update)

        after_response(send)

    async def _announce_config(self, session: Session) -> None:
        if self._bridge is None:
            return
        await self._bridge.send(
            session.id,
            schema.CurrentModeUpdate(session_update="current_mode_update", current_mode_id=session.mode),
        )
        await self._bridge.send(
            session.id,
            schema.ConfigOptionUpdate(
                session_update="config_option_update",
                config_options=config_option_models(session, self._catalog),
            ),
        )


def _server_specs(servers: list[McpServer] | None, meta: dict[str, Any]) -> list[dict[str, object]]:
    """The entries the SDK read, with the ones it skipped (``mcp_entries``, via ``_meta``) back in their places."""
    specs = [s.model_dump(mode="json", by_alias=True, exclude_none=True) for s in servers or []]
    skipped = meta.get(SKIPPED_SERVERS_META)
    for entry in skipped if isinstance(skipped, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("index"), int):
            name = entry.get("name")
            problem = unreadable_entry(name if isinstance(name, str) else None, str(entry.get("problem")))
            specs.insert(entry["index"], problem)
    return specs
