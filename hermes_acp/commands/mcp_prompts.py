"""MCP prompts as the user's slash commands: ``/server:prompt args`` (the set names and lists them:
``command_set.prompt_command``).

What follows the name fills the prompt's declared arguments (``arguments``): ``name=value`` sets one by name, the
other words fill the rest in declared order, the last one taking what is left; quotes group words. Running one
(``run_prompt``) asks the server for the prompt's text (``prompts/get``) and makes it a model turn (``Ask``), the
user's line shown as typed; a missing required argument, an unknown server or an error answer is a ``Reply`` saying
so. Knows neither the session nor ACP.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Protocol

from hermes_acp.errors import ToolError
from hermes_acp.mcp_client import ServerPrompt

from .command_set import Ask, Reply, prompt_hint

__all__ = ["PromptSource", "arguments", "run_prompt"]


class PromptSource(Protocol):
    """The session's MCP servers, as a prompt command needs them."""

    async def get_prompt(self, server: str, prompt: str, arguments: Mapping[str, str]) -> str: ...


def arguments(prompt: ServerPrompt, text: str) -> dict[str, str]:
    """The prompt's arguments from what the user typed after its name; ``ValueError`` saying what is missing or
    too much."""
    try:
        words = shlex.split(text)
    except ValueError:  # an unbalanced quote: the words as typed
        words = text.split()
    declared = [a.name for a in prompt.arguments]
    values: dict[str, str] = {}
    rest: list[str] = []
    for word in words:
        key, equals, value = word.partition("=")
        if equals and key in declared and key not in values:
            values[key] = value
        else:
            rest.append(word)
    open_slots = [name for name in declared if name not in values]
    if rest and not open_slots:
        raise ValueError(f"it takes {'no more' if declared else 'no'} arguments")
    for index, name in enumerate(open_slots):
        if not rest:
            break
        if index == len(open_slots) - 1:
            values[name] = " ".join(rest)
            rest = []
        else:
            values[name] = rest.pop(0)
    missing = [a.name for a in prompt.arguments if a.required and not values.get(a.name)]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    return values


async def run_prompt(servers: PromptSource, name: str, prompt: ServerPrompt, text: str) -> Ask | Reply:
    """The command ``/name text``: the prompt's text as a model turn, or why not."""
    hint = prompt_hint(prompt)
    usage = f"/{name}" + (f" {hint}" if hint else "")
    try:
        values = arguments(prompt, text)
    except ValueError as exc:
        return Reply(f"`/{name}`: {exc}. Usage: `{usage}`.")
    try:
        expanded = await servers.get_prompt(prompt.server, prompt.name, values)
    except KeyError:
        return Reply(f"`/{name}`: MCP server {prompt.server!r} is no longer in this session.")
    except ToolError as exc:
        return Reply(f"`/{name}`: MCP server {prompt.server!r} did not give its prompt: {exc}")
    if not expanded.strip():
        return Reply(f"`/{name}`: MCP server {prompt.server!r} gave an empty prompt.")
    return Ask(expanded)
