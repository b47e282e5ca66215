"""The tool framework (seam, context, policy) and the built-in tools."""

from ._disk import DISK, DiskFiles
from .base import Presentation, Tool, ToolOutcome, TypedTool, describe_validation_error
from .context import ApprovalRequest, EditorFiles, EditorTerminals, TerminalExit, ToolContext, Workspace
from .edit import EditFileTool
from .files import ReadFileTool, WriteFileTool
from .hard_blocks import hard_block_reason
from .listing import ListFilesTool
from .plan import UpdatePlanTool
from .policy import Decision, Verdict, decide, is_sensitive, rule_key
from .search import SearchFilesTool
from .terminal import TerminalTool

__all__ = [
    "DISK",
    "ApprovalRequest",
    "Decision",
    "DiskFiles",
    "EditFileTool",
    "EditorFiles",
    "EditorTerminals",
    "ListFilesTool",
    "Presentation",
    "ReadFileTool",
    "SearchFilesTool",
    "TerminalExit",
    "TerminalTool",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "TypedTool",
    "UpdatePlanTool",
    "Verdict",
    "Workspace",
    "WriteFileTool",
    "builtin_tools",
    "decide",
    "describe_validation_error",
    "hard_block_reason",
    "is_sensitive",
    "rule_key",
]


def builtin_tools() -> list[Tool]:
    """The built-in tools in their fixed order (the order is part of the byte-stable tool surface)."""
    return [
        ReadFileTool(),
        WriteFileTool(),
        EditFileTool(),
        ListFilesTool(),
        SearchFilesTool(),
        TerminalTool(),
        UpdatePlanTool(),
    ]
