"""The probe's e2e check against the real ``python -m hermes_acp`` and the scripted model server: a step the agent
does not take (no tool call for the computer prompt) is recorded as skipped, and the rest of the flow still runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures.model_server import serve_model_server
from probes.agent import solid_png
from probes.checks import ProbeOptions
from probes.probe import run_checks
from tests.fakes.agent_process import REPO, portable_env
from tests.fakes.sandbox_pin import pin_sandbox

pytestmark = pytest.mark.anyio

NO_COMPUTER: dict[str, Any] = {
    "name": "no-computer",
    "responses": [
        {"match": {"last_message_contains": "essay"}, "repeat": True, "hold_after_chunks": 1, "steps": [{"text": "x"}]},
        {"repeat": True, "steps": [{"text": "Nothing to do with tools here."}]},
    ],
}


async def test_e2e_records_a_skipped_computer_step_and_still_runs_cancel_kill_and_reload(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir()
    workspace.mkdir()
    async with serve_model_server(NO_COMPUTER) as server:
        (home / "config.toml").write_text(
            pin_sandbox(
                f'[model]\ndefault = "fx:m"\n[providers.fx]\nkind = "openai"\nbase_url = "{server.openai_base_url}"\n'
                'models = [{ id = "m", vision = true }]\n'
            )
        )
        options = ProbeOptions(
            command=[sys.executable, "-m", "hermes_acp"],
            env={"HERMES_ACP_HOME": str(home), "HOME": str(tmp_path), "PYTHONPATH": str(REPO), **portable_env()},
            cwd=workspace,
            stderr=tmp_path / "agent.stderr",
            out_dir=tmp_path / "out",
            timeout_s=30,
            image=solid_png(),
        )
        (result,) = await run_checks(["e2e"], options)
    assert result.status == "pass", result.detail
    assert "computer skipped (the agent made no tool call for the computer prompt)" in result.detail
    for step in ("cancel", "killed", "listed", "replayed", "continued end_turn"):
        assert step in result.detail
