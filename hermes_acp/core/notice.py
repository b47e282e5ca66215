"""``Notice``: a warning for the user that is not part of the conversation.

An MCP server that did not start, a provider retrying or waiting out a rate limit, a screenshot that reaches the
model as text, a missing desktop driver. Shown as a live ACP ``notice`` where the client takes them (never stored,
never replayed), otherwise stored as a line of agent text. Plain data; nothing here knows how it is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Notice", "NoticeSeverity"]

NoticeSeverity = Literal["info", "warning", "error"]


@dataclass(frozen=True, slots=True)
class Notice:
    severity: NoticeSeverity
    title: str
    """Plain text that stands alone."""
    description: str | None = None

    def as_text(self) -> str:
        """The notice as a line of agent text, for clients that do not take notices."""
        marker = "⚠ " if self.severity != "info" else ""
        return f"{marker}{self.title}" + (f": {self.description}" if self.description else "")
