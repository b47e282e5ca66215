"""The turn wiring against a view of its own making (no session): one tool environment per turn, the tool surface
following the session's mode, the sandbox following the network switch, the system prompt fixed by the first turn
and what a failed write left open settled before it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from hermes_acp.commands.skills import SkillShelf, skill_roots
from hermes_acp.config import load_settings
from hermes_acp.core import TextPart, ToolCallStarted, UserMessage, UserPrompted
from hermes_acp.core.notice import Notice
from hermes_acp.mcp_client import McpServers
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.providers.scripted import ScriptedProvider
from hermes_acp.sessions._runtime import SessionRuntime
from hermes_acp.sessions.audience import Audience
from hermes_acp.sessions.options import SessionOptions
from hermes_acp.sessions.services import SessionServices
from hermes_acp.sessions.switches import SANDBOX_NETWORK
from hermes_acp.sessions.tool_surface import derive_tool_surface
from hermes_acp.sessions.turn_wiring import TurnWiring
from hermes_acp.storage import InMemorySessionStore, SessionRecord, utc_now
from hermes_acp.subagents.lineage import Lineage
from hermes_acp.subagents.runner import SubagentRunner
from hermes_acp.tools.context import Workspace
from hermes_acp.turns.projection import SessionProjection
from hermes_acp.turns.recorder import Recorder
from tests.commands.test_skills import write_skill
from tests.fakes.server import scripted_model

from .support import Bridge

pytestmark = pytest.mark.anyio

SESSION = "sess_wiring"


@dataclass
class Commands:
    skills: SkillShelf

    async def ensure(self) -> None:
        await self.skills.ensure()


@dataclass
class Notices:
    told: list[Notice] = field(default_factory=list)

    async def notify(self, notice: Notice) -> None:
        self.told.append(notice)


@dataclass
class View:
    """What the turn wiring builds a session's turns from, made of real parts without a session."""

    id: str
    services: SessionServices
    options: SessionOptions
    lineage: Lineage
    recorder: Recorder
    audience: Audience
    workspace: Workspace
    commands: Commands
    mcp: McpServers
    runtime: SessionRuntime
    instructions: tuple[Any, ...] = ()
    notices: Notices = field(default_factory=Notices)
    built: TurnWiring | None = None
    runner: SubagentRunner | None = None

    @property
    def wiring(self) -> TurnWiring:
        assert self.built is not None
        return self.built

    @property
    def subagents(self) -> SubagentRunner:
        assert self.runner is not None
        return self.runner


@contextlib.asynccontextmanager
async def open_view(tmp_path: Path) -> AsyncIterator[View]:
    settings = load_settings({"HERMES_ACP_HOME": str(tmp_path / "home")})
    model = scripted_model()
    services = SessionServices(
        settings=settings,
        store=InMemorySessionStore(),
        catalog=ModelCatalog([model], model.id),
        providers=ProviderRegistry(settings, {}, overrides={"scripted": ScriptedProvider([])}),
        tool_surface=derive_tool_surface,
    )
    workspace = Workspace(cwd=tmp_path / "workspace")
    workspace.cwd.mkdir()
    now = utc_now()
    record = SessionRecord(id=SESSION, cwd=str(workspace.cwd), created_at=now, updated_at=now, mode_id="default")
    await services.store.create_session(record)
    audience = Audience(SESSION, wait_for_attach=False)
    recorder = Recorder(SESSION, services.store, audience, SessionProjection())
    lineage = Lineage(record, recorder, settings)
    jobs: list[str] = []
    options = SessionOptions(
        record,
        services,
        recorder,
        lineage,
        busy=lambda: False,
        jobs=lambda job, name: jobs.append(name),
        budget=lambda: view.wiring.budget,
    )
    view = View(
        id=SESSION,
        services=services,
        options=options,
        lineage=lineage,
        recorder=recorder,
        audience=audience,
        workspace=workspace,
        commands=Commands(SkillShelf(skill_roots(workspace, settings.home))),
        mcp=McpServers([], cwd=workspace.cwd),
        runtime=SessionRuntime(SESSION),
    )
    view.runner = SubagentRunner(view, None)
    view.built = TurnWiring(view)
    async with anyio.create_task_group() as group:
        await group.start(view.runtime.run)
        try:
            yield view
        finally:
            await view.runtime.aclose()


async def test_a_turns_calls_share_one_environment_and_its_surface_follows_the_sessions_mode(tmp_path: Path) -> None:
    async with open_view(tmp_path) as view:
        skill = write_skill(view.services.settings.home / "skills", "release", "Cut a release.")
        await view.commands.ensure()
        editor = Bridge(connection_id="editor")
        await view.audience.attach(editor)
        view.audience.origin = editor
        deps = view.wiring.deps()
        present = deps.env.client_present
        assert present is not None and present()
        view.audience.origin = None
        left = present()
        before = {tool.name for tool in deps.surface.tools()}
        await view.options.set_mode("read_only")
        after = {tool.name for tool in deps.surface.tools()}

    env = deps.env
    assert env.session_id == SESSION and env.workspace.cwd == view.workspace.cwd
    assert env.workspace.readable == (skill.parent,), "the global skills' folders may be read"
    assert env.sandbox is view.wiring.sandbox and env.images is view.wiring.image_gate
    assert env.subagents is None, "a session that cannot open children does not delegate"
    assert not left, "the editor that sent the prompt has gone"
    assert deps.surface is view.wiring and deps.surface.mode == "read_only"
    assert {"write_file", "load_skill"} <= before
    assert "write_file" not in after and "load_skill" in after, "read_only offers the tools that change nothing"
    assert deps.surface.why_unavailable("write_file") == "the session is in read_only mode"


async def test_the_sandbox_is_made_anew_when_the_network_switch_changes(tmp_path: Path) -> None:
    async with open_view(tmp_path) as view:
        first = view.wiring.sandbox
        again = view.wiring.sandbox
        await view.options.set_switch(SANDBOX_NETWORK, not first.network)
        switched = view.wiring.sandbox

    assert again is first, "kept while the switch stays"
    assert switched is not first and switched.network is not first.network


async def test_the_first_turn_fixes_the_system_prompt_and_settles_what_a_failed_write_left_open(
    tmp_path: Path,
) -> None:
    async with open_view(tmp_path) as view:
        skills = view.workspace.cwd / ".agents" / "skills"
        write_skill(skills, "deploy", "Deploy the app.")
        await view.recorder.record(
            UserPrompted(
                turn_id="turn_0",
                message_id="msg_0",
                display=[],
                message=UserMessage(parts=[TextPart(text="go")]),
            ),
            ToolCallStarted(turn_id="turn_0", tool_call_id="call_0", name="echo", title="Echo", tool_kind="other"),
        )
        await view.wiring.prepare()
        fixed = view.wiring.system_prompt
        write_skill(skills, "lint", "Lint the code.")
        await view.commands.skills.rescan()
        later = view.wiring.system_prompt
        open_calls = dict(view.recorder.projection.open_calls)

    assert "- deploy: Deploy the app." in fixed
    assert later == fixed, "byte-identical for the session's life, whatever its skills do meanwhile"
    assert open_calls == {}, "the open call was settled before the turn"
