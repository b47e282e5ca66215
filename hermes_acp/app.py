"""The composition root: builds the store, the model catalog and providers, and serves one client connection.

``run_connection`` is what ``protocol.stdio`` runs once this module has loaded (in a worker thread, while
``initialize`` is already answered). It reads the configuration, opens the store, installs the agent's routes on
the dispatcher, and serves until the client has gone. ``serve_app`` owns the root task group in which every
session's owner task lives, and on the way out closes every session (turns settled, MCP servers, drivers and
commands stopped), the providers and the store, shielded and bounded so that the process exits within two seconds
of the client leaving. A configuration or store that cannot be used still serves ``initialize`` and answers every
session request with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import anyio

from hermes_acp.config import Settings, load_settings
from hermes_acp.errors import ConfigError, HermesError, StorageError
from hermes_acp.protocol.agent import AgentParts, HermesAgent
from hermes_acp.protocol.client_bridge import AcpClientBridge
from hermes_acp.protocol.dispatcher import Dispatcher
from hermes_acp.protocol.initialize import Handshake
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.storage.base import SessionStore
from hermes_acp.storage.sqlite import SqliteSessionStore
from hermes_acp.telemetry import configure_logging, get_logger, register_secret
from hermes_acp.version import __version__

if TYPE_CHECKING:
    from hermes_acp.sessions import Session, SessionManager
    from hermes_acp.tools.base import AnyTool

__all__ = ["SHUTDOWN_TIMEOUT_S", "run_connection", "serve_app"]

SHUTDOWN_TIMEOUT_S = 1.5
"""Bound on closing every session once the client has gone (turns are already cancelled by then)."""


async def run_connection(dispatcher: Dispatcher, handshake: Handshake, env: Mapping[str, str]) -> None:
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
    configure_logging(
        settings.logs_dir if settings else None,
        settings.logging.level if settings else "info",
        stderr_level=_stderr_level(settings, env),
    )
    log = get_logger("hermes_acp")
    bridge = AcpClientBridge(dispatcher, handshake)
    if settings is None or catalog is None or store is None:
        log.error("hermes-acp cannot serve sessions", error=str(failure))
        dispatcher.add_routes(HermesAgent(None, bridge, startup_error=failure).routes(), complete=True)
        await dispatcher.finished.wait()
        return
    log.info("hermes-acp serving", version=__version__, home=str(settings.home), config=str(settings.config_file))
    for provider in settings.providers.values():
        if provider.api_key_env:
            register_secret(env.get(provider.api_key_env))
    await serve_app(
        dispatcher,
        bridge,
        settings=settings,
        env=env,
        catalog=catalog,
        providers=ProviderRegistry(settings, env),
        store=store,
    )


def _stderr_level(settings: Settings | None, env: Mapping[str, str]) -> str:
    """``--verbose`` (``HERMES_ACP_VERBOSE``) shows everything on stderr; else ``[logging] stderr_level``."""
    if env.get("HERMES_ACP_VERBOSE"):
        return "debug"
    return settings.logging.stderr_level if settings else "warning"


async def serve_app(
    dispatcher: Dispatcher,
    bridge: AcpClientBridge,
    *,
    settings: Settings,
    env: Mapping[str, str],
    catalog: ModelCatalog,
    providers: ProviderRegistry,
    store: SessionStore,
    tool_surface: Callable[[Session], Sequence[AnyTool]] | None = None,
) -> None:
    """Serve one client with these parts until it has gone; then close sessions, providers and the store."""
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
            dispatcher.add_routes(HermesAgent(parts, bridge).routes(), complete=True)
            try:
                await dispatcher.finished.wait()
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_TIMEOUT_S):
                    for manager in managers:
                        await manager.aclose()
                task_group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await providers.aclose()
            await store.aclose()
