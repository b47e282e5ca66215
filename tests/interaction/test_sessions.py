"""Session lifecycle over the wire: new, load (replay), resume, fork, list, close, delete."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from acp import RequestError

from hermes_acp.core import ToolCallPart
from hermes_acp.providers.scripted import ScriptedProvider, text_reply, tool_reply
from tests.fakes.server import open_pair, open_raw

pytestmark = pytest.mark.anyio


async def test_new_session_response_carries_modes_config_options_and_legacy_models(tmp_path: Path) -> None:
    async with open_raw(tmp_path, provider=ScriptedProvider()) as raw:
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        await raw.response(1)
        cwd = str(tmp_path)
        await raw.send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}})
        result = (await raw.response(2))["result"]
        after = await raw.receive()
    assert set(result) == {"sessionId", "modes", "configOptions", "models"}
    assert result["modes"]["currentModeId"] == "default"
    modes = [m["id"] for m in result["modes"]["availableModes"]]
    assert modes == ["default", "accept_edits", "plan", "dont_ask", "read_only"]
    options = {o["id"]: o for o in result["configOptions"]}
    assert options["mode"]["category"] == "mode" and options["mode"]["type"] == "select"
    assert options["model"]["category"] == "model" and options["model"]["currentValue"] == "scripted:model"
    assert result["models"] == {
        "currentModelId": "scripted:model",
        "availableModels": [{"modelId": "scripted:model", "name": "model", "description": "scripted"}],
    }
    # available_commands_update comes after the response, never before it.
    assert after["method"] == "session/update"
    assert after["params"]["update"]["sessionUpdate"] == "available_commands_update"


async def test_new_session_accepts_additional_directories_and_lists_them(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    async with open_pair(tmp_path) as pair:
        session_id = await pair.new_session(additional_directories=[str(extra)])
        listed = await pair.conn.list_sessions()
    (info,) = [s for s in listed.sessions if s.session_id == session_id]
    assert info.additional_directories == [str(extra)]


async def test_load_replays_history_before_responding_and_keeps_ids(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            tool_reply(
                ToolCallPart(id="call_plan_1", name="update_plan", arguments='{"steps":[{"content":"look"}]}'),
                text="Planning.",
            ),
            text_reply("Done looking."),
        ]
    )
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        with anyio.fail_after(5):
            await pair.prompt(session_id, "look around")
        await pair.client.wait_for(lambda: bool(pair.client.of_kind("session_info_update", session_id)))
        live = list(pair.client.updates)
        pair.client.clear()
        with anyio.fail_after(5):
            await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
        replay_kinds = pair.client.kinds(session_id)
        await pair.client.wait_for(lambda: "usage_update" in pair.client.kinds(session_id)[len(replay_kinds) :])
        after_response = pair.client.kinds(session_id)[len(replay_kinds) :]
    assert replay_kinds[0] == "user_message_chunk"
    assert "tool_call" in replay_kinds and "plan" in replay_kinds
    live_ids = {u["toolCallId"] for _, u in live if u["sessionUpdate"] == "tool_call"}
    assert live_ids == {"call_plan_1"}
    assert replay_kinds[-1] == "session_info_update"
    assert "available_commands_update" not in replay_kinds
    assert after_response == ["available_commands_update", "usage_update"]  # then the context meter as it stands


async def test_resume_does_not_replay_and_unknown_id_is_an_error_not_a_new_session(tmp_path: Path) -> None:
    async with open_pair(tmp_path, provider=ScriptedProvider([text_reply("hi")])) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "hello")
        await pair.conn.close_session(session_id=session_id)
        pair.client.clear()
        await pair.conn.resume_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
        assert pair.client.kinds(session_id) in ([], ["available_commands_update"])
        with pytest.raises(RequestError) as caught:
            await pair.conn.resume_session(cwd=str(pair.workspace), session_id="no-such-session", mcp_servers=[])
        listed = await pair.conn.list_sessions()
    assert caught.value.code == -32002
    assert "no-such-session" in str(caught.value)
    assert [s.session_id for s in listed.sessions] == [session_id]


async def test_fork_copies_history_carries_mode_and_model_and_records_parent(tmp_path: Path) -> None:
    async with open_pair(tmp_path, provider=ScriptedProvider([text_reply("first answer")])) as pair:
        parent = await pair.new_session()
        await pair.prompt(parent, "first question")
        with anyio.fail_after(5):  # the title is stored after the turn, in the background: fork a settled history
            await pair.client.wait_for(lambda: bool(pair.client.of_kind("session_info_update", parent)))
        await pair.conn.set_session_mode(session_id=parent, mode_id="accept_edits")
        forked = await pair.conn.fork_session(cwd=str(pair.workspace), session_id=parent, mcp_servers=[])
        parent_events = await pair.store.load_events(parent)
        fork_events = await pair.store.load_events(forked.session_id)
        fork_record = await pair.store.get_session(forked.session_id)
    assert fork_record is not None
    assert forked.session_id != parent
    assert [e.event for e in fork_events] == [e.event for e in parent_events]
    assert forked.modes is not None and forked.modes.current_mode_id == "accept_edits"
    assert forked.field_meta == {"hermes": {"parentSessionId": parent, "forkedAt": fork_record.created_at}}
    assert fork_record is not None and fork_record.parent_id == parent


async def test_list_filters_by_realpath_cwd_and_pages_with_opaque_cursor(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    link = tmp_path / "link"
    os.symlink(tmp_path / "workspace", link)
    async with open_pair(tmp_path) as pair:
        mine = [await pair.new_session() for _ in range(53)]
        await pair.new_session(cwd=other)
        first = await pair.conn.list_sessions(cwd=str(link))
        assert first.next_cursor is not None
        second = await pair.conn.list_sessions(cwd=str(link), cursor=first.next_cursor)
        with pytest.raises(RequestError) as caught:
            await pair.conn.list_sessions(cursor="not-a-cursor")
    assert len(first.sessions) == 50 and len(second.sessions) == 3 and second.next_cursor is None
    assert {s.session_id for s in [*first.sessions, *second.sessions]} == set(mine)
    assert all(s.cwd == os.path.realpath(pair.workspace) for s in first.sessions)
    assert all(s.title and s.updated_at for s in first.sessions)
    assert caught.value.code == -32602 and "cursor" in str(caught.value)


async def test_list_orders_by_stored_activity_and_uses_the_generated_title(tmp_path: Path) -> None:
    async with open_pair(tmp_path, provider=ScriptedProvider([text_reply("ok")])) as pair:
        older = await pair.new_session()
        newer = await pair.new_session()
        await pair.prompt(older, "Refactor the parser module")
        with anyio.fail_after(5):
            await pair.client.wait_for(lambda: bool(pair.client.of_kind("session_info_update", older)))
        listed = await pair.conn.list_sessions()
    assert [s.session_id for s in listed.sessions] == [older, newer]
    assert listed.sessions[0].title == "Refactor the parser module"


async def test_close_releases_the_session_and_a_later_load_reopens_it(tmp_path: Path) -> None:
    async with open_pair(tmp_path, provider=ScriptedProvider([text_reply("one"), text_reply("two")])) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "first")
        await pair.conn.close_session(session_id=session_id)
        with pytest.raises(RequestError) as caught:
            await pair.prompt(session_id, "after close")
        await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
        response = await pair.prompt(session_id, "second")
    assert caught.value.code == -32002
    assert response.stop_reason == "end_turn"


async def test_delete_hides_from_list_but_keeps_history(tmp_path: Path) -> None:
    async with open_pair(tmp_path, provider=ScriptedProvider([text_reply("kept")])) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "remember this")
        await pair.conn.delete_session(session_id=session_id)
        listed = await pair.conn.list_sessions()
        events = await pair.store.load_events(session_id)
        pair.client.clear()
        await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
    assert listed.sessions == []
    assert len(events) >= 3
    assert "kept" in pair.client.text(session_id)


async def test_session_new_needs_an_absolute_existing_cwd(tmp_path: Path) -> None:
    async with open_pair(tmp_path) as pair:
        for cwd, needle in (("relative/path", "absolute"), (str(tmp_path / "missing"), "existing directory")):
            with pytest.raises(RequestError) as caught:
                await pair.conn.new_session(cwd=cwd, mcp_servers=[])
            assert caught.value.code == -32602
            assert "cwd" in str(caught.value) and needle in str(caught.value)


async def test_a_stored_model_that_left_the_catalog_falls_back_to_the_default_it_shows(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("answered by the default")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        await pair.conn.close_session(session_id=session_id)
        await pair.store.update_session(session_id, model_id="gone:model")
        loaded = await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
        with anyio.fail_after(5):
            response = await pair.prompt(session_id, "hello")
    shown = {o.id: o.current_value for o in loaded.config_options or []}
    assert shown["model"] == "scripted:model"
    assert response.stop_reason == "end_turn"
    assert [r.model for r in provider.requests] == ["model"]
