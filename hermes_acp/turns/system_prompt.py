"""The system prompt: short, and byte-identical for every request of a session (prompt caches depend on it).

It may depend only on what a session fixes before its first model request (its directories, the project
instructions read when it opened, its skills as the first turn found them); never on time, mode, model or effort.
Instruction files are given whole or cut with a note saying how much of the file was left out, so the model knows
it has not seen everything. Skills are listed by name and description (at most ``SKILL_LISTING_CHARS``, then a
count of the rest), for the model to load with ``load_skill`` when one applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from hermes_acp.tools.context import Workspace

__all__ = ["SKILL_LISTING_CHARS", "Instructions", "SkillEntry", "build_system_prompt"]

SKILL_LISTING_CHARS = 8_000


class Instructions(Protocol):
    """One project instruction file as the prompt needs it."""

    @property
    def path(self) -> Path: ...

    @property
    def text(self) -> str: ...

    @property
    def cut(self) -> int: ...


class SkillEntry(Protocol):
    """One skill as the prompt lists it."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...


_PROMPT = """You are Hermes, a coding agent running inside the user's editor.
Working directory: {cwd}{extra}

- Use the tools to inspect and change the project; read a file before editing it, and prefer edit_file over
  rewriting whole files.
- Paths are relative to the working directory unless absolute.
- Run commands with the terminal tool; keep them non-interactive.
- For multi-step work, keep a plan with update_plan and mark steps as you finish them.
- A tool result that says "outcome unknown" means the action may or may not have happened: observe the current
  state before doing anything again.
- Be concise. Say what you changed and why."""


_INSTRUCTIONS = """

Project instructions (from the user's instruction files; follow them unless the user says otherwise):"""


_SKILLS = """

Skills (instructions for particular tasks, from the user's and the project's skill folders; when a task matches a
description, load that skill with load_skill and follow it; a skill grants no permission):"""


def build_system_prompt(
    workspace: Workspace, instructions: Sequence[Instructions] = (), skills: Sequence[SkillEntry] = ()
) -> str:
    extra = ""
    if workspace.additional:
        extra = "\nAdditional directories: " + ", ".join(str(p) for p in workspace.additional)
    prompt = _PROMPT.format(cwd=workspace.cwd, extra=extra)
    if instructions:
        prompt += _INSTRUCTIONS
        for item in instructions:
            prompt += f"\n\n## {item.path}\n{item.text.rstrip()}"
            if item.cut:
                prompt += f"\n[{item.cut:,} more bytes of this file were left out: instructions are capped in size]"
    if skills:
        prompt += _SKILLS + _skill_lines(skills)
    return prompt


def _skill_lines(skills: Sequence[SkillEntry]) -> str:
    lines = ""
    for listed, skill in enumerate(skills):
        line = f"\n- {skill.name}: {skill.description}"
        if len(lines) + len(line) > SKILL_LISTING_CHARS:
            return lines + f"\n- … and {len(skills) - listed} more (load_skill with a wrong name lists every name)"
        lines += line
    return lines
