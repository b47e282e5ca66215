"""``load_skill``: the model loads one of the session's skills when it decides the skill applies.

The system prompt lists the skills by name and description; this tool gives the model one skill's instructions,
where its folder is and what the folder holds (the file tools read those files). Offered when the session has
skills; the session builds it around its ``SkillBook``. It only reads, needs no approval and works in every mode.
This module knows neither the session nor how skills are found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hermes_acp.core import Location
from hermes_acp.errors import ToolInputError

from .approval import Approval
from .base import Presentation, ToolOutcome, TypedTool
from .context import ToolContext

__all__ = ["LoadSkillTool", "SkillBook"]


class SkillBook(Protocol):
    """The session's skills as the tool needs them."""

    def names(self) -> list[str]: ...

    def path(self, name: str) -> Path | None:
        """Where the skill's ``SKILL.md`` is; None for a name the session has no skill of."""
        ...

    async def text(self, name: str) -> str:
        """What the model gets for the skill (it exists: ``path`` said so)."""
        ...


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=64, description="The skill's name, as the system prompt lists it.")


class LoadSkillTool(TypedTool[_Input, dict[str, Any]]):
    name = "load_skill"
    description = (
        "Load a skill's instructions by name when the task matches its description (the skills are listed in the "
        "system prompt), then follow them; files they name can be read with read_file."
    )
    Input = _Input
    read_only = True

    def __init__(self, book: SkillBook):
        self._book = book

    def reads_only(self, parsed: _Input) -> bool:
        return True

    def present(self, parsed: _Input, ctx: ToolContext) -> Presentation:
        path = self._book.path(parsed.name)
        locations = [Location(path=str(path))] if path is not None else []
        return Presentation(title=f"Load skill {parsed.name}", kind="read", locations=locations)

    async def run(
        self, parsed: _Input, approval: Approval[dict[str, Any]], ctx: ToolContext
    ) -> ToolOutcome[dict[str, Any]]:
        if self._book.path(parsed.name) is None:
            names = ", ".join(self._book.names()) or "none"
            raise ToolInputError(f"no skill named {parsed.name!r}; this session's skills: {names}")
        text = await self._book.text(parsed.name)
        return ToolOutcome.text(text, raw_output={"skill": parsed.name})
