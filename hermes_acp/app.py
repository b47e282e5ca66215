"""The composition root: builds the store, the model catalog and providers, and serves one client connection.

``run_connection`` is what the front door runs once the heavy modules are loaded. It owns the root task group in
which every session's owner task lives, and on the way out closes every session (their MCP servers and drivers),
the providers and the store, shielded and bounded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import anyio

from hermes_acp.config import Settings, load_settings
from hermes_acp.errors import ConfigError, StorageError
from hermes_acp.protocol.agent import AgentParts
from hermes_acp.protocol.connection import serve_agent
from hermes_acp.protocol.stdio import FrontDoor
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.sessions import Session, SessionManager, derive_tool_surface
from hermes_acp.storage.base import SessionStore
from hermes_acp.storage.sqlite import SqliteSessionStore
from hermes_acp.telemetry import configure_logging, get_logger, register_secret
from hermes_acp.tools.base import Tool
from hermes_acp.version import __version__

__all__ = ["SHUTDOWN_TIMEOUT_S", "run_connection", "serve_app"]

SHUTDOWN_TIMEOUT_S = 10.0


async def run_connection(door: FrontDoor, env: Mapping[str, str]) -> None:
    try:
        settings = load_settings(env)
    except ConfigError as exc:
        configure_logging(None)
        get_logger("hermes_acp").error("configuration error", error=str(exc))
        await serve_agent(door, None, startup_error=exc)
        return
    configure_logging(settings.logs_dir, settings.logging.level)
    get_logger("hermes_acp").info(
        "hermes-acp serving", version=__version__, home=str(settings.home), config=str(settings.config_file)
    )
    for provider in settings.providers.values():
        if provider.api_key_env:
            register_secret(env.get(provider.api_key_env))
    try:
        catalog = ModelCatalog.from_settings(settings, env)
    except ConfigError as exc:
        get_logger("hermes_acp").error("configuration error", error=str(exc))
        await serve_agent(door, None, startup_error=exc)
        return
    try:
        store = await SqliteSessionStore.open(settings.state_db)
    except StorageError as exc:
        get_logger("hermes_acp").error("session store unavailable", error=str(exc))
        await serve_agent(door, None, startup_error=exc)
        return
    await serve_app(
        door, settings=settings, env=env, catalog=catalog, providers=ProviderRegistry(settings, env), store=store
    )


async def serve_app(
    door: FrontDoor,
    *,
    settings: Settings,
    env: Mapping[str, str],
    catalog: ModelCatalog,
    providers: ProviderRegistry,
    store: SessionStore,
    tool_surface: Callable[[Session], Sequence[Tool]] = derive_tool_surface,
) -> None:
    """Serve one client with these parts; closes sessions, providers and the store on the way out."""
    managers: list[SessionManager] = []
    try:
        async with anyio.create_task_group() as task_group:

            def attach(manager: SessionManager) -> None:
                manager.attach(task_group)
                managers.append(manager)

            parts = AgentParts(
                settings=settings,
                env=dict(env),
                store=store,
                catalog=catalog,
                providers=providers,
                attach=attach,
                tool_surface=tool_surface,
            )
            try:
                await serve_agent(door, parts)
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_TIMEOUT_S):
                    for manager in managers:
                        await manager.aclose()
                task_group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await providers.aclose()
            await store.aclose()
