"""The official TypeScript SDK's client (2.4.0) drives the real agent process over stdio: handshake, a new
session and a streamed prompt against the scripted model server, every frame checked against the ACP schema.

This is the lane's own proof (``.ci/ts-sdk-setup.sh``); features that TS-SDK-based clients use are tested with
scripts of their own beside this one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fixtures.model_server import serve_model_server
from tests.fakes.acp_schema import FrameLog
from tests.fakes.ts_sdk import agent_env, ts_sdk

pytestmark = pytest.mark.anyio

SCENARIO = {
    "name": "ts-sdk",
    "models": ["m"],
    "responses": [{"repeat": True, "steps": [{"text": "Hello from hermes."}]}],
}


async def test_the_ts_sdk_client_streams_a_prompt_over_stdio(tmp_path: Path) -> None:
    sdk = ts_sdk()
    async with serve_model_server(SCENARIO) as server:
        env = agent_env(tmp_path, server.openai_base_url, TS_CLIENT_PROMPT="say hello")
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
