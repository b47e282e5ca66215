"""Neutral display content: what the editor is shown in a transcript (prompts, tool cards).

These mirror the concepts of ACP content (text, image, resource link, embedded resource, diff, terminal, and a
terminal the agent owns) without importing the SDK; ``hermes_acp.protocol.convert`` maps them to wire shapes. They
are stored in the session log, so a replay shows exactly what the live turn showed.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AgentTerminalBlock",
    "AudioBlock",
    "DiffBlock",
    "DisplayBlock",
    "ImageBlock",
    "Location",
    "ResourceBlock",
    "ResourceLinkBlock",
    "TerminalBlock",
    "TextBlock",
]


class _Block(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class TextBlock(_Block):
    kind: Literal["text"] = "text"
    text: str


class ImageBlock(_Block):
    kind: Literal["image"] = "image"
    media_type: str
    data: str
    """Base64 of the image bytes."""
    uri: str | None = None


class AudioBlock(_Block):
    """Audio from the prompt. Kept for the transcript; not forwarded to models."""

    kind: Literal["audio"] = "audio"
    media_type: str
    data: str


class ResourceLinkBlock(_Block):
    kind: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    media_type: str | None = None


class ResourceBlock(_Block):
    """An embedded resource: ``text`` for text resources, ``blob`` (base64) for binary ones."""

    kind: Literal["resource"] = "resource"
    uri: str
    media_type: str | None = None
    text: str | None = None
    blob: str | None = None


class DiffBlock(_Block):
    """A file change: ``old_text`` None means a new file."""

    kind: Literal["diff"] = "diff"
    path: str
    old_text: str | None
    new_text: str


class TerminalBlock(_Block):
    """A terminal created in the client with ``terminal/create``."""

    kind: Literal["terminal"] = "terminal"
    terminal_id: str


class AgentTerminalBlock(_Block):
    """A terminal the agent owns: a command it runs itself, in its own sandbox, shown as a terminal by a client that
    renders agent-owned terminals and as ``fallback`` by any other (docs/architecture.md §9.7).

    Its id is the tool call's. In the call's first content it names the command and its working folder; in the
    call's settlement it is ``ended`` and holds what the card kept of the output and how the command ended, so a
    replay shows the same terminal. The output streams live in between (never stored: the settlement keeps it)."""

    kind: Literal["agent_terminal"] = "agent_terminal"
    terminal_id: str
    command: str
    cwd: str
    """Absolute."""
    output: str = ""
    """What the terminal showed, as kept when the command ended (start and end past a cap, the middle marked)."""
    ended: bool = False
    exit_code: int | None = None
    signal: str | None = None
    """The signal that ended the command (``SIGTERM``), when one did."""
    note: str | None = None
    """Shown under the terminal: why the command did not end by itself (a time limit), when it did not."""
    fallback: list[TextBlock] = Field(default_factory=list)
    """What a client without agent-owned terminals shows in its place."""

    @property
    def ran(self) -> bool:
        """False for a terminal that ended without its command running (refused, or settled by a stopped turn):
        it is closed, never shown."""
        return not self.ended or bool(self.output) or self.exit_code is not None or self.signal is not None

    def unfinished(self) -> AgentTerminalBlock:
        """This terminal closed without anything it ran: the call settled without the tool's own ending."""
        return AgentTerminalBlock(terminal_id=self.terminal_id, command=self.command, cwd=self.cwd, ended=True)


DisplayBlock = Annotated[
    TextBlock
    | ImageBlock
    | AudioBlock
    | ResourceLinkBlock
    | ResourceBlock
    | DiffBlock
    | TerminalBlock
    | AgentTerminalBlock,
    Field(discriminator="kind"),
]


class Location(_Block):
    """A file (absolute path) and optional 1-based line a tool call touches; editors follow it."""

    path: str
    line: int | None = None
