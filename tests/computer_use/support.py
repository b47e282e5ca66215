"""A computer_use tool bound to an owner task and the simulated cua-driver over real stdio, for tests.

``open_desk`` writes a home with ``config.toml``, points ``computer_use.driver_command`` at the simulated
driver (profile, faults, journal and state files in the test's folder), starts a ``SessionRuntime``
(counting what it enters) and builds the session's ``ComputerUse``. ``Desk.act`` runs one call the way the
turn loop does (validate → approval → run, a ``ToolError`` becomes a failed outcome with its code);
``Desk.journal``/``Desk.state`` are the oracle. ``use_busy_pixels`` swaps the simulator's flat screenshots for
busy, screenshot-like ones of the same size (the simulator's compress far below the image budget).
"""

from __future__ import annotations

import base64
import io
import json
import random
import shlex
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from PIL import Image, ImageDraw, ImageFont

from fixtures.cua_driver_sim import command, read_journal, read_state
from fixtures.cua_driver_sim.launcher import DesktopState, FaultSpec, JournalEntry
from hermes_acp.computer_use import ComputerUse
from hermes_acp.computer_use.driver import DriverClient
from hermes_acp.computer_use.results import DriverReply
from hermes_acp.config import Settings, load_settings
from hermes_acp.core import ModeId, TextPart
from hermes_acp.errors import ToolError
from hermes_acp.images.gate import SessionImageGate
from hermes_acp.providers.base import ModelProvider
from hermes_acp.providers.catalog import CatalogModel, ModelCatalog
from hermes_acp.providers.describe import describer_for
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.tools.base import ToolOutcome
from hermes_acp.tools.context import ApprovalRequest, ToolContext, ToolEnvironment, Workspace
from tests.fakes.sandbox_pin import pin_sandbox
from tests.fakes.server import scripted_model
from tests.fakes.tools import approved

from .owner import CountingRuntime

__all__ = ["BUSY_WINDOW", "Desk", "busy_png", "catalog_model", "open_desk", "payload", "use_busy_pixels"]

BUSY_WINDOW = [{"knob": "big_window", "app": "calculator", "width": 1500, "height": 950}]
"""A Calculator window the simulator delivers at 1346x852 (with ``use_busy_pixels``: about 740 KB of PNG)."""
_WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "window", "button", "total")


def catalog_model(model_id: str = "scripted:model", *, vision: bool = True) -> CatalogModel:
    """A usable catalog model; computer_use tests default to one with vision."""
    return scripted_model(model_id, vision=vision)


def payload(outcome: ToolOutcome[Any]) -> dict[str, Any]:
    """The JSON the model reads first in a computer_use result."""
    first = outcome.parts[0]
    assert isinstance(first, TextPart)
    value = json.loads(first.text) if first.text.startswith("{") else {"error": first.text}
    assert isinstance(value, dict)
    return value


def busy_png(width: int, height: int, seed: int = 7) -> str:
    """A deterministic screenshot-like PNG (base64): text lines beside a smooth, slightly noisy panel."""
    rng = random.Random(seed)
    image = Image.new("RGB", (width, height), (246, 246, 246))
    panel_w, panel_h = width // 3, height // 2
    noise = Image.frombytes("L", (panel_w, panel_h), bytes(rng.randrange(96, 160) for _ in range(panel_w * panel_h)))
    gradient = Image.linear_gradient("L").resize((panel_w, panel_h))
    image.paste(Image.merge("RGB", (gradient, noise, Image.blend(gradient, noise, 0.5))), (width - panel_w - 10, 40))
    draw, font = ImageDraw.Draw(image), ImageFont.load_default()
    for y in range(40, height - 12, 14):
        x = 10
        while x < width - panel_w - 30:
            word = rng.choice(_WORDS)
            draw.text((x, y), word, fill=(rng.randrange(0, 90),) * 3, font=font)
            x += 7 * len(word) + 6
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def use_busy_pixels(driver: DriverClient) -> None:
    """Replace every screenshot the driver returns with a busy one of the same size (made once per size)."""
    made: dict[tuple[int, int], str] = {}
    call = driver.call

    async def busy_call(tool: str, arguments: Mapping[str, Any]) -> DriverReply:
        reply = await call(tool, arguments)
        width, height = reply.structured.get("screenshot_width"), reply.structured.get("screenshot_height")
        if reply.images and isinstance(width, int) and isinstance(height, int):
            if (width, height) not in made:
                made[width, height] = busy_png(width, height)
            reply.images = [("image/png", made[width, height])]
        return reply

    driver.call = busy_call  # type: ignore[method-assign]


async def _noop(_content: Any) -> None:
    return None


def image_gate(
    settings: Settings, model: CatalogModel, catalog: ModelCatalog, providers: ProviderRegistry
) -> SessionImageGate:
    """The session's image gate as the session builds it: the model's vision, the auxiliary describer if any."""
    return SessionImageGate(settings, model=lambda: model, describer=describer_for(settings, catalog, providers))


@dataclass
class Desk:
    cu: ComputerUse
    gate: SessionImageGate
    owner: CountingRuntime
    settings: Settings
    folder: Path
    approvals: list[ApprovalRequest]

    def ctx(self, mode: ModeId = "dont_ask") -> ToolContext:
        env = ToolEnvironment(
            session_id="s-test", workspace=Workspace(self.folder), cache_dir=self.settings.cache_dir, images=self.gate
        )
        return ToolContext(env=env, turn_id="t-test", tool_call_id="call-test", mode=mode, progress=_noop)

    async def act(self, **arguments: Any) -> ToolOutcome[Any]:
        """One call as the turn loop runs it; errors come back as failed outcomes with their code."""
        tool, ctx = self.cu.tool, self.ctx()
        try:
            parsed = tool.validate(arguments)
            approval = await approved(tool, parsed, ctx)
            if approval.request is not None:
                self.approvals.append(approval.request)
            with anyio.fail_after(20):
                return await tool.run(parsed, approval, ctx)
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
    driver: Sequence[str] | None = None,
    platform: str = "linux",
) -> AsyncIterator[Desk]:
    """The computer_use tool of one session against the simulated driver (``driver``: another driver command;
    ``platform``: which build of the driver the simulator answers as, ``linux`` or ``macos``)."""
    folder = tmp_path / "desk"
    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    argv, env = command(
        profile=profile,
        faults=faults,
        journal=folder / "journal.jsonl",
        state=folder / "state.json",
        platform=platform,
    )
    (home / "config.toml").write_text(pin_sandbox(config))
    settings = load_settings({"HERMES_CUA_DRIVER_CMD": shlex.join(driver or argv)}, home=home)
    current = model or catalog_model()
    catalog = ModelCatalog([current, *models], current.id)
    registry = ProviderRegistry(settings, {}, overrides=providers)
    owner = CountingRuntime()
    async with anyio.create_task_group() as group:
        await group.start(owner.run)
        gate = image_gate(settings, current, catalog, registry)
        cu = ComputerUse.for_session(owner, settings, gate=gate, env=env)
        try:
            yield Desk(cu, gate, owner, settings, folder, [])
        finally:
            await owner.aclose()
