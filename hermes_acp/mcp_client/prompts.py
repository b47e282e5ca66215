"""MCP prompts as the user's commands see them: each server's ``prompts/list`` read into ``ServerPrompt``s, and a
``prompts/get`` answer cleaned for the turn it starts.

A prompt's texts (name, title, description, its arguments' names and descriptions) come from the server: they pass
the one sanitizer, and an entry without a usable name is skipped. ``prompt_text`` renders a ``prompts/get`` answer
as the text a user's turn would carry (each message's text, with its role when it is not the user's; a non-text
block named by its kind). Pure functions; nothing here knows the mcp SDK or ACP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_acp.core.sanitize import sanitize_json, sanitize_text

__all__ = ["MAX_PROMPT_ARGUMENTS", "PromptArgument", "ServerPrompt", "prompt_text", "read_prompts"]

MAX_PROMPT_ARGUMENTS = 32
_MAX_TEXT = 2000


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True, slots=True)
class ServerPrompt:
    server: str
    """The server's name, as the editor gave it."""
    name: str
    """The prompt's name, as the server spelled it (``get_prompt`` takes it)."""
    description: str
    arguments: tuple[PromptArgument, ...]


def _text(value: object) -> str:
    if not isinstance(value, str):
        return ""
    clean, _ = sanitize_text(value.strip())
    return clean if len(clean) <= _MAX_TEXT else clean[: _MAX_TEXT - 1] + "…"


def read_prompts(server: str, listed: Sequence[Mapping[str, Any]]) -> list[ServerPrompt]:
    """The server's prompts, cleaned, in its order; the first of two with one name wins."""
    prompts: list[ServerPrompt] = []
    seen: set[str] = set()
    for entry in listed:
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip() or name in seen:
            continue
        clean_name, removals = sanitize_text(name)
        if removals or any(ch.isspace() for ch in clean_name):
            continue  # a name a user cannot type back
        seen.add(name)
        arguments = []
        for raw in (entry.get("arguments") or [])[:MAX_PROMPT_ARGUMENTS]:
            if isinstance(raw, Mapping) and isinstance(raw.get("name"), str) and raw["name"].strip():
                arguments.append(
                    PromptArgument(_text(raw["name"]), _text(raw.get("description")), raw.get("required") is True)
                )
        description = _text(entry.get("description")) or _text(entry.get("title"))
        prompts.append(ServerPrompt(server, name, description, tuple(arguments)))
    return prompts


def prompt_text(result: Mapping[str, Any]) -> str:
    """A ``prompts/get`` answer as the text of a user's turn."""
    clean: Mapping[str, Any] = sanitize_json(dict(result))[0]
    parts: list[str] = []
    for message in clean.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        block = message.get("content")
        role = message.get("role", "user")
        prefix = "" if role == "user" else f"[{role}] "
        if isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(prefix + str(block.get("text", "")))
        elif isinstance(block, Mapping):
            parts.append(f"{prefix}[{block.get('type', 'content')}]")
    return "\n\n".join(parts)
