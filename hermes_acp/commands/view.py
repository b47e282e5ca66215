"""``CommandView``: what the slash commands may use of a session, as one small protocol (twelve members, most of them
the session's own collaborators, each seen through a narrow protocol of its own).

The built-in commands (``builtins``), ``/status``'s text (``status``) and the runner (``runner``) are written against
this, never against the session: nothing in ``hermes_acp.commands`` imports ``hermes_acp.sessions``, which sits
above it. The session meets it with what it is (its options, services, workspace, MCP servers, instruction files,
recorder, audience, turn wiring, commands, rewinds, queue); the tests meet it with a fake. No ACP here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from hermes_acp.config import Effort, Settings
from hermes_acp.core import InputKind, ModeId
from hermes_acp.mcp_client import McpServers
from hermes_acp.providers.catalog import CatalogModel, ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.tools.base import AnyTool
from hermes_acp.tools.context import Elicitor, Workspace
from hermes_acp.turns.recorder import Recorder
from hermes_acp.turns.system_prompt import ClientSystemPrompt
from hermes_acp.turns.timeline import RewindPoint

from .command_set import Command, CommandSet, Reply
from .instructions import InstructionFile
from .skills import SkillShelf

if TYPE_CHECKING:
    from hermes_acp.exec.sandbox import Sandbox
    from hermes_acp.turns.meter import Meter

__all__ = [
    "CommandAudience",
    "CommandOptions",
    "CommandRewinds",
    "CommandServices",
    "CommandTurns",
    "CommandView",
    "Offered",
    "Waiting",
    "WaitingInput",
]


class WaitingInput(Protocol):
    """A prompt or steering message waiting in the session (``/status`` lists them)."""

    @property
    def input_kind(self) -> InputKind: ...

    @property
    def text(self) -> str: ...


class Waiting(Protocol):
    def listing(self) -> Sequence[WaitingInput]:
        """The prompts and steering messages waiting, in order."""
        ...


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


class CommandServices(Protocol):
    @property
    def settings(self) -> Settings: ...

    @property
    def providers(self) -> ProviderRegistry:
        """The registry serving the catalog's models (the setup reloads it)."""
        ...


class CommandAudience(Protocol):
    """The connections attached to the session."""

    def elicitor(self) -> Elicitor | None:
        """Questions to the user through the editor's forms, when an attached client can show them."""
        ...

    def can_elicit(self, mode: Literal["form", "url"]) -> bool:
        """An attached client can ask a question of this kind (``url``: open an address for the user)."""
        ...

    async def commands_changed(self, commands: Sequence[Command]) -> None:
        """Tell every attached editor the session's slash commands are now ``commands``."""
        ...


class CommandTurns(Protocol):
    """What the session's turn wiring offers outside a model turn."""

    @property
    def sandbox(self) -> Sandbox:
        """How the session's commands are contained (its ``env_policy``: what the agent's own git calls inherit)."""
        ...

    def meter(self, model: CatalogModel) -> Meter: ...

    def tools(self) -> Sequence[AnyTool]:
        """The tool surface a model request would get now."""
        ...

    async def compact(self, instructions: str, *, turn_id: str) -> Reply: ...


class CommandRewinds(Protocol):
    async def points(self) -> list[RewindPoint]:
        """The prompts a rewind can go back to, oldest first."""
        ...

    async def reply(self, message_id: str, *, turn_id: str) -> Reply:
        """The rewind to just before ``message_id``, inside the command turn ``turn_id``, as the command's reply."""
        ...

    async def refold(self) -> None:
        """Once the reply is stored: the session's state built again from its log."""
        ...


class Offered(Protocol):
    """The session's commands as the built-in ones show them."""

    @property
    def set(self) -> CommandSet: ...

    @property
    def skills(self) -> SkillShelf: ...


class CommandView(Protocol):
    @property
    def options(self) -> CommandOptions: ...

    @property
    def services(self) -> CommandServices: ...

    @property
    def workspace(self) -> Workspace: ...

    @property
    def mcp(self) -> McpServers: ...

    @property
    def instructions(self) -> tuple[InstructionFile, ...]: ...

    @property
    def recorder(self) -> Recorder:
        """Where the command's answer is stored; its ``projection`` is the session's state."""
        ...

    @property
    def audience(self) -> CommandAudience: ...

    @property
    def wiring(self) -> CommandTurns: ...

    @property
    def commands(self) -> Offered: ...

    @property
    def rewinds(self) -> CommandRewinds: ...

    @property
    def turn_id(self) -> str | None:
        """The command turn running now."""
        ...

    @property
    def queue(self) -> Waiting: ...
