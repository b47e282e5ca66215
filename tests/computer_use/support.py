"""A computer_use tool bound to an owner task and the simulated cua-driver over real stdio, for tests.

``open_desk`` writes a home with ``config.toml``, points ``computer_use.driver_command`` at the simulated
driver (profile, faults, journal and state files in the test's folder), starts a ``SessionRuntime``
(counting what it enters) and builds the session's ``ComputerUse``. ``Desk.act`` runs one call the way the
turn loop does (validate → approval → run, a ``ToolError`` becomes a failed outcome with its code);
``Desk.journal``/``Desk.state`` are the oracle.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from fixtures.cua_driver_sim import command, read_journal, read_state
from fixtures.cua_driver_sim.launcher import DesktopState, FaultSpec, JournalEntry
from hermes_acp.computer_use import ComputerUse
from hermes_acp.config import Settings, load_settings
from hermes_acp.core import ModeId, TextPart
from hermes_acp.errors import ToolError
from hermes_acp.providers.base import ModelProvider
from hermes_acp.providers.catalog import CatalogModel, ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.tools.base import ToolOutcome
from hermes_acp.tools.context import ApprovalRequest, ToolContext, Workspace
from tests.fakes.server import scripted_model

from .owner import CountingRuntime

__all__ = ["Desk", "catalog_model", "open_desk", "payload"]


def catalog_model(model_id: str = "scripted:model", *, vision: bool = True) -> CatalogModel:
    """A usable catalog model; computer_use tests default to one with vision."""
    return scripted_model(model_id, vision=vision)


def payload(outcome: ToolOutcome) -> dict[str, Any]:
    """The JSON the model reads first in a computer_use result."""
    first = outcome.parts[0]
    assert isinstance(first, TextPart)
    value = json.loads(first.text) if first.text.startswith("{") else {"error": first.text}
    assert isinstance(value, dict)
    return value


async def _noop(_content: Any) -> None:
    return None


@dataclass
class Desk:
    cu: ComputerUse
    owner: CountingRuntime
    settings: Settings
    folder: Path
    approvals: list[ApprovalRequest]

    def ctx(self, mode: ModeId = "dont_ask") -> ToolContext:
        return ToolContext(
            session_id="s-test",
            turn_id="t-test",
            tool_call_id="call-test",
            workspace=Workspace(self.folder),
            mode=mode,
            progress=_noop,
            cache_dir=self.settings.cache_dir,
            images=self.cu.gate,
        )

    async def act(self, **arguments: Any) -> ToolOutcome:
        """One call as the turn loop runs it; errors come back as failed outcomes with their code."""
        tool, ctx = self.cu.tool, self.ctx()
        try:
            parsed = tool.validate(arguments)
            request = await tool.approval(parsed, ctx)
            if request is not None:
                self.approvals.append(request)
            with anyio.fail_after(20):
                return await tool.run(parsed, ctx)
        except ToolError as exc:
            text = f"Error ({exc.code}): {exc}"
            return ToolOutcome(parts=[TextPart(text=text)], failed=True, error_code=exc.code)

    async def capture(self, app: str = "Calculator", **arguments: Any) -> dict[str, int]:
        """Capture ``app``; the element indices by label."""
        outcome = await self.act(action="capture", app=app, **arguments)
        assert not outcome.failed, outcome.parts
        return {str(row["label"]): int(row["index"]) for row in payload(outcome).get("elements", [])}

    def journal(self) -> list[JournalEntry]:
        return read_journal(self.folder / "journal.jsonl")

    def state(self) -> DesktopState:
        return read_state(self.folder / "state.json")

    def state_exists(self) -> bool:
        return (self.folder / "state.json").exists()


@asynccontextmanager
async def open_desk(
    tmp_path: Path,
    *,
    profile: str = "0.37",
    faults: FaultSpec = None,
    config: str = "",
    model: CatalogModel | None = None,
    models: Sequence[CatalogModel] = (),
    providers: Mapping[str, ModelProvider] | None = None,
) -> AsyncIterator[Desk]:
    folder = tmp_path / "desk"
    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    argv, env = command(profile=profile, faults=faults, journal=folder / "journal.jsonl", state=folder / "state.json")
    (home / "config.toml").write_text(config)
    settings = load_settings({"HERMES_CUA_DRIVER_CMD": shlex.join(argv)}, home=home)
    current = model or catalog_model()
    catalog = ModelCatalog([current, *models], current.id)
    registry = ProviderRegistry(settings, {}, overrides=providers)
    owner = CountingRuntime()
    async with anyio.create_task_group() as group:
        await group.start(owner.run)
        cu = ComputerUse.for_session(
            owner, settings, model=lambda: current, catalog=catalog, providers=registry, env=env
        )
        try:
            yield Desk(cu, owner, settings, folder, [])
        finally:
            await owner.aclose()
