"""Signals and shutdown: which signals end the server, how a child's death by a signal is named, how a process is
told to stop or killed.

POSIX: SIGTERM, SIGINT and SIGHUP end the server (``install_shutdown`` through the event loop's signal handlers).
Windows has no SIGHUP and its event loops have no ``add_signal_handler``: Ctrl-C (SIGINT) and Ctrl-Break (SIGBREAK)
are caught with ``signal.signal`` and handed to the loop thread-safely; closing the console ends the process through
the same SIGBREAK the C runtime raises. Under an editor there is no console at all: stdin's end is how a Windows
server learns that its client left.

``signal_name`` names a child's exit by a signal (``-9`` → ``SIGKILL``); ``TERMINATE`` and ``KILL`` are the polite and
the hard signal a process (or process group, ``processes``) gets. Knows nothing about what is shut down.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable

__all__ = ["KILL", "SHUTDOWN_SIGNALS", "TERMINATE", "install_shutdown", "signal_name"]

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

        def restore() -> None:
            for number, old in previous.items():
                signal.signal(number, old)

        return restore
    else:
        for number in SHUTDOWN_SIGNALS:
            loop.add_signal_handler(number, on_stop, number.name)

        def remove() -> None:
            for number in SHUTDOWN_SIGNALS:
                loop.remove_signal_handler(number)

        return remove
