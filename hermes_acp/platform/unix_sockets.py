"""Unix-domain stream sockets, where this system has them: the session host listens on one, front doors and
``hermes-acp host status`` connect to it.

Linux and macOS have them. Windows' CPython has no ``AF_UNIX``, and a named pipe would need an access list and a
peer check of its own, so shared mode is refused there (``system.shared_mode_problem``); these functions raise
``OSError`` with that refusal if anything reaches them. How long a socket path may be is ``system``'s
(``max_socket_path_bytes``); who is at the other end is ``peers``'. Standard library only at import time (asyncio is
imported by the server side alone), so the front door may use it. Knows nothing about the host.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from .system import SHARED_MODE_REFUSAL

if TYPE_CHECKING:
    import asyncio

__all__ = ["start_server", "stream_socket"]


def stream_socket() -> socket.socket:
    """A new, unconnected Unix stream socket."""
    if sys.platform == "win32":
        raise OSError(SHARED_MODE_REFUSAL)
    else:
        return socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)


async def start_server(
    accept: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]], path: str, *, limit: int
) -> asyncio.Server:
    """Listen on the Unix socket ``path`` (asyncio's streams, lines of ``limit`` bytes); connections go to
    ``accept``."""
    if sys.platform == "win32":
        raise OSError(SHARED_MODE_REFUSAL)
    else:
        import asyncio

        return await asyncio.start_unix_server(accept, path=path, limit=limit)
