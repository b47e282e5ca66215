"""Session metadata editors set, over a real connection (docs/architecture.md §6.11): ``session/set_title``,
``session/archive`` / ``unarchive`` with the ``archived`` filter, and a client ``systemPrompt`` in append and
override mode. Every frame is checked against the ACP schema (the unstable one for these methods)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError

from hermes_acp.core import TextPart
from hermes_acp.providers.scripted import ScriptedProvider, ScriptedReply, text_reply
from tests.fakes.server import Pair, open_pair

pytestmark = pytest.mark.anyio


def _answers(*texts: str) -> ScriptedProvider:
    return ScriptedProvider([text_reply(t) for t in texts])


async def _listed(pair: Pair, **params: Any) -> list[dict[str, Any]]:
    result = await pair.request("session/list", params)
    sessions: list[dict[str, Any]] = result["sessions"]
    return sessions


async def test_set_title_is_stored_normalised_sent_to_the_client_and_never_replaced_automatically(
    tmp_path: Path,
) -> None:
    async with open_pair(tmp_path, provider=_answers("one", "two")) as pair:
        session_id = await pair.new_session()
        result = await pair.request("session/set_title", {"sessionId": session_id, "title": "  Fix the\n  parser  "})
        await pair.client.wait_for(lambda: bool(pair.client.of_kind("session_info_update", session_id)))
        await pair.prompt(session_id, "what does the parser do with tabs")
        await pair.prompt(session_id, "and with newlines")
        listed = await _listed(pair)
        record = await pair.store.get_session(session_id)
        titles = [e.event for e in await pair.store.load_events(session_id) if e.event.kind == "title_set"]
    assert result == {"title": "Fix the parser"}
    assert [u["title"] for u in pair.client.of_kind("session_info_update", session_id)] == ["Fix the parser"]
    assert record is not None and record.title == "Fix the parser"
    assert [t.title for t in titles] == ["Fix the parser"], "no automatic title after it"
    assert [s["title"] for s in listed] == ["Fix the parser"]


async def test_set_title_works_on_a_session_that_is_not_open_and_a_load_shows_it(tmp_path: Path) -> None:
    async with open_pair(tmp_path, provider=_answers("hi")) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "hello there")
        await pair.conn.close_session(session_id=session_id)
        result = await pair.request("session/set_title", {"sessionId": session_id, "title": "Greeting"})
        pair.client.clear()
        await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
    assert result == {"title": "Greeting"}
    assert pair.client.of_kind("session_info_update", session_id)[-1]["title"] == "Greeting"


async def test_set_title_refuses_an_empty_title_and_an_unknown_session(tmp_path: Path) -> None:
    async with open_pair(tmp_path) as pair:
        session_id = await pair.new_session()
        with pytest.raises(RequestError) as empty:
            await pair.request("session/set_title", {"sessionId": session_id, "title": " \n\t "})
        with pytest.raises(RequestError) as unknown:
            await pair.request("session/set_title", {"sessionId": "no-such-session", "title": "x"})
    assert empty.value.code == -32602 and "title" in str(empty.value)
    assert unknown.value.code == -32002


async def test_archive_unarchive_and_the_list_filters(tmp_path: Path) -> None:
    async with open_pair(tmp_path) as pair:
        kept = await pair.new_session()
        shelved = await pair.new_session()
        deleted = await pair.new_session()
        assert await pair.request("session/archive", {"sessionId": shelved}) == {}
        assert await pair.request("session/archive", {"sessionId": shelved}) == {}, "archiving twice succeeds"
        await pair.conn.delete_session(session_id=deleted)
        default = await _listed(pair)
        everything = await _listed(pair, archived="include")
        only = await _listed(pair, archived="only")
        with pytest.raises(RequestError) as custom:
            await _listed(pair, archived="_mine")
        with pytest.raises(RequestError) as future:
            await _listed(pair, archived="trash")
        with pytest.raises(RequestError) as unknown:
            await pair.request("session/archive", {"sessionId": "no-such-session"})
        assert await pair.request("session/unarchive", {"sessionId": shelved}) == {}
        assert await pair.request("session/unarchive", {"sessionId": kept}) == {}, "not archived: succeeds"
        after = await _listed(pair)
    assert [(s["sessionId"], s["archived"]) for s in default] == [(kept, False)]
    assert {(s["sessionId"], s["archived"]) for s in everything} == {(kept, False), (shelved, True)}
    assert [s["sessionId"] for s in only] == [shelved]
    assert custom.value.code == future.value.code == -32602
    assert unknown.value.code == -32002
    assert {s["sessionId"] for s in after} == {kept, shelved}, "a deleted session is never listed"


async def test_archiving_a_session_that_works_cancels_its_turn_and_closes_it_first(tmp_path: Path) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text="working on it")], hold=hold)])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        results: dict[str, Any] = {}

        async def prompt() -> None:
            results["prompt"] = await pair.prompt(session_id, "long job")

        async with anyio.create_task_group() as group:
            group.start_soon(prompt)
            await pair.client.wait_for(lambda: bool(pair.client.of_kind("agent_message_chunk", session_id)))
            await pair.request("session/archive", {"sessionId": session_id})
        with pytest.raises(RequestError) as closed:
            await pair.prompt(session_id, "still there?")
        status = await pair.request("session/status", {"sessionId": session_id})
    assert results["prompt"].stop_reason == "cancelled"
    assert closed.value.code == -32002, "closed: a prompt needs a load first"
    assert status == {"status": "saved"}


async def _new_with_prompt(pair: Pair, system_prompt: dict[str, Any]) -> str:
    result = await pair.request(
        "session/new", {"cwd": str(pair.workspace), "mcpServers": [], "systemPrompt": system_prompt}
    )
    session_id: str = result["sessionId"]
    return session_id


async def test_an_appended_system_prompt_follows_ours_byte_for_byte_and_survives_a_reload(tmp_path: Path) -> None:
    provider = _answers("a", "b", "c")
    text = "Answer in French.\nKeep it short."
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await _new_with_prompt(pair, {"mode": "append", "content": [{"type": "text", "text": text}]})
        await pair.prompt(session_id, "hello")
        await pair.prompt(session_id, "/status")
        status = pair.client.text(session_id)
        await pair.conn.close_session(session_id=session_id)
        await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
        await pair.prompt(session_id, "again")
    first, second = provider.requests[0].system, provider.requests[1].system
    assert first.startswith("You are Hermes") and first.endswith(f"Instructions from the editor:\n\n{text}")
    assert second == first, "the same bytes after a reload"
    assert "**System prompt:** the editor's (32 characters, added to the agent's own)" in status


async def test_an_override_replaces_our_instructions_and_keeps_the_workspace(tmp_path: Path) -> None:
    provider = _answers("a", "b")
    async with open_pair(tmp_path, provider=provider) as pair:
        content = [{"type": "text", "text": "You are a reviewer."}, {"type": "text", "text": "Only review."}]
        session_id = await _new_with_prompt(pair, {"mode": "override", "content": content})
        await pair.prompt(session_id, "look")
        forked = await pair.conn.fork_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
        await pair.prompt(forked.session_id, "look again")
    system = provider.requests[0].system
    assert system.startswith("You are a reviewer.\n\nOnly review.\n\nWorking directory: ")
    assert "You are Hermes" not in system
    assert provider.requests[1].system == system, "a fork keeps the source's system prompt"


@pytest.mark.parametrize(
    ("system_prompt", "field"),
    [
        ({"mode": "append", "content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]}, "content[0]"),
        ({"mode": "replace", "content": [{"type": "text", "text": "x"}]}, "mode"),
        ({"mode": "_custom", "content": [{"type": "text", "text": "x"}]}, "mode"),
        ({"mode": "append", "content": []}, "content"),
    ],
)
async def test_a_system_prompt_we_cannot_apply_is_refused_and_no_session_is_made(
    tmp_path: Path, system_prompt: dict[str, Any], field: str
) -> None:
    async with open_pair(tmp_path) as pair:
        with pytest.raises(RequestError) as refused:
            await _new_with_prompt(pair, system_prompt)
        listed = await _listed(pair)
    assert refused.value.code == -32602
    assert f"systemPrompt.{field}" in str(refused.value)
    assert listed == []


async def test_an_open_session_keeps_its_system_prompt(tmp_path: Path) -> None:
    async with open_pair(tmp_path) as pair:
        prompt = {"mode": "append", "content": [{"type": "text", "text": "Be brief."}]}
        session_id = await _new_with_prompt(pair, prompt)
        same = {"sessionId": session_id, "cwd": str(pair.workspace), "mcpServers": [], "systemPrompt": prompt}
        await pair.request("session/resume", same)
        other = {**same, "systemPrompt": {"mode": "append", "content": [{"type": "text", "text": "Be verbose."}]}}
        with pytest.raises(RequestError) as refused:
            await pair.request("session/resume", other)
    assert refused.value.code == -32602 and "another system prompt" in str(refused.value)
