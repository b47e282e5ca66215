"""Every evasion of the hard blocks is refused in every mode, for local commands and the editor's terminals, before
anything runs: a shell shim first on PATH records every command a shell was asked to run, and stays silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_acp.core import ModeId
from hermes_acp.errors import HardBlockedError
from hermes_acp.tools.approval import Approval
from hermes_acp.tools.terminal import TerminalTool
from tests.fakes.editor_client import EditorClient
from tests.tools.helpers import call, context
from tests.tools.test_terminal import ClientTerminals

from .evasions import EVASIONS
from .support import shell_shim

pytestmark = pytest.mark.anyio

MODES: tuple[ModeId, ...] = ("default", "accept_edits", "plan", "dont_ask", "read_only")


@pytest.mark.parametrize("command", list(EVASIONS.values()), ids=list(EVASIONS))
async def test_refused_in_every_mode_locally_and_in_the_editor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    shim = shell_shim(tmp_path / "ws" / ".bin")
    monkeypatch.setenv("PATH", shim.path())
    tool = TerminalTool()
    parsed = tool.validate({"command": command})
    client = EditorClient()
    try:
        for mode in MODES:
            for terminals in (None, ClientTerminals(client)):
                ctx = context(tmp_path / "ws", mode=mode, terminals=terminals)
                with pytest.raises(HardBlockedError, match="refused in every mode") as refused:
                    await tool.approval(parsed, ctx)
                assert "do not run it or a variant of it" in str(refused.value)
                with pytest.raises(HardBlockedError):
                    await tool.run(parsed, Approval(ctx.tool_call_id), ctx)
    finally:
        await client.aclose()
    assert shim.calls() == [], "a shell was started for a refused command"
    assert client.methods() == [], "the editor was asked to run a refused command"


async def test_the_shim_sees_commands_that_do_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: an allowed command goes through the shim, locally and in the editor's terminal."""
    shim = shell_shim(tmp_path / "ws" / ".bin")
    monkeypatch.setenv("PATH", shim.path())
    await call(TerminalTool(), context(tmp_path / "ws", mode="dont_ask"), command="echo local")
    client = EditorClient()
    try:
        await call(TerminalTool(), context(tmp_path / "ws", terminals=ClientTerminals(client)), command="echo editor")
    finally:
        await client.aclose()
    assert shim.calls() == ["-c echo local", "-c echo editor"]
