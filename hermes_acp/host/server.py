"""``hermes-acp host``: the session host process — one per ``$HERMES_ACP_HOME``, owning the store and every live
session, serving every connection to them.

It takes the home's lock (``host.lock``: a second host for the same home exits at once), writes ``host.json`` (pid,
version), opens its doors and closes them again: ``host.sock`` in the private runtime directory
(``transports.paths``: refused when it is a link, another user's or not ``0700``; ``transports.unix`` takes a front
door's connection or a control request on it), and, when ``[host] listen`` names any, the remote doors
(``transports.remote``). Each door hands the connections it makes to the app (``App.serve``). The control requests
are answered here: ``status`` (pid, version, home, connections, live sessions and which run a turn, the remote
doors, the idle exit in effect), ``stop`` (answered, then the host shuts down as on SIGTERM) or ``token`` (the
remote doors close and open again, reading the token file anew: ``hermes-acp host token --rotate`` sends it, and it
is answered once the new token is the one checked; connections made with the old one are ended).

A connection that leaves is detached from its sessions and its turns go on (``[host] on_leave``); a question with
nobody attached waits for the next attach. The host exits after ``[host] idle_exit_s`` with no connection and no
running turn (unset: 15 minutes, or never for a host with a remote door: nothing remote can start it again), or on
SIGTERM/SIGINT/``stop``: turns are cancelled and settled in the log, child processes stopped. After a kill -9 the
next front door starts a new host, and sessions load from the log as after any crash (a call that was running is
"outcome unknown", never run again). Its logs go to ``$HERMES_ACP_HOME/logs/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskStatus

from hermes_acp.app import App, load_app_parts, open_app
from hermes_acp.platform import locks, signals
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.telemetry import get_logger
from hermes_acp.transports.paths import HostPaths, host_paths, private_dir, replace_file
from hermes_acp.transports.unix import UnixDoor
from hermes_acp.version import __version__

if TYPE_CHECKING:
    from hermes_acp.config import Settings
    from hermes_acp.protocol.connection import Serve
    from hermes_acp.transports.remote import RemoteDoors

__all__ = ["HostLock", "HostReady", "run_host", "serve_host"]

_log = get_logger("hermes_acp.host")
IDLE_POLL_S = 1.0
"""How often the idle timer looks (at most)."""
DOORS_CLOSE_S = 5.0
"""How long the remote doors' connections get to close before they are cancelled (the doors open again)."""
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


@dataclass(frozen=True)
class HostReady:
    """What ``hermes-acp host`` tells its user once it listens."""

    socket: str
    socket_note: str | None = None
    """Why the socket is not in the usual folder (``HostPaths.note``)."""
    doors: list[str] = field(default_factory=list)
    """The URL of each remote door that listens."""
    refused: list[str] = field(default_factory=list)
    """Each configured door that could not be opened, and why."""
    token_file: str | None = None
    """The file with the remote doors' bearer token, when any door is configured."""
    idle_exit_s: float | None = None
    """The idle exit in effect (0: never); None when another host already served the home."""


class HostLock:
    """The home's lock, held for the host's life (an advisory lock, ``platform.locks``: the kernel drops it when the
    host dies)."""

    def __init__(self, paths: HostPaths):
        self._paths = paths
        self._fd: int | None = None

    def acquire(self) -> bool:
        """True when this process now holds it; False when another host does."""
        fd = os.open(self._paths.lock, _LOCK_FLAGS, 0o600)
        if not locks.try_lock(fd):
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def run_host(env: Mapping[str, str] | None = None, *, ready: Callable[[HostReady], None] | None = None) -> int:
    """The ``hermes-acp host`` command: serve until idle, stopped or signalled; the exit status. ``ready`` is told
    where the host listens once it does."""
    env = dict(os.environ) if env is None else dict(env)
    return asyncio.run(serve_host(env, ready=ready))


async def serve_host(env: Mapping[str, str], *, ready: Callable[[HostReady], None] | None = None) -> int:
    paths = host_paths(env)
    try:
        private_dir(paths.directory)
    except OSError as exc:
        _log.error("the session host cannot use its folder", error=str(exc))
        return 1
    lock = HostLock(paths)
    if not lock.acquire():
        _log.info("a session host already serves this home", home=paths.home)
        if ready is not None:
            ready(HostReady(paths.socket, paths.note))  # the one that holds the lock listens there
        return 0
    try:
        settings, store, failure = await load_app_parts(env)
        if settings is None or store is None:
            _log.error("the session host cannot serve", error=str(failure))
            return 1
        app = App(settings, env, store, catalog=ModelCatalog.from_settings(settings, env), shared=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(paths.socket)  # a dead host's: we hold the lock, so nobody else listens there
        async with open_app(app), anyio.create_task_group() as group:
            process = _HostProcess(app, paths)
            server = await UnixDoor(app.serve, process.control, paths.home).open(paths.socket)
            if settings.host.listen:
                process.remote = _Remote(app.serve, app.services.env, settings)
                await group.start(process.remote.run, name="remote doors")
            _write_record(paths)
            if ready is not None:
                ready(process.ready())
            _log.info(
                "session host serving",
                version=__version__,
                home=str(settings.home),
                socket=paths.socket,
                socket_note=paths.note,
                idle_exit_s=settings.host.idle_exit,
            )
            try:
                await process.until_done(settings.host.idle_exit)
            finally:
                server.close()
                if process.remote is not None:
                    await process.remote.stop()
                process.close_all()
                group.cancel_scope.cancel()
        return 0
    finally:
        for path in (paths.record, paths.socket):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        lock.release()


class _HostProcess:
    """The control requests, the idle timer and the signals."""

    def __init__(self, app: App, paths: HostPaths):
        self._app = app
        self._paths = paths
        self._stop = anyio.Event()
        self._started = time.time()
        self.remote: _Remote | None = None

    async def control(self, command: str) -> dict[str, Any]:
        if command == "stop":
            self._stop.set()
            return {"ok": True, "stopping": True, "pid": os.getpid()}
        if command == "status":
            return {"ok": True, **self.status()}
        if command == "token":
            if self.remote is None:
                return {"ok": True, "listening": []}
            with anyio.move_on_after(DOORS_CLOSE_S * 2):
                await self.remote.reopen()
                return {"ok": True, "listening": self.remote.listening}
            return {"ok": False, "error": "the remote doors did not open again in time; see the host's log"}
        return {"ok": False, "error": f"unknown control request {command!r} (status, stop, token)"}

    def ready(self) -> HostReady:
        settings = self._app.settings
        remote = self.remote
        return HostReady(
            self._paths.socket,
            self._paths.note,
            doors=[_door_url(door) for door in remote.listening] if remote is not None else [],
            refused=list(remote.refused) if remote is not None else [],
            token_file=str(settings.host_token_file) if settings.host.listen else None,
            idle_exit_s=settings.host.idle_exit,
        )

    def status(self) -> dict[str, Any]:
        app = self._app
        sessions = [
            {"sessionId": s.id, "cwd": s.options.record.cwd, "running": s.queue.working, "attached": len(s.audience)}
            for s in app.manager.sessions
        ]
        return {
            "pid": os.getpid(),
            "version": __version__,
            "home": str(app.settings.home),
            "socket": self._paths.socket,
            "socket_note": self._paths.note,
            "since": self._started,
            "connections": len(app.connections),
            "sessions": sessions,
            "listening": self.remote.listening if self.remote is not None else [],
            "refused": self.remote.refused if self.remote is not None else [],
            "token_file": str(app.settings.host_token_file) if app.settings.host.listen else None,
            "idle_exit_s": app.settings.host.idle_exit,
        }

    async def until_done(self, idle_exit_s: float) -> None:
        """Until ``stop``, a termination signal, or ``idle_exit_s`` with no connection and no running turn."""
        stop = self._stop

        def on_signal(name: str) -> None:
            _log.info("the session host got a shutdown signal", signal=name)
            stop.set()

        undo = signals.install_shutdown(asyncio.get_running_loop(), on_signal)
        try:
            idle_since: float | None = None
            while not self._stop.is_set():
                idle = not self._app.connections and not self._app.working
                now = anyio.current_time()
                idle_since = (idle_since or now) if idle else None
                if idle_exit_s > 0 and idle_since is not None and now - idle_since >= idle_exit_s:
                    _log.info("the session host was idle; exiting", idle_s=idle_exit_s)
                    return
                wait = IDLE_POLL_S if idle_exit_s <= 0 else min(IDLE_POLL_S, max(idle_exit_s / 4, 0.01))
                with anyio.move_on_after(wait):
                    await self._stop.wait()
        finally:
            undo()

    def close_all(self) -> None:
        """Shutting down: every connection leaves, and its turns are cancelled with the sessions."""
        for connection in list(self._app.connections):
            connection.dispatcher.close_input()


class _Remote:
    """The remote doors, in a task group of their own so that they can close and open again: ``reopen`` (a rotated
    token) ends their connections, waits until their sockets are closed, and opens new doors, which read the token
    file anew."""

    def __init__(self, serve: Serve, env: Mapping[str, str], settings: Settings):
        self._serve = serve
        self._env = env
        self._settings = settings
        self._doors: RemoteDoors | None = None
        self._close = anyio.Event()
        self._opened = anyio.Event()

    @property
    def listening(self) -> list[str]:
        return list(self._doors.listening) if self._doors is not None else []

    @property
    def refused(self) -> list[str]:
        return list(self._doors.refused) if self._doors is not None else []

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        from hermes_acp.transports.remote import RemoteDoors

        started = False
        while True:
            async with anyio.create_task_group() as group:
                doors = RemoteDoors(self._serve, self._env, self._settings)
                await doors.start(group)
                self._doors = doors
                self._opened.set()
                if not started:
                    task_status.started()
                    started = True
                await self._close.wait()
                self._close = anyio.Event()
                await doors.stop()
                group.cancel_scope.deadline = anyio.current_time() + DOORS_CLOSE_S

    async def reopen(self) -> None:
        """Close the doors and open them again; returns once the new ones listen."""
        self._opened = anyio.Event()
        opened = self._opened
        self._close.set()
        await opened.wait()

    async def stop(self) -> None:
        if self._doors is not None:
            await self._doors.stop()


def _door_url(door: str) -> str:
    """Where a client reaches a ``[host] listen`` entry (its one endpoint is ``/acp``)."""
    return door.rstrip("/") + "/acp"


def _write_record(paths: HostPaths) -> None:
    record = {"pid": os.getpid(), "version": __version__, "socket": paths.socket, "started": time.time()}
    replace_file(paths.record, json.dumps(record).encode())
