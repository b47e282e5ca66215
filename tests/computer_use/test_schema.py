"""The model-facing schema: one tool, an action discriminator, byte-identical for every session and driver."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_acp.computer_use import INPUT_SCHEMA, ComputerUseInput
from hermes_acp.computer_use.schema import ACTIONS, schema_text
from hermes_acp.errors import ToolInputError
from hermes_acp.providers.base import ToolSpec

from .support import open_desk

pytestmark = pytest.mark.anyio

EXPECTED_ACTIONS = {
    "capture", "click", "double_click", "right_click", "drag", "scroll", "type", "key", "set_value", "wait",
    "list_apps", "list_windows", "focus_app", "verify_state",
}  # fmt: skip


def _wire(schema: dict[str, object]) -> str:
    return ToolSpec(name="computer_use", description="", input_schema=schema).model_dump_json()


async def test_schema_is_byte_identical_across_sessions_drivers_and_calls(tmp_path: Path) -> None:
    seen: list[str] = []
    for profile in ("0.37", "0.2x", "legacy"):
        async with open_desk(tmp_path / profile, profile=profile) as desk:
            before = _wire(desk.cu.tool.input_schema) + desk.cu.tool.description
            await desk.capture()
            seen += [before, _wire(desk.cu.tool.input_schema) + desk.cu.tool.description]
    assert len(set(seen)) == 1


def test_the_action_enum_is_the_fourteen_actions_and_the_parser_matches_the_schema() -> None:
    assert set(INPUT_SCHEMA["properties"]["action"]["enum"]) == EXPECTED_ACTIONS == set(ACTIONS)
    assert set(INPUT_SCHEMA["properties"]) == set(ComputerUseInput.model_fields)
    assert INPUT_SCHEMA["additionalProperties"] is False
    assert json.loads(schema_text()) == INPUT_SCHEMA


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"action": "click"}, "exactly one of 'element' or 'coordinate'"),
        ({"action": "click", "element": 1, "coordinate": [1, 2]}, "exactly one"),
        ({"action": "type"}, "needs 'text'"),
        ({"action": "key"}, "needs 'keys'"),
        ({"action": "set_value", "value": "x"}, "needs 'element'"),
        ({"action": "drag", "from_element": 1}, "to_element/to_coordinate"),
        ({"action": "click", "element": 1, "window_id": 7}, "choose a target only in capture"),
        ({"action": "wait", "seconds": 31}, "seconds"),
        ({"action": "capture", "bogus": 1}, "unknown argument"),
        ({"action": "click", "element": 1, "bring_to_front": True}, 'bring_to_front needs delivery_mode "foreground"'),
    ],
)
def test_arguments_each_action_needs_are_checked(arguments: dict[str, object], problem: str) -> None:
    from hermes_acp.computer_use.tool import ComputerUseTool

    tool = ComputerUseTool.__new__(ComputerUseTool)
    with pytest.raises(ToolInputError, match=problem):
        tool.validate(arguments)
