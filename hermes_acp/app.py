"""The composition root: builds the store, the model catalog and providers, and serves one client connection.

``run_connection`` is what the front door runs. It starts light: with only the configuration, the store and the
catalog loaded, it lets the front door answer an early ``session/new`` (``protocol/early.py``) while the acp SDK and
the rest of the server load in a worker thread. Then ``serve_app`` owns the root task group in which every
session's owner task lives, and on the way out closes every session (their MCP servers and drivers), the
providers and the store, shielded and bounded. The heavy modules are imported inside the functions on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from hermes_acp.config import Settings, load_settings
from hermes_acp.errors import ConfigError, HermesError, StorageError
from hermes_acp.protocol.early import EarlySessions
from hermes_acp.protocol.stdio import FrontDoor
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.storage.base import SessionStore
from hermes_acp.storage.sqlite import SqliteSessionStore
from hermes_acp.version import __version__

if TYPE_CHECKING:
    from hermes_acp.providers.registry import ProviderRegistry
    from hermes_acp.sessions import Session
    from hermes_acp.tools.base import Tool

__all__ = ["SHUTDOWN_TIMEOUT_S", "load_server", "run_connection", "serve_app"]

SHUTDOWN_TIMEOUT_S = 10.0


def load_server() -> None:
    """Import the acp SDK (the fast way) and everything ``serve_app`` uses; runs in a worker thread."""
    from hermes_acp.protocol.sdk_import import import_sdk

    import_sdk("hermes_acp.protocol.connection", "hermes_acp.providers.registry", "hermes_acp.telemetry")


async def run_connection(door: FrontDoor, env: Mapping[str, str], *, load: Callable[[], None] = load_server) -> None:
    settings: Settings | None = None
    failure: HermesError | None = None
    catalog: ModelCatalog | None = None
    store: SessionStore | None = None
    try:
        settings = load_settings(env)
        catalog = ModelCatalog.from_settings(settings, env)
        store = await SqliteSessionStore.open(settings.state_db)
    except (ConfigError, StorageError) as exc:
        failure = exc
    if store is not None and catalog is not None:
        await door.open_early(EarlySessions(store, catalog))
    try:
        await anyio.to_thread.run_sync(load)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await door.close_early()
            if store is not None:
                await store.aclose()
        raise
    from hermes_acp.protocol.connection import serve_agent
    from hermes_acp.providers.registry import ProviderRegistry
    from hermes_acp.telemetry import configure_logging, get_logger, register_secret

    configure_logging(settings.logs_dir if settings else None, settings.logging.level if settings else "info")
    log = get_logger("hermes_acp")
    if settings is None or catalog is None or store is None:
        log.error("hermes-acp cannot serve sessions", error=str(failure))
        await serve_agent(door, None, startup_error=failure)
        return
    log.info("hermes-acp serving", version=__version__, home=str(settings.home), config=str(settings.config_file))
    for provider in settings.providers.values():
        if provider.api_key_env:
            register_secret(env.get(provider.api_key_env))
    await serve_app(
        door,
        settings=settings,
        env=env,
        catalog=catalog,
        providers=ProviderRegistry(settings, env),
        store=store,
    )


async def serve_app(
    door: FrontDoor,
    *,
    settings: Settings,
    env: Mapping[str, str],
    catalog: ModelCatalog,
    providers: ProviderRegistry,
    store: SessionStore,
    tool_surface: Callable[[Session], Sequence[Tool]] | None = None,
) -> None:
    """Serve one client with these parts; closes sessions, providers and the store on the way out."""
    from hermes_acp.protocol.agent import AgentParts
    from hermes_acp.protocol.connection import serve_agent
    from hermes_acp.sessions import SessionManager

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
