"""Provider- and protocol-neutral conversation messages: what the model sees.

A conversation is a list of ``Message`` (user, assistant, tool result), each a list of parts discriminated by
``kind``. Providers translate these into their wire formats; the session log stores them as JSON. A few fields
carry a provider's own data that must go back to it untouched (reasoning signatures, ``echo``, the blocks of
provider-side tools): they are opaque here, and each provider decides what of them it sends. This module knows
neither ACP nor any provider's format.
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
    "ServerToolCallPart",
    "ServerToolResultPart",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "ToolResultMessage",
    "ToolResultPart",
    "UserMessage",
    "UserPart",
]


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


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
    verbatim: str | None = None
    """The reasoning exactly as the provider sent it, kept only when it differs from ``text`` (from which hidden
    characters were removed for display): a signature covers the exact text, so signed reasoning goes back as sent."""


class ToolCallPart(_Part):
    """A tool call as the model made it. ``id`` is the provider's id (or one we generated when it gave none)."""

    kind: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: str
    """The raw JSON text of the arguments, exactly as streamed (it may not parse)."""
    echo: dict[str, Any] | None = None
    """Fields of the provider's own format that came with this call and must go back with it, verbatim, by wire
    field name (Gemini's ``extra_content`` with its thought signature). Kept only for a provider that sends them
    back."""

    def parsed_arguments(self) -> dict[str, Any] | None:
        """The arguments as an object, or None when they are not a JSON object."""
        return _json_object(self.arguments)


class ServerToolCallPart(_Part):
    """A tool the provider ran on its own side (Anthropic's web search or tool search, Groq's built-in search).

    Never run by the agent: the editor shows it as a completed card. ``block`` is the provider's own content block,
    sent back verbatim to an API of the same kind, which requires it (Anthropic); None when nothing goes back.
    """

    kind: Literal["server_tool_call"] = "server_tool_call"
    id: str
    """The provider's id ("" when it gave none)."""
    name: str
    arguments: str
    """The JSON text of the input, as streamed."""
    block: dict[str, Any] | None = None

    def parsed_arguments(self) -> dict[str, Any] | None:
        return _json_object(self.arguments)


class ServerToolResultPart(_Part):
    """What a provider-side tool returned. ``text`` is a short readable account for the card (titles and links,
    tool names, the error code); ``block`` as in ``ServerToolCallPart``."""

    kind: Literal["server_tool_result"] = "server_tool_result"
    tool_call_id: str
    name: str
    """The kind of result (Anthropic's block type, e.g. ``web_search_tool_result``) or the tool's name."""
    text: str
    is_error: bool = False
    block: dict[str, Any] | None = None


def _json_object(text: str) -> dict[str, Any] | None:
    """``text`` parsed as a JSON object ({} for blank text), or None when it is not one."""
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


UserPart = Annotated[TextPart | ImagePart, Field(discriminator="kind")]
AssistantPart = Annotated[
    TextPart | ThinkingPart | ToolCallPart | ServerToolCallPart | ServerToolResultPart, Field(discriminator="kind")
]
ToolResultPart = Annotated[TextPart | ImagePart, Field(discriminator="kind")]


class UserMessage(BaseModel):
    """What the user said (text and images; other prompt content is converted to these)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    role: Literal["user"] = "user"
    parts: list[UserPart]


class AssistantMessage(BaseModel):
    """One model response: text, reasoning, tool calls and provider-side tool steps, in stream order."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    role: Literal["assistant"] = "assistant"
    parts: list[AssistantPart]
    echo: dict[str, Any] | None = None
    """Fields of the provider's own format that belong to the whole message and must go back with it, verbatim, by
    wire field name (OpenRouter's ``reasoning_details``). Kept only for a provider that sends them back."""

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        """The calls the agent runs (provider-side tool steps are not among them)."""
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def server_tool_calls(self) -> list[ServerToolCallPart]:
        return [p for p in self.parts if isinstance(p, ServerToolCallPart)]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))


class ToolResultMessage(BaseModel):
    """The result of one tool call, as the model will read it."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    role: Literal["tool"] = "tool"
    tool_call_id: str
    name: str
    parts: list[ToolResultPart]
    is_error: bool = False


Message = Annotated[UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")]
