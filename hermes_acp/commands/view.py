"""``CommandView``: what the built-in slash commands and ``/status`` may use of a session, as one small protocol.

The commands (``builtin_commands``) and the status text (``status``) are written against this, not against
``Session``, so neither imports the session and the session imports them: no import cycle. ``Session``
implements it. No ACP here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from hermes_acp.config import Effort, Settings
from hermes_acp.core import InputKind, ModeId
from hermes_acp.mcp_client import McpServers
from hermes_acp.providers.catalog import CatalogModel, ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.tools.base import AnyTool
from hermes_acp.tools.context import Elicitor, Workspace
from hermes_acp.turns.projection import SessionProjection
from hermes_acp.turns.system_prompt import ClientSystemPrompt
from hermes_acp.turns.timeline import RewindPoint

from .command_set import CommandSet, Reply
from .instructions import InstructionFile
from .skills import SkillShelf

if TYPE_CHECKING:
    from hermes_acp.exec.environment import EnvPolicy
    from hermes_acp.turns.meter import Meter

__all__ = ["CommandOptions", "CommandView", "WaitingInput"]


class WaitingInput(Protocol):
    """A prompt or steering message waiting in the session (``/status`` lists them)."""

    @property
    def input_kind(self) -> InputKind: ...

    @property
    def text(self) -> str: ...


class CommandOptions(Protocol):
    """The session's options as the commands show and change them."""

    @property
    def mode(self) -> ModeId: ...

    @property
    def effort(self) -> Effort | None: ...

    @property
    def catalog(self) -> ModelCatalog: ...

    @property
    def client_system_prompt(self) -> ClientSystemPrompt | None: ...

    def current_model(self) -> CatalogModel | None: ...

    async def set_mode(self, mode_id: str) -> None: ...

    async def set_model(self, model_id: str) -> None: ...

    async def set_title(self, title: str) -> str:
        """Returns the title as stored (normalised)."""
        ...


class CommandView(Protocol):
    @property
    def options(self) -> CommandOptions: ...

    @property
    def turn_id(self) -> str | None:
        """The command turn running now."""
        ...

    @property
    def commands(self) -> CommandSet: ...

    @property
    def projection(self) -> SessionProjection: ...

    @property
    def workspace(self) -> Workspace: ...

    @property
    def mcp(self) -> McpServers: ...

    @property
    def instructions(self) -> tuple[InstructionFile, ...]: ...

    @property
    def skills(self) -> SkillShelf: ...

    @property
    def providers(self) -> ProviderRegistry:
        """The registry serving ``catalog``'s models (the setup reloads it)."""
        ...

    @property
    def elicitor(self) -> Elicitor | None:
        """Questions to the user through the editor's forms, when an attached client can show them."""
        ...

    @property
    def settings(self) -> Settings: ...

    @property
    def env_policy(self) -> EnvPolicy:
        """Which variables the session's child processes (the agent's own git calls too) may inherit."""
        ...

    def queue_listing(self) -> Sequence[WaitingInput]:
        """The prompts and steering messages waiting, in order."""
        ...

    def meter(self, model: CatalogModel) -> Meter: ...

    def tools(self) -> Sequence[AnyTool]:
        """The tool surface a model request would get now."""
        ...

    def status(self) -> str: ...

    async def compact(self, instructions: str, *, turn_id: str) -> Reply: ...

    async def rewind_points(self) -> list[RewindPoint]:
        """The prompts a rewind can go back to, oldest first."""
        ...

    async def rewind_reply(self, message_id: str) -> Reply:
        """The rewind to just before ``message_id``, as the command's reply."""
        ...
