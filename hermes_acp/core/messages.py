"""Provider- and protocol-neutral conversation messages: what the model sees.

A conversation is a list of ``Message`` (user, assistant, tool result), each a list of parts discriminated by
``kind``. Providers translate these into their wire formats; the session log stores them as JSON. This module
knows neither ACP nor any provider's format.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AssistantMessage",
    "AssistantPart",
    "ImagePart",
    "Message",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "ToolResultMessage",
    "ToolResultPart",
    "UserMessage",
    "UserPart",
]


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextPart(_Part):
    """Plain text."""

    kind: Literal["text"] = "text"
    text: str


class ImagePart(_Part):
    """An image, base64-encoded, ready for a vision model."""

    kind: Literal["image"] = "image"
    media_type: str
    data: str
    """Base64 of the image bytes (no ``data:`` prefix)."""
    label: str | None = None
    """Where it came from, for placeholders once it falls out of the image window (e.g. "screenshot of Calculator")."""


class ThinkingPart(_Part):
    """Model reasoning. ``signature`` (Anthropic) must be sent back unchanged with the same message."""

    kind: Literal["thinking"] = "thinking"
    text: str
    signature: str | None = None
    redacted: bool = False


class ToolCallPart(_Part):
    """A tool call as the model made it. ``id`` is the provider's id (or one we generated when it gave none)."""

    kind: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: str
    """The raw JSON text of the arguments, exactly as streamed (it may not parse)."""

    def parsed_arguments(self) -> dict[str, Any] | None:
        """The arguments as an object, or None when they are not a JSON object."""
        try:
            value = json.loads(self.arguments) if self.arguments.strip() else {}
        except ValueError:
            return None
        return value if isinstance(value, dict) else None


UserPart = Annotated[TextPart | ImagePart, Field(discriminator="kind")]
AssistantPart = Annotated[TextPart | ThinkingPart | ToolCallPart, Field(discriminator="kind")]
ToolResultPart = Annotated[TextPart | ImagePart, Field(discriminator="kind")]


class UserMessage(BaseModel):
    """What the user said (text and images; other prompt content is converted to these)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Literal["user"] = "user"
    parts: list[UserPart]


class AssistantMessage(BaseModel):
    """One model response: text, reasoning and tool calls, in stream order."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Literal["assistant"] = "assistant"
    parts: list[AssistantPart]

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))


class ToolResultMessage(BaseModel):
    """The result of one tool call, as the model will read it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Literal["tool"] = "tool"
    tool_call_id: str
    name: str
    parts: list[ToolResultPart]
    is_error: bool = False


Message = Annotated[UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")]
