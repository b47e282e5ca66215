"""The composition root: the ``App`` that owns the store, the ``SessionManager`` and every live session, and serves
connections to them.

``App`` builds the manager itself, attaches it to its root task group (in which every session's owner task and
turns live), gives each connection the services of the environment it brought (``services_for``: settings, model
catalog and providers from that environment, so one client's keys never serve another's sessions) and serves the
connection until its client has gone (``serve``). It holds the one server ``epoch`` its connections' delivery
cursors are made with (minted when it starts: a restarted host has another) and the one ``ledger`` of operations
applied once (``protocol.reliable``): every connection to a host shares them, so a client that reconnects to the
same host rejoins by cursor and resends by operation id. On the way out it closes every session (turns settled, MCP
servers, drivers and commands stopped), then the providers, then the store: shielded, each step bounded, so a
provider's client or a store that hangs on close cannot hold the process (``close_timeout_s``).

``run_connection`` is inline mode, what ``transports.stdio`` runs once this module has loaded (in a worker thread,
while ``initialize`` is already answered): an app with one connection, the process's stdio, and the client leaving
ends it within two seconds. The session host process (``hermes_acp.host``) keeps one ``App`` for many connections,
which its doors (``transports``) hand to ``App.serve``.
A configuration or store that cannot be used still serves ``initialize`` and answers every session request with
the reason.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import anyio

from hermes_acp.config import Settings, load_settings
from hermes_acp.errors import ConfigError, HermesError, StorageError
from hermes_acp.home import make_private
from hermes_acp.protocol.connection import Connection
from hermes_acp.protocol.reliable.epoch import Epoch
from hermes_acp.protocol.reliable.operations import OperationLedger
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.sessions import SessionManager, SessionServices, derive_tool_surface
from hermes_acp.storage.base import SessionStore
from hermes_acp.storage.sqlite import SqliteSessionStore
from hermes_acp.telemetry import configure_logging, get_logger, register_secret
from hermes_acp.version import __version__

if TYPE_CHECKING:
    from pathlib import Path

    from hermes_acp.sessions.tool_surface import SurfaceView
    from hermes_acp.tools.base import AnyTool

__all__ = ["CLOSE_TIMEOUT_S", "SHUTDOWN_TIMEOUT_S", "App", "load_app_parts", "open_app", "run_connection", "serve_app"]

SHUTDOWN_TIMEOUT_S = 1.5
"""Bound on closing every session once the client has gone (turns are already cancelled by then)."""
CLOSE_TIMEOUT_S = 2.0
"""Bound on closing the providers, and then on closing the store, once the sessions are closed. (A close that runs
in a worker thread, as SQLite's, ends when the thread does: cancelling cannot stop it halfway.)"""
MAX_ENVIRONMENTS = 64
"""Distinct client environments whose services are kept (an app serving more builds them again)."""
ToolSurface = Callable[["SurfaceView"], Sequence["AnyTool"]]


class App:
    """The store, the session manager and the services of each client environment; see the module docstring."""

    def __init__(
        self,
        settings: Settings,
        env: Mapping[str, str],
        store: SessionStore,
        *,
        catalog: ModelCatalog | None = None,
        providers: ProviderRegistry | None = None,
        tool_surface: ToolSurface | None = None,
        shared: bool = False,
        close_timeout_s: float = CLOSE_TIMEOUT_S,
        epoch: Epoch | None = None,
    ):
        self.settings = settings
        self.epoch = epoch or Epoch.mint()
        """The server epoch (``serverEpoch``) of every connection's cursors."""
        self.ledger = OperationLedger()
        """The operations applied once, for every connection."""
        self.store = store
        self.shared = shared
        """A session host: connections come and go, turns outlive them, questions wait for an attach."""
        self._tool_surface = tool_surface or derive_tool_surface
        self._close_timeout_s = close_timeout_s
        own = SessionServices(
            settings=settings,
            store=store,
            catalog=catalog or ModelCatalog.from_settings(settings, env),
            providers=providers or ProviderRegistry(settings, env),
            tool_surface=self._tool_surface,
            env=dict(env),
        )
        self._services: dict[tuple[tuple[str, str], ...], SessionServices] = {_key(env): own}
        self._retire: list[SessionServices] = []
        """Services pushed out of the cache: their providers are closed with the app's."""
        self.services = own
        """The app's own services (its environment), for connections that bring none (a remote client)."""
        self.manager = SessionManager(
            own, wait_for_attach=shared, unattended_wait_s=settings.host.unattended_wait_s if shared else 0.0
        )
        self.connections: set[Connection] = set()

    def services_for(self, env: Mapping[str, str]) -> SessionServices:
        """The services of a client environment: its settings (this app's home), models and provider keys, and
        the environment its sessions' commands start from."""
        key = _key(env)
        services = self._services.get(key)
        if services is None:
            scoped = {**env, "HERMES_ACP_HOME": str(self.settings.home)}
            settings = load_settings(scoped, home=self.settings.home)
            services = SessionServices(
                settings=settings,
                store=self.store,
                catalog=ModelCatalog.from_settings(settings, scoped),
                providers=ProviderRegistry(settings, scoped),
                tool_surface=self._tool_surface,
                env=dict(env),
            )
            for provider in settings.providers.values():
                if provider.api_key_env:
                    register_secret(env.get(provider.api_key_env))
            if len(self._services) >= MAX_ENVIRONMENTS:
                self._retire.append(self._services.pop(next(iter(self._services))))
            self._services[key] = services
        return services

    async def serve(self, connection: Connection) -> None:
        """Serve one connection until its client has gone; in a session host, its sessions then go on without
        it (``[host] on_leave``)."""
        try:
            services = self.services_for(connection.env)
        except ConfigError as exc:
            connection.install(None, None, startup_error=exc)
            await connection.finished()
            return
        bridge = connection.install(self.manager, services, epoch=self.epoch, ledger=self.ledger)
        self.connections.add(connection)
        try:
            await connection.finished()
        finally:
            self.connections.discard(connection)
            if self.shared:
                with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_TIMEOUT_S):
                    cancel = self.settings.host.on_leave == "cancel"
                    await self.manager.detach_everywhere(bridge, cancel_turns=cancel)

    @property
    def working(self) -> bool:
        """A prompt runs or waits in one of the live sessions."""
        return any(session.queue.working for session in self.manager.sessions)

    async def _close(self) -> None:
        """The sessions, then the providers, then the store: shielded, each step bounded."""
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(SHUTDOWN_TIMEOUT_S):
                await self.manager.aclose()
            with anyio.move_on_after(self._close_timeout_s) as providers:
                for services in [*self._services.values(), *self._retire]:
                    await services.providers.aclose()
            with anyio.move_on_after(self._close_timeout_s) as store:
                await self.store.aclose()
        for what, scope in (("the providers", providers), ("the store", store)):
            if scope.cancelled_caught:
                get_logger("hermes_acp").warning(
                    "closing took longer than its bound; left as it was", what=what, bound_s=self._close_timeout_s
                )


def _key(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(env.items()))


@contextlib.asynccontextmanager
async def open_app(app: App) -> AsyncIterator[App]:
    """Run ``app``: its manager attached to a root task group; on the way out every session, the providers and
    the store are closed (shielded, bounded)."""
    try:
        async with anyio.create_task_group() as task_group:
            app.manager.attach(task_group)
            try:
                yield app
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_TIMEOUT_S):
                    await app.manager.aclose()
                task_group.cancel_scope.cancel()
    finally:
        await app._close()


async def load_app_parts(env: Mapping[str, str]) -> tuple[Settings | None, SessionStore | None, HermesError | None]:
    """The settings and the opened store, or what prevents them; logging configured either way. The home is made
    private first (``home.make_private``: a home left readable by others is tightened at every start)."""
    settings: Settings | None = None
    store: SessionStore | None = None
    failure: HermesError | None = None
    tightened: list[tuple[Path, int]] = []
    try:
        settings = load_settings(env)
        tightened = await anyio.to_thread.run_sync(make_private, settings.home)
        store = await SqliteSessionStore.open(settings.state_db)
    except (ConfigError, StorageError) as exc:
        failure = exc
    configure_logging(
        settings.logs_dir if settings else None,
        settings.logging.level if settings else "info",
        stderr_level=_stderr_level(settings, env),
    )
    if tightened:
        get_logger("hermes_acp").info(
            "made the home private: others could read these",
            paths=[f"{path} ({mode:o} -> {mode & ~0o077:o})" for path, mode in tightened],
        )
    return settings, store, failure


async def run_connection(connection: Connection) -> None:
    """Inline mode: one app for the process's one connection (stdio); the client leaving ends it."""
    env = connection.env
    settings, store, failure = await load_app_parts(env)
    log = get_logger("hermes_acp")
    if settings is None or store is None:
        log.error("hermes-acp cannot serve sessions", error=str(failure))
        connection.install(None, None, startup_error=failure)
        await connection.finished()
        return
    try:
        catalog = ModelCatalog.from_settings(settings, env)
    except ConfigError as exc:
        await store.aclose()
        connection.install(None, None, startup_error=exc)
        await connection.finished()
        return
    log.info(
        "hermes-acp serving",
        version=__version__,
        home=str(settings.home),
        config=str(settings.config_file),
        transport=connection.name,
    )
    for provider in settings.providers.values():
        if provider.api_key_env:
            register_secret(env.get(provider.api_key_env))
    await serve_app(
        connection,
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
    connection: Connection,
    *,
    settings: Settings,
    env: Mapping[str, str],
    catalog: ModelCatalog,
    providers: ProviderRegistry,
    store: SessionStore,
    tool_surface: ToolSurface | None = None,
) -> None:
    """Serve one client with these parts until it has gone; then close sessions, providers and the store."""
    app = App(
        settings,
        env,
        store,
        catalog=catalog,
        providers=providers,
        tool_surface=tool_surface,
        epoch=connection.handshake.epoch,  # what its initialize, answered while the server loaded, told the client
    )
    async with open_app(app):
        await app.serve(connection)
