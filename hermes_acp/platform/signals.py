"""Signals and shutdown: which signals end the server, how a child's death by a signal is named, how a process is
told to stop or killed.

POSIX: SIGTERM, SIGINT and SIGHUP end the server (``install_shutdown`` through the event loop's signal handlers).
Windows has no SIGHUP and its event loops have no ``add_signal_handler``: Ctrl-C (SIGINT) and Ctrl-Break (SIGBREAK)
are caught with ``signal.signal`` and handed to the loop thread-safely. Closing the console (and logging off, and
shutting down) is a console control event that Windows ends the process after as soon as its handler returns, so a
handler (``SetConsoleCtrlHandler``) hands it to the loop the same way and then waits, at most ``CLOSE_GRACE_S``
(Windows kills the process about 5 s after the close), until the shutdown is done: the uninstaller ``install_shutdown``
returns releases it. Under an editor there is no console at all: stdin's end is how a Windows server learns that
its client left.

``signal_name`` names a child's exit by a signal (``-9`` → ``SIGKILL``); ``TERMINATE`` and ``KILL`` are the polite and
the hard signal a process (or process group, ``processes``) gets. Knows nothing about what is shut down.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

__all__ = ["CLOSE_GRACE_S", "KILL", "SHUTDOWN_SIGNALS", "TERMINATE", "install_shutdown", "signal_name"]

CLOSE_GRACE_S = 4.5
"""How long a console close waits for the shutdown (Windows ends the process some 5 s after the close event)."""

if sys.platform == "win32":
    SHUTDOWN_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGBREAK)
    TERMINATE: int = signal.SIGTERM
    KILL: int = signal.SIGTERM  # os.kill with any other number calls TerminateProcess as well
else:
    SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    TERMINATE = signal.SIGTERM
    KILL = signal.SIGKILL


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9, ``signal 77`` for a number this system does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def install_shutdown(loop: asyncio.AbstractEventLoop, on_stop: Callable[[str], None]) -> Callable[[], None]:
    """Call ``on_stop(name)`` on the loop when a shutdown signal arrives; returns what undoes it. Call it from the
    loop's thread, after the loop runs (``asyncio.Runner`` installs its own SIGINT handler only while the default
    one is in place)."""
    if sys.platform == "win32":
        previous = {number: signal.getsignal(number) for number in SHUTDOWN_SIGNALS}

        def handler(number: int, _frame: object) -> None:
            loop.call_soon_threadsafe(on_stop, signal.Signals(number).name)

        for number in SHUTDOWN_SIGNALS:
            signal.signal(number, handler)
        finished = threading.Event()
        _console_close_handler(loop, on_stop, finished)

        def restore() -> None:
            for number, old in previous.items():
                signal.signal(number, old)
            finished.set()  # a console close waiting in its handler may now let Windows end the process

        return restore
    else:
        for number in SHUTDOWN_SIGNALS:
            loop.add_signal_handler(number, on_stop, number.name)

        def remove() -> None:
            for number in SHUTDOWN_SIGNALS:
                loop.remove_signal_handler(number)

        return remove


_console_handlers: list[Any] = []
"""The installed console control routines, kept for the process's life: Windows may call one at any time (after the
shutdown it finds ``finished`` set and returns at once)."""


def _console_close_handler(
    loop: asyncio.AbstractEventLoop, on_stop: Callable[[str], None], finished: threading.Event
) -> None:
    """Windows: hand a console close, logoff or shutdown event to the loop, then hold the process until ``finished``
    (at most ``CLOSE_GRACE_S``). Ctrl-C and Ctrl-Break pass on to the C runtime, which raises SIGINT and SIGBREAK."""
    if sys.platform == "win32":
        import ctypes
        from ctypes import wintypes

        events = {2: "CTRL_CLOSE_EVENT", 5: "CTRL_LOGOFF_EVENT", 6: "CTRL_SHUTDOWN_EVENT"}

        def routine(event: int) -> bool:
            name = events.get(event)
            if name is None:
                return False
            with contextlib.suppress(RuntimeError):  # the loop is closed: the shutdown is over
                loop.call_soon_threadsafe(on_stop, name)
            finished.wait(CLOSE_GRACE_S)
            return True

        callback = ctypes.WINFUNCTYPE(wintypes.BOOL, wintypes.DWORD)(routine)
        ctypes.windll.kernel32.SetConsoleCtrlHandler(callback, True)
        _console_handlers.append(callback)
    else:
        raise OSError("console control events are Windows'")
