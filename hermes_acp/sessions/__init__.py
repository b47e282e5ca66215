"""Session lifecycle and concurrency: the manager, live sessions (seen as a ``LiveSession``: only the manager, which
builds them, names the ``Session`` class), their prompt queues, audiences, options and owner tasks.

The names below load on first use (PEP 562), so a module that needs one part (``sessions.records``) does not pull
in the turn loop, MCP and computer_use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .manager import SessionManager
    from .services import SessionServices
    from .tool_surface import derive_tool_surface
    from .views import ClientBridge, LiveSession

__all__ = [
    "ClientBridge",
    "LiveSession",
    "SessionManager",
    "SessionServices",
    "derive_tool_surface",
]

_HOMES = {
    "ClientBridge": ".views",
    "LiveSession": ".views",
    "SessionManager": ".manager",
    "SessionServices": ".services",
    "derive_tool_surface": ".tool_surface",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
