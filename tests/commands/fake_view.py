"""A ``CommandView`` made of fakes and a few real parts (an in-memory store and its recorder), so the commands and
their runner are tested without a session: what the commands call of it is all there is."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hermes_acp.commands.command_set import Command, Reply
from hermes_acp.commands.instructions import InstructionFile
from hermes_acp.commands.runner import CommandRunner
from hermes_acp.commands.skills import SkillShelf, skill_roots
from hermes_acp.commands.view import WaitingInput
from hermes_acp.config import Effort, Settings, load_settings
from hermes_acp.core import ModeId, SessionEvent
from hermes_acp.exec.sandbox import Sandbox
from hermes_acp.mcp_client import McpServers
from hermes_acp.providers.catalog import CatalogModel, ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.storage import InMemorySessionStore, SessionRecord, utc_now
from hermes_acp.tools.base import AnyTool
from hermes_acp.tools.context import Elicitor, Workspace
from hermes_acp.turns.meter import Meter
from hermes_acp.turns.projection import SessionProjection
from hermes_acp.turns.recorder import Recorder
from hermes_acp.turns.system_prompt import ClientSystemPrompt
from hermes_acp.turns.timeline import RewindPoint
from tests.fakes.server import scripted_model
from tests.sessions.support import RecordingSink

__all__ = ["FakeView", "open_view"]

SESSION_ID = "sess_commands"


@dataclass
class FakeOptions:
    catalog: ModelCatalog
    mode: ModeId = "default"
    effort: Effort | None = None
    client_system_prompt: ClientSystemPrompt | None = None
    titles: list[str] = field(default_factory=list)

    def current_model(self) -> CatalogModel | None:
        default = self.catalog.default_id
        return self.catalog.get(default) if default is not None else None

    async def set_mode(self, mode_id: str) -> None:
        self.mode = mode_id  # type: ignore[assignment]  # the fake takes any mode the test sends

    async def set_model(self, model_id: str) -> None:
        self.catalog.get(model_id)

    async def set_title(self, title: str) -> str:
        self.titles.append(title)
        return title


@dataclass
class FakeServices:
    settings: Settings
    providers: ProviderRegistry


@dataclass
class FakeAudience:
    announced: list[list[str]] = field(default_factory=list)
    """Each list of commands the editors were told, by name."""

    def elicitor(self) -> Elicitor | None:
        return None

    def can_elicit(self, mode: Literal["form", "url"]) -> bool:
        return False

    async def commands_changed(self, commands: Sequence[Command]) -> None:
        self.announced.append([command.name for command in commands])


@dataclass
class FakeWiring:
    sandbox: Sandbox = field(default_factory=Sandbox.default)
    compacted_in: list[str] = field(default_factory=list)
    """The command turn each ``/compact`` ran in."""

    def meter(self, model: CatalogModel) -> Meter:
        return Meter(model, "", SessionProjection(), None, None, None)

    def tools(self) -> Sequence[AnyTool]:
        return ()

    async def compact(self, instructions: str, *, turn_id: str) -> Reply:
        self.compacted_in.append(turn_id)
        return Reply(f"compacted: {instructions}")


@dataclass
class FakeRewinds:
    refolded: int = 0

    async def points(self) -> list[RewindPoint]:
        return []

    async def reply(self, message_id: str, *, turn_id: str) -> Reply:
        return Reply(f"rewound to {message_id}")

    async def refold(self) -> None:
        self.refolded += 1


@dataclass
class FakeQueue:
    waiting: list[WaitingInput] = field(default_factory=list)

    def listing(self) -> Sequence[WaitingInput]:
        return self.waiting


@dataclass
class FakeView:
    options: FakeOptions
    services: FakeServices
    workspace: Workspace
    mcp: McpServers
    recorder: Recorder
    store: InMemorySessionStore
    instructions: tuple[InstructionFile, ...] = ()
    audience: FakeAudience = field(default_factory=FakeAudience)
    wiring: FakeWiring = field(default_factory=FakeWiring)
    rewinds: FakeRewinds = field(default_factory=FakeRewinds)
    queue: FakeQueue = field(default_factory=FakeQueue)
    runner: CommandRunner | None = None

    @property
    def commands(self) -> CommandRunner:
        assert self.runner is not None
        return self.runner

    @property
    def turn_id(self) -> str | None:
        return self.commands.turn_id

    async def stored(self) -> list[SessionEvent]:
        return [stored.event for stored in await self.store.load_events(SESSION_ID)]


@contextlib.asynccontextmanager
async def open_view(tmp_path: Path) -> AsyncIterator[FakeView]:
    """A view over a workspace and a home of their own; its runner has no prompt files yet."""
    settings = load_settings({"HERMES_ACP_HOME": str(tmp_path / "home")})
    workspace = Workspace(cwd=tmp_path / "workspace")
    workspace.cwd.mkdir(exist_ok=True)
    store = InMemorySessionStore()
    now = utc_now()
    await store.create_session(
        SessionRecord(id=SESSION_ID, cwd=str(workspace.cwd), created_at=now, updated_at=now, mode_id="default")
    )
    model = scripted_model()
    view = FakeView(
        options=FakeOptions(ModelCatalog([model], model.id)),
        services=FakeServices(settings, ProviderRegistry(settings, {})),
        workspace=workspace,
        mcp=McpServers([], cwd=workspace.cwd),
        recorder=Recorder(SESSION_ID, store, RecordingSink(), SessionProjection()),
        store=store,
    )
    view.runner = CommandRunner(view, (), SkillShelf(skill_roots(workspace, settings.home)))
    yield view
