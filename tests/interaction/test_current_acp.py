"""Today's ACP (schema of ``@agentclientprotocol/sdk`` 2.4.0), each item gated on what the client advertised:
the tool call's ``name``, ``notice`` updates, ``ask_user`` over ``elicitation/create``, ``logout``, ``updatedAt``,
no redundant mode updates, and a permission request the client answers with an error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_acp.core import ToolCallPart, ToolResultMessage
from hermes_acp.providers.scripted import ScriptedProvider, text_reply, tool_reply
from tests.fakes.server import open_pair, scripted_model
from tests.fakes.tools import args

pytestmark = pytest.mark.anyio
NOTICES: dict[str, Any] = {"session": {"notices": {}}}
ELICITATION: dict[str, Any] = {"elicitation": {"form": {}}}
UNUSABLE_SERVER = {"name": "ghost", "command": "no-such-command-anywhere", "args": [], "env": []}


def _tool_results(provider: ScriptedProvider, request: int) -> list[str]:
    return [
        "".join(getattr(p, "text", "") for p in m.parts)
        for m in provider.requests[request].messages
        if isinstance(m, ToolResultMessage)
    ]


async def test_every_tool_call_names_the_tool_as_the_model_was_offered_it(tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "a.txt").write_text("hello")
    provider = ScriptedProvider(
        [tool_reply(ToolCallPart(id="r1", name="read_file", arguments=args(path="a.txt"))), text_reply("done")]
    )
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "read it")
    (started,) = pair.client.of_kind("tool_call", session_id)
    assert started["name"] == "read_file"
    assert started["toolCallId"] == "r1"


async def test_warnings_are_notice_updates_for_a_client_that_takes_notices(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("Ready.")])
    async with open_pair(tmp_path, provider=provider, client_capabilities=NOTICES) as pair:
        session_id = await pair.new_session(mcp_servers=[UNUSABLE_SERVER])
        await pair.prompt(session_id, "hello")
        events = [e.event for e in await pair.store.load_events(session_id)]
    (notice,) = pair.client.of_kind("notice", session_id)
    assert notice["severity"] == "warning"
    assert "ghost" in notice["title"] and "no-such-command-anywhere" in notice["title"]
    assert pair.client.text(session_id) == "Ready.", "no agent text stands in for the notice"
    assert all(e.kind != "notice_added" for e in events), "notices are live only: never stored, never replayed"


async def test_without_the_capability_the_same_warning_is_agent_text_and_no_notice_is_sent(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("Ready.")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session(mcp_servers=[UNUSABLE_SERVER])
        await pair.prompt(session_id, "hello")
    assert pair.client.of_kind("notice", session_id) == []
    assert "⚠ MCP server 'ghost' could not be started" in pair.client.text(session_id)


@pytest.mark.parametrize(
    ("answer", "told"),
    [
        ({"action": "accept", "content": {"answer": "Postgres"}}, "The user answered: Postgres"),
        ({"action": "decline"}, "The user declined to answer."),
        ({"action": "cancel"}, "The user dismissed the question without answering."),
    ],
)
async def test_ask_user_asks_through_elicitation_and_the_model_gets_the_answer(
    tmp_path: Path, answer: dict[str, Any], told: str
) -> None:
    question = args(question="Which database?", choices=["Postgres", "SQLite"])
    provider = ScriptedProvider(
        [tool_reply(ToolCallPart(id="q1", name="ask_user", arguments=question)), text_reply("noted")]
    )
    async with open_pair(tmp_path, provider=provider, client_capabilities=ELICITATION) as pair:
        pair.client.elicitation_answers.append(answer)
        session_id = await pair.new_session()
        response = await pair.prompt(session_id, "set it up")
    offered = [tool.name for tool in provider.requests[0].tools]
    (asked,) = pair.client.elicitations
    assert "ask_user" in offered
    assert asked["message"] == "Which database?"
    assert asked["kind"] == "ElicitationFormSessionMode", "a form tied to the session"
    assert asked["sessionId"] == session_id and asked["toolCallId"] == "q1", "tied to the session and the call"
    assert asked["requestedSchema"]["properties"]["answer"]["enum"] == ["Postgres", "SQLite"]
    assert _tool_results(provider, 1) == [told]
    assert pair.client.cards(session_id)["q1"]["status"] == "completed"
    assert response.stop_reason == "end_turn"


async def test_ask_user_is_not_offered_to_a_client_that_cannot_ask(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("ok")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "hi")
    assert "ask_user" not in [tool.name for tool in provider.requests[0].tools]


async def test_a_permission_request_answered_with_an_error_refuses_the_call_with_the_reason(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            tool_reply(ToolCallPart(id="w1", name="write_file", arguments=args(path="out.txt", content="x"))),
            text_reply("could not write"),
        ]
    )
    async with open_pair(tmp_path, provider=provider) as pair:
        pair.client.answers.append("error")
        session_id = await pair.new_session()
        response = await pair.prompt(session_id, "write it")
        card = pair.client.cards(session_id)["w1"]
    assert response.stop_reason == "end_turn", "the turn goes on"
    assert card["status"] == "failed"
    (result,) = _tool_results(provider, 1)
    assert "could not ask the user" in result and "the permission dialog failed to open" in result
    assert "not run" in result
    assert not (pair.workspace / "out.txt").exists()


async def test_logout_is_advertised_and_answers(tmp_path: Path) -> None:
    async with open_pair(tmp_path, initialize=False) as pair:
        init = await pair.conn.initialize(protocol_version=1)
        response = await pair.conn.logout()
    auth = init.agent_capabilities.auth if init.agent_capabilities else None
    assert auth is not None and auth.logout is not None
    assert response is not None


async def test_a_title_update_carries_when_it_was_set(tmp_path: Path) -> None:
    async with open_pair(tmp_path, provider=ScriptedProvider()) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "/title Release notes")
    (info,) = pair.client.of_kind("session_info_update", session_id)
    assert info["title"] == "Release notes"
    assert info["updatedAt"].endswith("Z") or "+00:00" in info["updatedAt"]


async def test_a_model_switch_sends_the_options_and_no_unchanged_mode(tmp_path: Path) -> None:
    models = [scripted_model("scripted:a"), scripted_model("scripted:b")]
    async with open_pair(tmp_path, provider=ScriptedProvider(), models=models) as pair:
        session_id = await pair.new_session()
        await pair.client.wait_for(lambda: "available_commands_update" in pair.client.kinds(session_id))
        pair.client.clear()
        await pair.conn.set_config_option(config_id="model", session_id=session_id, value="scripted:b")
        after_model = pair.client.kinds(session_id)
        pair.client.clear()
        await pair.conn.set_session_mode(session_id=session_id, mode_id="read_only")
        after_mode = pair.client.kinds(session_id)
    assert after_model == ["config_option_update"]
    assert after_mode == ["current_mode_update", "config_option_update"]
