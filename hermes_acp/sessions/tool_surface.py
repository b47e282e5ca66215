"""The tool surface of a session, derived from its state before every model request (docs/architecture.md §4.6).

Built-in tools allowed by the mode come first, in their fixed order, then ``delegate`` while the session may start
subagents, then ``ask_user`` when the editor can ask the user questions, then the session's MCP tools sorted by name
(``read_only`` mode keeps only those with ``readOnlyHint``), then ``computer_use`` when a driver is available. A
subagent gets the same under its own mode (``explore``: ``read_only``), without ``ask_user``, with ``computer_use``
only in the ``general`` role, and no tools at all for the report it writes past its budget.
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
    link = session.link
    if link is not None and link.reporting:
        return []  # a subagent past its budget writes its report without tools
    mode = session.mode
    asking = wiring.ask_user(session.elicitor) if link is None else ()  # a subagent cannot ask the user
    offered = (*wiring.builtin_tools, *wiring.delegate(), *asking, *session.mcp.tools())
    tools = [tool for tool in offered if mode != "read_only" or tool.read_only]
    if wiring.computer_use.available and (link is None or link.role == "general"):
        tools.append(wiring.computer_use.tool)  # in read_only too: observation is allowed, the policy denies input
    return tools
