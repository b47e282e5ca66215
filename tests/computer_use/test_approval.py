"""Approval: none for observation; input asks per action class (background vs foreground scopes) and says what
will happen, with the latest screenshot; read_only mode allows observation only."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.computer_use import SCOPE_BACKGROUND, SCOPE_FOREGROUND
from hermes_acp.core import ImageBlock, TextBlock
from hermes_acp.tools.context import ApprovalRequest, Workspace
from hermes_acp.tools.policy import decide

from .support import Desk, open_desk

pytestmark = pytest.mark.anyio


async def _request(desk: Desk, **arguments: object) -> ApprovalRequest | None:
    tool = desk.cu.tool
    return (await tool.approval(tool.validate(arguments), desk.ctx())).request


async def test_observation_needs_no_approval(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        await desk.capture("Calculator")
        requests = [
            await _request(desk, action="capture", app="Calculator"),
            await _request(desk, action="list_apps"),
            await _request(desk, action="list_windows"),
            await _request(desk, action="wait", seconds=0),
            await _request(desk, action="verify_state", expect=[{"window": {"exists": True}}]),
        ]
    assert requests == [None] * 5


async def test_input_asks_under_its_delivery_scope_and_says_what_will_happen(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        labels = await desk.capture("TextEditor")
        typing = await _request(desk, action="type", element=labels.get("", 0), text="hello there")
        saving = await _request(desk, action="key", keys="ctrl+s", delivery_mode="foreground")
    assert typing is not None and saving is not None
    assert (typing.scope, saving.scope, typing.mutating) == (SCOPE_BACKGROUND, SCOPE_FOREGROUND, True)
    text = typing.content[0]
    assert isinstance(text, TextBlock)
    for expected in ("Type 'hello there'", "text", "TextEditor", "'Untitled'", "background"):
        assert expected in text.text
    assert isinstance(typing.content[1], ImageBlock) and typing.content[1].media_type.startswith("image/")
    assert "foreground" in saving.title.lower() or "[foreground]" in saving.title


def test_always_for_background_never_covers_foreground() -> None:
    workspace = Workspace(Path("/"))
    rules = {SCOPE_BACKGROUND: "allow"}
    background = ApprovalRequest(scope=SCOPE_BACKGROUND, title="click", mutating=True)
    foreground = ApprovalRequest(scope=SCOPE_FOREGROUND, title="click", mutating=True)
    assert decide("default", background, workspace, rules).decision == "allow"  # type: ignore[arg-type]
    assert decide("default", foreground, workspace, rules).decision == "ask"  # type: ignore[arg-type]


async def test_read_only_mode_allows_observation_and_denies_input(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        labels = await desk.capture("Calculator")
        click = await _request(desk, action="click", element=labels["1"])
        capture = await _request(desk, action="capture", app="Calculator")
    assert capture is None
    assert click is not None
    assert decide("read_only", click, Workspace(tmp_path), {}).decision == "deny"


async def test_focus_app_asks_only_when_it_raises_the_window(tmp_path: Path) -> None:
    async with open_desk(tmp_path) as desk:
        binding = await _request(desk, action="focus_app", app="Calculator")
        raising = await _request(desk, action="focus_app", app="Calculator", raise_window=True)
    assert binding is None
    assert raising is not None and raising.scope == SCOPE_FOREGROUND
    assert decide("read_only", raising, Workspace(tmp_path), {}).decision == "deny"
