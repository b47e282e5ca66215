"""The tool framework (seam, context, policy) and the built-in tools.

The built-in tools themselves (``files``, ``edit``, ``listing``, ``search``, ``terminal``, ``plan``) are imported by
``builtin_tools()`` on first use, not by this package: sessions need the seam to start, the tools only when the
first model request is built.
"""

from ._disk import DISK, DiskFiles
from .approval import Approval, FileSnapshot, Grant, PlannedChange
from .base import AnyTool, ParsedCall, Presentation, Tool, ToolOutcome, TypedTool, describe_validation_error, parse_call
from .context import ApprovalRequest, EditorFiles, EditorTerminals, TerminalExit, ToolContext, Workspace
from .policy import Decision, Verdict, decide, is_sensitive, rule_key

__all__ = [
    "DISK",
    "AnyTool",
    "Approval",
    "ApprovalRequest",
    "Decision",
    "DiskFiles",
    "EditorFiles",
    "EditorTerminals",
    "FileSnapshot",
    "Grant",
    "ParsedCall",
    "PlannedChange",
    "Presentation",
    "TerminalExit",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "TypedTool",
    "Verdict",
    "Workspace",
    "builtin_tools",
    "decide",
    "describe_validation_error",
    "is_sensitive",
    "parse_call",
    "rule_key",
]


def builtin_tools() -> list[AnyTool]:
    """The built-in tools in their fixed order (the order is part of the byte-stable tool surface)."""
    from .edit import EditFileTool
    from .files import ReadFileTool, WriteFileTool
    from .listing import ListFilesTool
    from .plan import UpdatePlanTool
    from .search import SearchFilesTool
    from .terminal import TerminalTool

    return [
        ReadFileTool(),
        WriteFileTool(),
        EditFileTool(),
        ListFilesTool(),
        SearchFilesTool(),
        TerminalTool(),
        UpdatePlanTool(),
    ]
