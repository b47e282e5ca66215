"""The official TypeScript SDK's client (2.4.0) drives the real agent process over stdio: handshake, a new
session and a streamed prompt against the scripted model server, every frame checked against the ACP schema.

This is the lane's own proof (``.ci/ts-sdk-setup.sh``); features that TS-SDK-based clients use are tested with
scripts of their own beside this one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from fixtures.model_server import serve_model_server
from tests.fakes.acp_schema import FrameLog
from tests.fakes.sandbox_pin import pin_sandbox
from tests.fakes.ts_sdk import REPO, ts_sdk

pytestmark = pytest.mark.anyio

SCENARIO = {
    "name": "ts-sdk",
    "models": ["m"],
    "responses": [{"repeat": True, "steps": [{"text": "Hello from hermes."}]}],
}


async def test_the_ts_sdk_client_streams_a_prompt_over_stdio(tmp_path: Path) -> None:
    sdk = ts_sdk()
    async with serve_model_server(SCENARIO) as server:
        home = tmp_path / "home"
        home.mkdir()
        (home / "config.toml").write_text(
            pin_sandbox(f'[providers.fx]\nkind = "openai"\nbase_url = "{server.openai_base_url}"\nmodels = ["m"]\n')
        )
        workspace = tmp_path / "workspace"
        workspace.mkdir()
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "HERMES_ACP_HOME": str(home),
            "PYTHONPATH": str(REPO),
            "TS_CLIENT_CWD": str(workspace),
            "TS_CLIENT_PROMPT": "say hello",
        }
        report = await sdk.run("stdio_client.mjs", [sys.executable, "-m", "hermes_acp"], env=env)

    assert report["initialize"]["protocolVersion"] == 1
    assert report["prompt"]["stopReason"] == "end_turn"
    chunks = [
        update["update"]["content"]["text"]
        for update in report["updates"]
        if update["sessionId"] == report["sessionNew"]["sessionId"]
        and update["update"]["sessionUpdate"] == "agent_message_chunk"
    ]
    assert "".join(chunks) == "Hello from hermes."
    log = FrameLog()
    for direction, message in report["frames"]:
        log.add(direction, message)
    assert len(log.frames) >= 6
    log.check()
