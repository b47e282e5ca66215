"""computer_use on the real cua-driver (the desktop lane: Xvfb + AT-SPI + the GTK fixture apps).

The tool, not the raw driver: capture binds the calculator, clicks 2 + 3 = by element, and the app's own state
file says 5; then the form's Name field is typed into by element and the form's state file has the text.
Skipped, with the reason, when the lane is not installed (`bash .ci/desktop-setup.sh`); failed under
`HERMES_REQUIRE_LANES=1`.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.desktop import LaneTools, LaneUnavailable, find_lane_tools, open_desktop
from hermes_acp.computer_use import ComputerUse
from hermes_acp.config import load_settings
from hermes_acp.core import ImagePart, TextPart
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.tools.context import ToolContext, ToolEnvironment, Workspace
from tests.computer_use.support import image_gate
from tests.fakes.lanes import lane_missing
from tests.fakes.tools import approved

from .owner import CountingRuntime
from .support import catalog_model

pytestmark = [pytest.mark.desktop, pytest.mark.anyio]


@pytest.fixture(scope="module")
def lane() -> LaneTools:
    try:
        return find_lane_tools()
    except LaneUnavailable as error:
        lane_missing(str(error))


async def _noop(_content: Any) -> None:
    return None


async def test_computer_use_drives_the_gtk_calculator_and_form(lane: LaneTools, tmp_path: Path) -> None:
    model = catalog_model(vision=True)
    async with open_desktop(tmp_path / "desktop", apps=("calculator", "form"), tools=lane) as desktop:
        settings = load_settings({"HERMES_CUA_DRIVER_CMD": shlex.join(desktop.driver_command)}, home=tmp_path / "home")
        owner = CountingRuntime()
        async with anyio.create_task_group() as group:
            await group.start(owner.run)
            gate = image_gate(settings, model, ModelCatalog([model], model.id), ProviderRegistry(settings, {}))
            cu = ComputerUse.for_session(owner, settings, gate=gate, env=desktop.env)
            env = ToolEnvironment(session_id="s", workspace=Workspace(tmp_path), cache_dir=settings.cache_dir)
            ctx = ToolContext(env=env, turn_id="t", tool_call_id="c", mode="dont_ask", progress=_noop)

            async def act(**arguments: Any) -> dict[str, Any]:
                parsed = cu.tool.validate(arguments)
                approval = await approved(cu.tool, parsed, ctx)  # the hard blocks; dont_ask mode allows the rest
                with anyio.fail_after(30):
                    outcome = await cu.tool.run(parsed, approval, ctx)
                first = outcome.parts[0]
                assert isinstance(first, TextPart) and not outcome.failed, first
                body: dict[str, Any] = json.loads(first.text)
                if arguments["action"] == "capture":
                    assert any(isinstance(p, ImagePart) for p in outcome.parts)
                return body

            calc = await act(action="capture", app="Calculator")
            assert calc["target"]["pid"] == desktop.app("calculator").pid
            keys = {row["label"]: row["index"] for row in calc["elements"]}
            for key in ("2", "+", "3", "="):
                await act(action="click", element=keys[key])
            state = await desktop.app("calculator").wait_for_state(lambda s: s.get("display") == "5")

            form = await act(action="capture", app="Form")
            fields = {row["label"]: row["index"] for row in form["elements"]}
            typed = await act(action="type", element=fields["Name"], text="Ada")
            form_state = await desktop.app("form").wait_for_state(lambda s: s.get("name") == "Ada")
            await owner.aclose()
    assert state["display"] == "5"
    assert form_state["name"] == "Ada"
    assert (typed["effect"], typed["verdict"]["decision"]) == ("confirmed", "done")
