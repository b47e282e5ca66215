"""Every structuredContent the fake sends validates against the recorded 0.37 outputSchema of its tool, as the Linux
build and as the macOS build (``--platform macos``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from .support import CALC, EDITOR, open_sim

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("platform", ["linux", "macos"])
async def test_successes_and_refusals_match_the_recorded_output_schemas(tmp_path: Path, platform: str) -> None:
    checked: list[tuple[str, bool]] = []
    async with open_sim(tmp_path, platform=platform) as sim:
        schemas = {name: tool.get("outputSchema") for name, tool in (await sim.tools()).items()}

        async def check(tool: str, **arguments: Any) -> dict[str, Any]:
            result = await sim.call(tool, **arguments)
            schema = schemas[tool]
            if schema is not None:
                jsonschema.validate(result.structured, schema)
                checked.append((tool, result.is_error))
            return result.structured

        await check("start_session", session="schemas")
        await check("list_apps")
        await check("list_windows")
        await check("get_screen_size")
        await check("get_cursor_position")
        await check("get_desktop_state")
        await check("get_window_state", **CALC)
        both = await check("get_window_state", **EDITOR, tree_format="both")
        title, body, bold, _save = (element["element_token"] for element in both["elements"])
        await check("type_text", **EDITOR, element_token=title, text="x")
        await check("set_value", **EDITOR, element_token=body, value="y")
        await check("click", **EDITOR, element_token=bold)
        await check("click", **EDITOR, element_token=bold, delivery_mode="foreground")
        await check("double_click", **EDITOR, element_token=bold, delivery_mode="foreground")
        await check("right_click", **EDITOR, element_token=bold, delivery_mode="foreground")
        await check("press_key", **EDITOR, key="tab", delivery_mode="foreground")
        await check("hotkey", **EDITOR, keys=["ctrl", "b"], delivery_mode="foreground")
        await check("scroll", **EDITOR, direction="up", delivery_mode="foreground")
        await check("drag", **EDITOR, from_x=1, from_y=1, to_x=9, to_y=9, delivery_mode="foreground")
        await check("get_window_state", **EDITOR, since="latest", tree_format="elements")
        await check("verify_state", **EDITOR, expect=[{"element": {"selector": {"label_contains": "Bold"}}}])
        await check("set_agent_cursor_enabled", session="schemas", enabled=False)
        await check("click", **EDITOR, element_token=bold)
        await check("press_key", **EDITOR, key="tab")
        await check("get_window_state", pid=EDITOR["pid"], window_id=1)
        await check("end_session", session="schemas")
        await check("list_windows", session="schemas")
    assert ("click", True) in checked
    assert ("list_windows", True) in checked
    assert len(checked) == 26
