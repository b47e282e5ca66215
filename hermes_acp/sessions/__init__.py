"""Session lifecycle and concurrency: the manager, live sessions, their owner tasks and crash recovery."""

from .manager import SessionManager, normalise_cwd
from .ports import ClientBridge
from .session import Session, SessionServices
from .tool_surface import derive_tool_surface

__all__ = [
    "ClientBridge",
    "Session",
    "SessionManager",
    "SessionServices",
    "derive_tool_surface",
    "normalise_cwd",
]
