"""computer_use through the real ``python -m hermes_acp`` process: the scripted model captures the simulated
Calculator, clicks 2 + 3 = and verifies 5; the editor gets the screenshots as image content and the approvals as
permission requests carrying the latest screenshot. The model's script is the demo's (probes/scenarios/demo.json)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import anyio
import pytest

from fixtures.cua_driver_sim import command as simulated_driver
from fixtures.cua_driver_sim import read_journal, read_state
from tests.fakes.acp_client import RecordingClient
from tests.fakes.agent_process import REPO, spawn_agent

pytestmark = pytest.mark.anyio
SCENARIO = json.loads((REPO / "probes" / "scenarios" / "demo.json").read_text())
KEYS = ["2", "+", "3", "="]


async def test_the_model_adds_2_and_3_on_the_simulated_calculator_through_the_real_process(tmp_path: Path) -> None:
    argv, env = simulated_driver(journal=tmp_path / "journal.jsonl", state=tmp_path / "calculator.json")
    client = RecordingClient(answers=["allow_always"])
    async with spawn_agent(
        tmp_path, SCENARIO, env={**env, "HERMES_CUA_DRIVER_CMD": shlex.join(argv)}, client=client
    ) as agent:
        session_id = await agent.new_session()
        with anyio.fail_after(60):
            response = await agent.prompt(session_id, "Use the calculator to compute 2 + 3 and check the result.")
        cards = client.cards(session_id)
        permissions = list(client.permissions)
        offered = agent.offered_tools()[0]
        agent.assert_json_rpc_only()
    assert response.stop_reason == "end_turn"
    assert "computer_use" in offered
    assert read_state(tmp_path / "calculator.json")["calculator"]["display"] == "5"
    delivered = [(entry.get("element") or {}).get("label") for entry in read_journal(tmp_path / "journal.jsonl")]
    assert delivered == KEYS, "every key was delivered exactly once"
    capture = cards["call_demo_capture"]
    assert capture["status"] == "completed"
    images = [c["content"] for c in capture["content"] if c["content"]["type"] == "image"]
    assert len(images) == 1
    assert images[0]["mimeType"] == "image/png"
    assert all(c["content"]["type"] != "text" or "base64" not in c["content"]["text"] for c in capture["content"]), (
        "screenshots never travel as base64 text"
    )
    assert [cards[c]["status"] for c in ("call_demo_2", "call_demo_plus", "call_demo_3", "call_demo_equals")] == [
        "completed"
    ] * 4
    assert cards["call_demo_verify"]["rawOutput"]["satisfied"] is True
    (asked,) = permissions  # "allow always" for background input covers the later clicks
    assert asked.tool_call["toolCallId"] == "call_demo_2"
    assert any(c["content"]["type"] == "image" for c in asked.tool_call["content"])
    assert {o["kind"] for o in asked.options} >= {"allow_once", "allow_always", "reject_once"}
