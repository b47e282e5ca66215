"""Session lifecycle and concurrency: the manager, live sessions, their owner tasks and crash recovery.

The names below load on first use (PEP 562), so a module that needs one part (``sessions.records``) does not pull
in the turn loop, MCP and computer_use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .manager import SessionManager
    from .ports import ClientBridge
    from .services import SessionServices
    from .session import Session
    from .tool_surface import derive_tool_surface

__all__ = [
    "ClientBridge",
    "Session",
    "SessionManager",
    "SessionServices",
    "derive_tool_surface",
]

_HOMES = {
    "ClientBridge": ".ports",
    "Session": ".session",
    "SessionManager": ".manager",
    "SessionServices": ".services",
    "derive_tool_surface": ".tool_surface",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
