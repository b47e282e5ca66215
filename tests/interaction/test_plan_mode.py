"""Plan mode over the wire: read-only tools and the hand-off only, a write refused, "Ready to code?" accepted
(the mode switches at once and the rest of the turn can edit), rejected (planning goes on) and cancelled (the
turn stops); plans by id for a client that advertises ``plan``, the whole plan for any other, live and replayed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from hermes_acp.core import ToolResultMessage
from hermes_acp.providers.scripted import ScriptedProvider, text_reply, tool_reply
from tests.fakes.server import Pair, open_pair
from tests.fakes.tools import call

pytestmark = pytest.mark.anyio

PLAN = "## Plan\n1. Write `notes.txt` with the findings.\n2. Check it reads back."
READ_ONLY_TOOLS = ["read_file", "list_files", "search_files", "update_plan", "delegate", "exit_plan_mode"]
"""What plan mode offers: the read-only built-in tools, delegate (its children explore, read only), the hand-off."""


async def planning(pair: Pair) -> str:
    session_id = await pair.new_session()
    with anyio.fail_after(5):
        await pair.conn.set_session_mode(session_id=session_id, mode_id="plan")
    return session_id


def result_text(provider: ScriptedProvider, request: int, call_id: str) -> str:
    results = [m for m in provider.requests[request].messages if isinstance(m, ToolResultMessage)]
    result = next(r for r in results if r.tool_call_id == call_id)
    return "".join(getattr(p, "text", "") for p in result.parts)


def offered(provider: ScriptedProvider, request: int) -> list[str]:
    return [t.name for t in provider.requests[request].tools]


async def test_plan_mode_offers_read_only_tools_and_the_hand_off_and_a_write_is_refused(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            tool_reply(call("w1", "write_file", path="notes.txt", content="x")),
            text_reply("I will plan instead."),
        ]
    )
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await planning(pair)
        response = await pair.prompt(session_id, "write notes")
        card = pair.client.cards(session_id)["w1"]

    assert response.stop_reason == "end_turn"
    assert offered(provider, 0) == READ_ONLY_TOOLS
    assert card["status"] == "failed"
    assert "no tool 'write_file' is available now (the session is in plan mode)" in result_text(provider, 1, "w1")
    assert not (pair.workspace / "notes.txt").exists()
    assert pair.client.permissions == [], "nothing was asked"


async def test_ready_to_code_accepted_switches_the_mode_at_once_and_the_turn_goes_on_editing(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            tool_reply(call("h1", "exit_plan_mode", plan=PLAN)),
            tool_reply(call("w1", "write_file", path="notes.txt", content="findings")),
            text_reply("Done."),
        ]
    )
    async with open_pair(tmp_path, provider=provider) as pair:
        pair.client.answers = ["accept_edits"]
        session_id = await planning(pair)
        response = await pair.prompt(session_id, "plan, then do it")
        question = pair.client.permissions[0]
        order = [(u["sessionUpdate"], u.get("toolCallId"), u.get("currentModeId")) for s, u in pair.client.updates]
        modes = pair.client.of_kind("current_mode_update", session_id)
        hand_off = pair.client.cards(session_id)["h1"]
        with anyio.fail_after(5):
            loaded = await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])

    assert response.stop_reason == "end_turn"
    assert question.tool_call["title"] == "Ready to code?"
    assert question.tool_call["kind"] == "switch_mode"
    assert question.tool_call["content"] == [{"type": "content", "content": {"type": "text", "text": PLAN}}]
    assert [(o["optionId"], o["name"], o["kind"]) for o in question.options] == [
        ("accept_edits", "Yes, and auto-accept edits", "allow_always"),
        ("default", "Yes, and manually approve edits", "allow_once"),
        ("keep_planning", "No, keep planning", "reject_once"),
    ]
    assert [m["currentModeId"] for m in modes] == ["plan", "accept_edits"]
    switched = order.index(("current_mode_update", None, "accept_edits"))
    assert order[switched + 1][0] == "config_option_update", "the options follow the mode"
    assert switched < order.index(("tool_call", "w1", None)), "told at once, before the turn goes on"
    assert hand_off["status"] == "completed"
    assert "now in accept_edits mode" in result_text(provider, 1, "h1")
    assert "write_file" in offered(provider, 1) and "exit_plan_mode" not in offered(provider, 1)
    assert (pair.workspace / "notes.txt").read_text() == "findings", "accept_edits writes without asking"
    assert len(pair.client.permissions) == 1
    assert loaded.modes is not None and loaded.modes.current_mode_id == "accept_edits", "the mode is stored"


async def test_keep_planning_leaves_the_mode_and_tells_the_model_to_ask(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [tool_reply(call("h1", "exit_plan_mode", plan=PLAN)), text_reply("What should change in the plan?")]
    )
    async with open_pair(tmp_path, provider=provider) as pair:
        pair.client.answers = ["keep_planning"]
        session_id = await planning(pair)
        response = await pair.prompt(session_id, "plan it")
        modes = pair.client.of_kind("current_mode_update", session_id)

    assert response.stop_reason == "end_turn"
    assert [m["currentModeId"] for m in modes] == ["plan"], "no switch"
    assert "keep planning" in result_text(provider, 1, "h1")
    assert offered(provider, 1) == READ_ONLY_TOOLS


async def test_a_cancelled_hand_off_stops_the_turn_in_plan_mode(tmp_path: Path) -> None:
    provider = ScriptedProvider([tool_reply(call("h1", "exit_plan_mode", plan=PLAN))])
    async with open_pair(tmp_path, provider=provider) as pair:
        pair.client.answers = ["cancelled"]
        session_id = await planning(pair)
        response = await pair.prompt(session_id, "plan it")
        card = pair.client.cards(session_id)["h1"]
        modes = pair.client.of_kind("current_mode_update", session_id)

    assert response.stop_reason == "cancelled"
    assert card["status"] == "failed"
    assert len(provider.requests) == 1
    assert [m["currentModeId"] for m in modes] == ["plan"]


def plan_frames(pair: Pair, session_id: str) -> list[dict[str, Any]]:
    return [
        u
        for s, u in pair.client.updates
        if s == session_id and u["sessionUpdate"] in ("plan", "plan_update", "plan_removed")
    ]


@pytest.mark.parametrize("plans", [True, False], ids=["plan-capability", "whole-plans"])
async def test_plans_go_by_id_to_a_client_that_takes_them_and_whole_to_others_live_and_replayed(
    tmp_path: Path, plans: bool
) -> None:
    steps = [{"content": "Read the code", "status": "completed"}, {"content": "Write notes", "status": "pending"}]
    provider = ScriptedProvider(
        [
            tool_reply(call("p1", "update_plan", steps=steps)),
            tool_reply(call("h1", "exit_plan_mode", plan=PLAN)),
            tool_reply(call("p2", "update_plan", steps=[])),
            text_reply("Cleared."),
        ]
    )
    capabilities: dict[str, Any] = {"plan": {}} if plans else {}
    async with open_pair(tmp_path, provider=provider, client_capabilities=capabilities) as pair:
        pair.client.answers = ["default"]
        session_id = await planning(pair)
        await pair.prompt(session_id, "plan")
        live = plan_frames(pair, session_id)
        pair.client.clear()
        await pair.conn.close_session(session_id=session_id)
        with anyio.fail_after(5):
            await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
        replayed = plan_frames(pair, session_id)

    entries = [{**step, "priority": "medium"} for step in steps]
    if plans:
        assert live == [
            {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "steps", "entries": entries}},
            {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "proposal", "content": PLAN}},
            {"sessionUpdate": "plan_removed", "planId": "steps"},
        ]
    else:
        assert live == [
            {"sessionUpdate": "plan", "entries": entries},
            {"sessionUpdate": "plan", "entries": []},
        ]
    assert replayed == live
