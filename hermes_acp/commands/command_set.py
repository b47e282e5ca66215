"""Slash commands: which a session offers, how a prompt names one, and what running one yields.

A session's commands are the built-in ones (``builtin_commands``), its prompt files (``prompt_files``), its
skills (``skills``) and its MCP servers' prompts (``/server:prompt``, ``mcp_prompts``); a built-in name wins over a
file of the same name, and either over a skill (logged once); a prompt's name has a colon, which no other has.
``CommandSet`` is that list, and the listing the editor gets (``available_commands_update``).

A prompt that is exactly one text block ``/name`` or ``/name argument`` (the argument may span lines) for a
command of the set is that command; anything else goes to the model as it is, an unknown ``/x`` too. Running a
command yields an ``Outcome``:

- ``Reply``: the session answers without the model. The user's line, the answer and what the command itself did that
  the log keeps (a ``/compact``'s compaction) are stored like a turn the model never sees, so a replay shows them.
- ``Ask``: a model turn whose prompt (what the model gets) is not what the user typed (what the transcript shows,
  live and on replay): a prompt file expanded, a skill's instructions with the arguments, an MCP prompt's text, the
  review request with the diff, the ``/init`` instructions.

This module knows neither the session nor ACP.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from hermes_acp.core import DisplayBlock, SessionEvent, TextBlock
from hermes_acp.mcp_client import ServerPrompt
from hermes_acp.mcp_client.naming import sanitise

from .prompt_files import PromptFile
from .skills import Skill

__all__ = [
    "Ask",
    "Command",
    "CommandSet",
    "Invocation",
    "Outcome",
    "Reply",
    "command_name",
    "parse_command",
    "prompt_command",
    "prompt_hint",
]

_COMMAND_LINE = re.compile(r"/([^\s/]+)(?:\s+(.*))?", re.S)
_log = structlog.get_logger("hermes_acp.sessions")


@dataclass(frozen=True, slots=True)
class Command:
    """A command as the editor lists it."""

    name: str
    description: str
    hint: str | None = None
    """What the argument is, for the editor's input hint; None for a command that takes none."""


@dataclass(frozen=True, slots=True)
class Reply:
    """The session answered the command itself; ``text`` is shown to the user and stored."""

    text: str
    mode_changed: bool = False
    config_changed: bool = False
    """The mode, model or thinking effort changed: the editor is sent the session's options again."""
    events: tuple[SessionEvent, ...] = ()
    """What the command did that the log keeps (a compaction), stored with the command in one write."""


@dataclass(frozen=True, slots=True)
class Ask:
    """A model turn: ``prompt`` is what the model gets in place of what the user typed."""

    prompt: str


Outcome = Reply | Ask


@dataclass(frozen=True, slots=True)
class Invocation:
    """A prompt that names a command of the set: the command, what followed its name, and its prompt file or skill
    when it is one."""

    command: Command
    argument: str
    file: PromptFile | None = None
    skill: Skill | None = None
    prompt: ServerPrompt | None = None


def parse_command(display: Sequence[DisplayBlock]) -> tuple[str, str] | None:
    """``(name, argument)`` when the prompt is one text block ``/name [argument]``, whatever the name."""
    if len(display) != 1 or not isinstance(display[0], TextBlock):
        return None
    match = _COMMAND_LINE.fullmatch(display[0].text.strip())
    if match is None:
        return None
    return match.group(1), (match.group(2) or "").strip()


def command_name(prompt: ServerPrompt) -> str | None:
    """An MCP prompt's command, ``<server>:<prompt>`` (the server's name as the tool names spell it), or None when
    the prompt's name cannot be typed after a slash (a slash, a blank)."""
    name = prompt.name
    if not name or "/" in name or any(ch.isspace() for ch in name):
        return None
    return f"{sanitise(prompt.server)}:{name}"


def prompt_hint(prompt: ServerPrompt) -> str | None:
    """Its declared arguments: ``<required> [optional]``."""
    parts = [f"<{a.name}>" if a.required else f"[{a.name}]" for a in prompt.arguments]
    return " ".join(parts) or None


def prompt_command(name: str, prompt: ServerPrompt) -> Command:
    description = prompt.description or f"Prompt {prompt.name!r} of MCP server {prompt.server!r}."
    return Command(name, description, prompt_hint(prompt))


class CommandSet:
    """The built-in commands, then the prompt files whose names no built-in takes, then the skills whose names
    neither takes, each sorted by name, then the MCP servers' prompts in the servers' order."""

    def __init__(
        self,
        built_in: Sequence[Command],
        files: Sequence[PromptFile] = (),
        skills: Sequence[Skill] = (),
        *,
        prompts: Sequence[ServerPrompt] = (),
        logged: frozenset[str] = frozenset(),
    ):
        """``logged``: the shadowed names already logged (by the set this one replaces); ``prompts``: the MCP
        servers' (one whose name a user cannot type is left out; the first of two with one name wins)."""
        taken = {command.name for command in built_in}
        self.built_in = tuple(built_in)
        self.files = tuple(sorted((f for f in files if f.name not in taken), key=lambda f: f.name))
        taken |= {f.name for f in self.files}
        self.skills = tuple(sorted((s for s in skills if s.name not in taken), key=lambda s: s.name))
        shadowed = {f.name: str(f.path) for f in files if f.name in {c.name for c in built_in}}
        shadowed |= {s.name: str(s.path) for s in skills if s.name in taken}
        self.shadowed = frozenset(shadowed)
        for name in sorted(self.shadowed - logged):
            _log.warning(
                "a prompt file or skill is named like another command; that one is used", name=name, path=shadowed[name]
            )
        named: dict[str, ServerPrompt] = {}
        for prompt in prompts:
            typed = command_name(prompt)
            if typed is not None:
                named.setdefault(typed, prompt)
        self.prompts: dict[str, ServerPrompt] = named
        """The MCP prompts, by command name."""
        self.listing: tuple[Command, ...] = (
            *self.built_in,
            *(Command(f.name, f.description, f.hint) for f in self.files),
            *(Command(s.name, s.description, s.hint) for s in self.skills),
            *(prompt_command(name, p) for name, p in named.items()),
        )

    def with_files(
        self,
        files: Sequence[PromptFile],
        skills: Sequence[Skill] | None = None,
        prompts: Sequence[ServerPrompt] | None = None,
    ) -> CommandSet:
        """The same built-ins with ``files``, ``skills`` and ``prompts`` (a rescan; None keeps them)."""
        return CommandSet(
            self.built_in,
            files,
            self.skills if skills is None else skills,
            prompts=list(self.prompts.values()) if prompts is None else prompts,
            logged=self.shadowed,
        )

    def find(self, display: Sequence[DisplayBlock]) -> Invocation | None:
        """The command the prompt names, if it is exactly one of this set's."""
        parsed = parse_command(display)
        if parsed is None:
            return None
        name, argument = parsed
        command = next((c for c in self.built_in if c.name == name), None)
        if command is not None:
            return Invocation(command, argument)
        file = next((f for f in self.files if f.name == name), None)
        if file is not None:
            return Invocation(Command(file.name, file.description, file.hint), argument, file)
        skill = next((s for s in self.skills if s.name == name), None)
        if skill is not None:
            return Invocation(Command(skill.name, skill.description, skill.hint), argument, skill=skill)
        prompt = self.prompts.get(name)
        if prompt is not None:
            return Invocation(prompt_command(name, prompt), argument, prompt=prompt)
        return None

    def help_text(self, extra: Sequence[str] = ()) -> str:
        """Every command with its usage, the prompt files' after the built-ins; ``extra`` lines follow."""
        lines = ["Commands:"]
        for command in self.built_in:
            lines.append(_usage(command))
        if self.files:
            lines.append("Prompt files (.hermes/commands/NAME.md of the project, commands/NAME.md of the home):")
            lines.extend(_usage(Command(f.name, f.description, f.hint)) for f in self.files)
        if self.skills:
            lines.append(
                "Skills (.agents/skills/NAME/SKILL.md or .claude/skills/NAME/SKILL.md, skills/NAME of the home):"
            )
            lines.extend(_usage(Command(s.name, s.description, s.hint)) for s in self.skills)
        if self.prompts:
            lines.append("MCP prompts (/server:prompt; arguments in order, or name=value):")
            lines.extend(_usage(prompt_command(name, p)) for name, p in self.prompts.items())
        lines.extend(extra)
        return "\n".join(lines)


def _usage(command: Command) -> str:
    usage = f"/{command.name}" + (f" {command.hint}" if command.hint else "")
    return f"- `{usage}`: {command.description}"
