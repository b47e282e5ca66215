"""The tool framework (seam, context, policy) and the built-in tools."""

from .base import Presentation, Tool, ToolOutcome, TypedTool, describe_validation_error
from .context import ApprovalRequest, EditorFiles, EditorTerminals, TerminalExit, ToolContext, Workspace
from .plan import UpdatePlanTool
from .policy import Decision, Verdict, decide, is_sensitive, rule_key

__all__ = [
    "ApprovalRequest",
    "Decision",
    "EditorFiles",
    "EditorTerminals",
    "Presentation",
    "TerminalExit",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "TypedTool",
    "UpdatePlanTool",
    "Verdict",
    "Workspace",
    "builtin_tools",
    "decide",
    "describe_validation_error",
    "is_sensitive",
    "rule_key",
]


def builtin_tools() -> list[Tool]:
    """The built-in tools in their fixed order (the order is part of the byte-stable tool surface)."""
    return [UpdatePlanTool()]
