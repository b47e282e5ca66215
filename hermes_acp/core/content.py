"""Neutral display content: what the editor is shown in a transcript (prompts, tool cards).

These mirror the concepts of ACP content (text, image, resource link, embedded resource, diff, terminal) without
importing the SDK; ``hermes_acp.protocol.convert`` maps them to wire shapes. They are stored in the session log,
so a replay shows exactly what the live turn showed.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
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


DisplayBlock = Annotated[
    TextBlock | ImageBlock | AudioBlock | ResourceLinkBlock | ResourceBlock | DiffBlock | TerminalBlock,
    Field(discriminator="kind"),
]


class Location(_Block):
    """A file (absolute path) and optional 1-based line a tool call touches; editors follow it."""

    path: str
    line: int | None = None
