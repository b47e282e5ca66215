"""The official TypeScript SDK's ACP v2 client (2.4.0, ``experimental/v2/unstable``) reads our v2 rendering: the
whole v2 flow (``v2_client.mjs``) against an agent whose frames all come from the production v2 modules
(``tests/fakes/v2_agent.py``, until the server routes v2 itself), every frame in both directions checked against
the v2 schema and its closed lists, and every update the agent sent handed over by the SDK (it drops an update it
cannot parse without a word)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.acp_schema import FrameLog, negotiated_version
from tests.fakes.ts_sdk import REPO, ts_sdk

pytestmark = pytest.mark.anyio


def _sent(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [m["params"] for d, m in report["frames"] if d == "to_client" and m.get("method") == "session/update"]


def _index(report: dict[str, Any], predicate: Any) -> int:
    return next(i for i, (_, m) in enumerate(report["frames"]) if predicate(m))


async def test_the_ts_sdk_v2_client_runs_the_whole_flow_on_our_v2_rendering(tmp_path: Path) -> None:
    sdk = ts_sdk()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "TS_CLIENT_CWD": str(tmp_path),
    }
    report = await sdk.run("v2_client.mjs", ["stdio", sys.executable, "-m", "tests.fakes.v2_agent"], env=env)

    log = FrameLog()
    for direction, message in report["frames"]:
        log.add(direction, message)
    assert negotiated_version(log.frames) == 2
    log.check()
    assert report["updates"] == _sent(report), "the SDK handed over every update the agent sent"

    assert report["initialize"]["protocolVersion"] == 2
    assert report["initialize"]["_meta"]["hermes"]["remote"]["serverEpoch"]
    assert report["seen"][0] == "state_update" and report["seen"][-1] == "stop:end_turn"
    assert {"user_message", "agent_thought", "agent_message", "terminal_update", "terminal_output_chunk"} <= set(
        report["seen"]
    )
    user = next(u["update"] for u in report["updates"] if u["update"]["sessionUpdate"] == "user_message")
    assert user["messageId"] == report["prompt"]["messageId"], "the prompt's answer names its user message"
    assert len(report["permissions"]) == 2, "one per turn that ran a command"
    permission = report["permissions"][0]
    assert permission["title"] == "Run this command?" and permission["subject"]["type"] == "tool_call"

    assert report["first"] == report["repeated"], "a prompt resent with its operation id is answered as the first"
    assert report["seenOnce"].count("user_message") == 1, "and applied once"
    assert report["cursor"] and report["stopped"][-1] == "stop:cancelled"
    assert report["held"]["messageId"]

    resumed = report["frames"][report["resumeAt"] :]
    answer = _index(
        {"frames": resumed}, lambda m: m.get("id") is not None and "result" in m and m.get("result") == report["resume"]
    )
    replayed = [m["params"]["update"] for _, m in resumed[:answer] if m.get("method") == "session/update"]
    states = [u for u in replayed if u["sessionUpdate"] == "state_update"]
    assert states == [replayed[-1]] and states[0]["state"] == "idle", "the history, then exactly one snapshot"
    assert report["resume"]["_meta"]["hermes"]["recovery"] == "full"

    rejoined = report["frames"][report["rejoinAt"] :]
    answer = _index({"frames": rejoined}, lambda m: "result" in m and m.get("result") == report["rejoin"])
    after = [m["params"] for _, m in rejoined[:answer] if m.get("method") == "session/update"]
    assert report["rejoin"]["_meta"]["hermes"]["recovery"] == "replay"
    assert [p["update"]["sessionUpdate"] for p in after] == ["user_message", "state_update"], (
        "only the held prompt came after the cursor (its end renders nothing on a replay)"
    )
    assert after[0]["_meta"]["hermes"]["cursor"] != report["cursor"]

    assert report["status"]["status"] == "open" and report["status"]["state"]["state"] == "idle"
    assert report["toolCancel"]["code"] == -32602
    assert report["resumeMissing"]["code"] == -32002 and report["resumeMissing"]["data"]["sessionId"] == "missing"
    assert report["close"] == {} and report["logout"] == {}
