"""The client's side of MCP against real servers (the fixture server's asking tools, over stdio, and the protected
server over streamable HTTP): questions for the user (form and URL, checked both ways, declined without someone to
ask, the call's clock standing still while one is open), roots, progress on the card, a cancelled call reaching the
server, list changes taken at the next turn only, and prompts for the commands."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.mcp_auth import serve_protected
from fixtures.mcp_server import read_journal, stdio_spec
from hermes_acp.core.content import TextBlock
from hermes_acp.errors import ToolError
from hermes_acp.mcp_client import Answer, FormQuestion, LinkState, McpServers, McpTimeouts, UrlQuestion
from hermes_acp.tools.base import AnyTool, ToolOutcome
from tests.fakes.tools import approved
from tests.mcp.people import Browser, Person, http_entry, session
from tests.mcp.support import START_S, context, find_tool, text_of

pytestmark = pytest.mark.anyio


async def _ready(servers: McpServers, name: str = "asker") -> None:
    conn = servers.connection(name)
    assert conn is not None
    with anyio.fail_after(START_S):
        await conn.wait_for(lambda c: c.state == LinkState.READY)


async def _run(
    tmp_path: Path, target: AnyTool, *, call_id: str = "c", shown: list[str] | None = None, **arguments: Any
) -> ToolOutcome[Any]:
    """A call as the turn loop makes it, its card's live content kept in ``shown``."""
    ctx = context(tmp_path)
    ctx.tool_call_id = call_id

    async def progress(content: list[Any]) -> None:
        if shown is not None:
            shown.extend(block.text for block in content if isinstance(block, TextBlock))

    ctx.progress = progress
    parsed = target.validate(arguments)
    with anyio.fail_after(START_S):
        return await target.run(parsed, await approved(target, parsed, ctx), ctx)


def _asker(journal: Path | None = None) -> dict[str, Any]:
    return stdio_spec("asker", journal, tools=["echo"], asking=True)


async def test_a_form_question_reaches_the_person_tied_to_its_call_and_the_answer_goes_back(tmp_path: Path) -> None:
    person = Person([Answer("accept", {"colour": "green", "sure": True}), Answer("decline"), Answer("cancel")])
    async with session(tmp_path, [_asker()], person=person) as servers:
        await _ready(servers)
        pick = find_tool(servers, "mcp__asker__pick_colour")
        assert text_of(await _run(tmp_path, pick, call_id="call-1")) == "accept:green:True"
        assert text_of(await _run(tmp_path, pick)) == "decline"
        assert text_of(await _run(tmp_path, pick)) == "cancel"
    question = person.asked[0]
    assert isinstance(question, FormQuestion)
    assert (question.server, question.message, question.tool_call_id) == ("asker", "Which colour?", "call-1")
    colour = question.schema["properties"]["colour"]
    assert colour["type"] == "string" and colour["enum"] == ["red", "green", "blue"]
    assert question.schema["properties"]["sure"]["type"] == "boolean"


async def test_an_answer_that_does_not_fit_the_form_goes_back_as_cancel(tmp_path: Path) -> None:
    person = Person([Answer("accept", {"colour": "purple"}), Answer("accept", {"colour": "red", "extra": 1})])
    async with session(tmp_path, [_asker()], person=person) as servers:
        await _ready(servers)
        pick = find_tool(servers, "mcp__asker__pick_colour")
        assert text_of(await _run(tmp_path, pick)) == "cancel"
        assert text_of(await _run(tmp_path, pick)) == "cancel"


@pytest.mark.parametrize("person", [None, Person(modes=frozenset())], ids=["no port", "the editor cannot ask"])
async def test_without_someone_to_ask_a_question_is_declined_at_once(tmp_path: Path, person: Person | None) -> None:
    async with session(tmp_path, [_asker()], person=person) as servers:
        await _ready(servers)
        assert text_of(await _run(tmp_path, find_tool(servers, "mcp__asker__pick_colour"))) == "decline"
        assert text_of(await _run(tmp_path, find_tool(servers, "mcp__asker__visit"))) == "decline"
    assert person is None or person.asked == []


async def test_a_url_question_goes_to_the_person_and_its_completion_is_passed_on_once(tmp_path: Path) -> None:
    person = Person([Answer("accept"), Answer("decline")])
    async with session(tmp_path, [_asker()], person=person) as servers:
        await _ready(servers)
        visit = find_tool(servers, "mcp__asker__visit")
        assert text_of(await _run(tmp_path, visit, call_id="v1")) == "accept"
        assert text_of(await _run(tmp_path, visit, call_id="v2")) == "decline"
    first, second = person.asked
    assert isinstance(first, UrlQuestion) and isinstance(second, UrlQuestion)
    assert (first.url, first.tool_call_id, first.server) == ("https://example.com/connect", "v1", "asker")
    assert first.elicitation_id != second.elicitation_id
    assert person.completions == [("asker", first.elicitation_id)], "sent twice by the server, passed on once"


async def test_a_url_question_with_an_address_that_is_not_http_is_refused(tmp_path: Path) -> None:
    person = Person([Answer("accept")])
    async with session(tmp_path, [_asker()], person=person) as servers:
        await _ready(servers)
        visit = find_tool(servers, "mcp__asker__visit")
        with pytest.raises(ToolError, match="only http"):
            await _run(tmp_path, visit, url="javascript:alert(1)")
    assert person.asked == []


async def test_the_calls_clock_stands_still_while_the_person_thinks(tmp_path: Path) -> None:
    timeouts = McpTimeouts(call_s=0.5)
    person = Person([Answer("accept", {"colour": "blue"})], thinking_s=1.5)
    async with session(tmp_path, [_asker()], person=person, timeouts=timeouts) as servers:
        await _ready(servers)
        outcome = await _run(tmp_path, find_tool(servers, "mcp__asker__pick_colour"))
        assert text_of(outcome) == "accept:blue:False"
        assert servers.connection("asker").connections == 1  # type: ignore[union-attr]


async def test_servers_see_the_sessions_directories_as_roots_and_hear_when_they_change(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    first, second = tmp_path / "one dir", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    async with session(tmp_path, [_asker(journal)], roots=[first]) as servers:
        await _ready(servers)
        show = find_tool(servers, "mcp__asker__show_roots")
        assert text_of(await _run(tmp_path, show)) == first.as_uri()
        assert "%20" in first.as_uri()
        await servers.set_roots([first, second])
        assert text_of(await _run(tmp_path, show)).splitlines() == [first.as_uri(), second.as_uri()]
    assert read_journal(journal).count("roots_changed") == 1


async def test_progress_reaches_the_card_at_most_once_per_interval(tmp_path: Path) -> None:
    async with session(tmp_path, [_asker()], timeouts=McpTimeouts(progress_interval_s=0)) as servers:
        await _ready(servers)
        shown: list[str] = []
        outcome = await _run(tmp_path, find_tool(servers, "mcp__asker__count_to"), shown=shown, steps=3)
        assert text_of(outcome) == "counted 3"
        assert sorted(shown) == ["⏳ step 1 (1/3)", "⏳ step 2 (2/3)", "⏳ step 3 (3/3)"]
    async with session(tmp_path, [_asker()], timeouts=McpTimeouts(progress_interval_s=3600)) as servers:
        await _ready(servers)
        shown = []
        await _run(tmp_path, find_tool(servers, "mcp__asker__count_to"), shown=shown, steps=5)
        assert len(shown) == 1 and shown[0].startswith("⏳ step ")


async def test_a_cancelled_call_reaches_the_server_as_cancelled(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    async with session(tmp_path, [_asker(journal)]) as servers:
        await _ready(servers)
        started = anyio.Event()

        async def call() -> None:
            ctx = context(tmp_path)

            async def progress(_content: list[Any]) -> None:
                started.set()

            ctx.progress = progress
            tool = find_tool(servers, "mcp__asker__wait_for_cancel")
            parsed = tool.validate({"seconds": 600})
            await tool.run(parsed, await approved(tool, parsed, ctx), ctx)

        with anyio.fail_after(START_S):
            async with anyio.create_task_group() as group:
                group.start_soon(call)
                await started.wait()
                group.cancel_scope.cancel()
        assert text_of(await _run(tmp_path, find_tool(servers, "mcp__asker__echo"), text="after")) == "after"
    assert read_journal(journal).count("cancelled", tool="wait_for_cancel") == 1


async def test_a_tool_added_mid_session_is_offered_at_the_next_turn_and_not_before(tmp_path: Path) -> None:
    async with session(tmp_path, [_asker()]) as servers:
        await _ready(servers)
        before = [t.name for t in servers.tools()]
        await _run(tmp_path, find_tool(servers, "mcp__asker__grow"), tool="fresh")
        conn = servers.connection("asker")
        assert conn is not None
        with anyio.fail_after(START_S):
            await conn.wait_for(lambda c: "tools" in c.stale)
        assert [t.name for t in servers.tools()] == before, "the tool list stays as it was within the turn"
        await servers.prepare_turn(wait_s=START_S)
        after = [t.name for t in servers.tools()]
        assert set(after) - set(before) == {"mcp__asker__fresh"}
        assert text_of(await _run(tmp_path, find_tool(servers, "mcp__asker__fresh"))) == "grown fresh"


async def test_prompts_are_listed_fetched_and_refreshed_when_they_change(tmp_path: Path) -> None:
    async with session(tmp_path, [_asker()]) as servers:
        await _ready(servers)
        [greet] = servers.prompts()
        assert (greet.server, greet.name, greet.description) == ("asker", "greet", "Greet someone.")
        assert [(a.name, a.required) for a in greet.arguments] == [("name", True)]
        assert await servers.get_prompt("asker", "greet", {"name": "Ada"}) == "Say hello to Ada."
        version = servers.prompts_version
        await _run(tmp_path, find_tool(servers, "mcp__asker__grow_prompt"), prompt="summarise")
        conn = servers.connection("asker")
        assert conn is not None
        with anyio.fail_after(START_S):
            await conn.wait_for(lambda c: "prompts" in c.stale)
        assert [p.name for p in servers.prompts()] == ["greet"]
        await servers.prepare_turn(wait_s=START_S)
        assert [p.name for p in servers.prompts()] == ["greet", "summarise"]
        assert servers.prompts_version != version
        assert await servers.get_prompt("asker", "summarise", {"topic": "MCP"}) == "prompt summarise: MCP"
        with pytest.raises(KeyError):
            await servers.get_prompt("nobody", "greet", {})


async def test_over_http_each_question_belongs_to_the_call_that_asked_it(tmp_path: Path) -> None:
    person = Person([Answer("accept", {"colour": "red"}), Answer("accept", {"colour": "red"})])
    async with serve_protected() as protected:
        async with session(tmp_path, [http_entry(protected.url)], browser=Browser(), person=person) as servers:
            await _ready(servers, "remote")
            pick = find_tool(servers, "mcp__remote__pick_colour")
            async with anyio.create_task_group() as group:
                for call_id in ("left", "right"):
                    group.start_soon(functools.partial(_run, tmp_path, pick, call_id=call_id))
    assert sorted(q.tool_call_id or "" for q in person.asked) == ["left", "right"]
