"""The tool surface of a session, derived from its state before every model request (docs/architecture.md §4.6).

Built-in tools allowed by the mode come first, in their fixed order, then ``ask_user`` when the editor can ask the
user questions, then the session's MCP tools sorted by name (``read_only`` mode keeps only those with
``readOnlyHint``), then ``computer_use`` when a driver is available.
Nothing is remembered between requests, so a model or mode switch cannot lose a tool; and the same state gives
byte-identical schemas (prompt caches depend on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hermes_acp.tools.base import AnyTool

if TYPE_CHECKING:
    from .session import Session

__all__ = ["derive_tool_surface"]


def derive_tool_surface(session: Session) -> Sequence[AnyTool]:
    wiring = session.wiring
    mode = session.mode
    asking = wiring.ask_user(session.elicitor)
    tools = [
        tool for tool in (*wiring.builtin_tools, *asking, *session.mcp.tools()) if mode != "read_only" or tool.read_only
    ]
    if wiring.computer_use.available:
        tools.append(wiring.computer_use.tool)  # in read_only too: observation is allowed, the policy denies input
    return tools
