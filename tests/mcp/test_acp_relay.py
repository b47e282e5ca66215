"""The MCP client's side relayed through ACP, through the real process (``python -m hermes_acp`` with the scripted
model): a server behind OAuth (``fixtures/mcp_auth``, in this process on loopback) signs in through the editor —
a URL elicitation "Sign in to <server>" that the test's client follows as a browser would, or, for an editor
without URL elicitation, a notice with the address and ``/mcp login`` — and its token reaches nothing but its file;
the fixture server's asking tools (over stdio) ask the editor through ``elicitation/create`` (form and URL), see the
session's directories as roots, show progress on the tool card, hear a cancel, add a tool that the model is offered
at the next turn and not before, and serve a prompt as a ``/server:prompt`` command. Every frame is checked against
the ACP 2.4.0 schema (the unstable one for URL elicitation) when the agent exits."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import acp
import anyio
import httpx2
import pytest

from fixtures.mcp_auth import Authority, follow, serve_protected
from fixtures.mcp_server import read_journal, stdio_spec
from fixtures.model_server import RequestRecord
from tests.fakes.acp_client import RecordingClient
from tests.fakes.agent_process import AgentProcess, spawn_agent
from tests.mcp.people import http_entry
from tests.mcp.support import START_S

pytestmark = pytest.mark.anyio

ASKING = acp.schema.ClientCapabilities(
    elicitation=acp.schema.ElicitationCapabilities(
        form=acp.schema.ElicitationFormCapabilities(), url=acp.schema.ElicitationUrlCapabilities()
    )
)
DEBUG_LOG = '\n[logging]\nlevel = "debug"\n'


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"steps": [{"tool_call": {"id": call_id, "name": name, "arguments": arguments}}]}


def _say(text: str) -> dict[str, Any]:
    return {"steps": [{"text": text}]}


def _user_text(record: RequestRecord) -> str:
    """The text of the last user message of a chat request (OpenAI's shape)."""
    users = [m for m in (record.body or {}).get("messages", []) if m.get("role") == "user"]
    content = users[-1]["content"] if users else ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def _card_text(card: dict[str, Any]) -> str:
    return "".join(item.get("content", {}).get("text", "") for item in card.get("content") or [])


def _sent(agent: AgentProcess, method: str) -> list[dict[str, Any]]:
    """The params of every ``method`` the agent sent, in order."""
    return [m["params"] for d, m in agent.frames.frames if d == "to_client" and m.get("method") == method]


def _secrets_seen(tokens: list[str], *places: bytes) -> list[str]:
    return [token for token in tokens if any(token.encode() in place for place in places)]


def _home_bytes(agent: AgentProcess) -> tuple[bytes, bytes]:
    """The session store (with its write-ahead log) and every log file of the agent's home, and its stderr."""
    store = b"".join(p.read_bytes() for p in agent.home.glob("state.db*"))
    logs = b"".join(p.read_bytes() for p in (agent.home / "logs").rglob("*") if p.is_file())
    return store, logs + agent.stderr_path.read_bytes()


async def _browse(asked: dict[str, Any]) -> dict[str, Any]:
    """The user: opens an address the editor is asked to open (the sign-in page: approved at once), and says yes."""
    if asked["kind"].startswith("ElicitationUrl") and str(asked["url"]).startswith("http://127.0.0.1"):
        await follow(str(asked["url"]))
    return {"action": "accept"}


async def test_a_server_behind_oauth_signs_in_through_the_editor_and_no_token_leaves_its_file(tmp_path: Path) -> None:
    authority = Authority(access_ttl=30)  # due at every connect: the reconnect after the sign-in refreshes it
    scenario = {
        "name": "signed in",
        "responses": [
            _call("call_echo", "mcp__remote__echo", text="signed"),
            _say("Echoed."),
            _call("call_env", "terminal", command="env"),
            _say("Listed."),
            _call("call_revoked", "mcp__remote__echo", text="after revoke"),
            _say("It needs a sign-in."),
            _call("call_again", "mcp__remote__echo", text="again"),
            _say("Echoed again."),
        ],
    }
    client = RecordingClient(on_elicitation=_browse)
    journal = tmp_path / "journal"
    async with serve_protected(journal, authority=authority) as protected:
        async with spawn_agent(tmp_path, scenario, client=client, initialize=False, config_extra=DEBUG_LOG) as agent:
            await agent.initialize(capabilities=ASKING)
            session_id = await agent.new_session([http_entry(protected.url)])
            await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
            await client.wait_for(lambda: bool(client.completions), timeout=START_S)
            await agent.prompt(session_id, "echo it")
            await agent.prompt(session_id, "show the environment")
            protected.authority.revoke()
            await agent.prompt(session_id, "echo once more")
            login = await agent.prompt(session_id, "/mcp login remote")
            await client.wait_for(lambda: len(client.completions) == 2, timeout=START_S)
            await agent.prompt(session_id, "echo again")
            cards = client.cards(session_id)
            requests = agent.model_requests()
            store, logs = _home_bytes(agent)
            token_files = list((agent.home / "mcp-auth").glob("*.json"))
            folder_mode = (agent.home / "mcp-auth").stat().st_mode & 0o777
    assert login.stop_reason == "end_turn"
    first, second = client.elicitations
    for asked, done in zip((first, second), client.completions, strict=True):
        assert asked["kind"] == "ElicitationUrlSessionMode" and asked["message"] == "Sign in to remote"
        assert str(asked["url"]).startswith(f"{protected.base}/authorize?") and "code_challenge=" in str(asked["url"])
        assert asked["sessionId"] == session_id and "toolCallId" not in asked
        assert done == asked["elicitationId"], "the editor's page is closed once signed in"
    assert "was opened" in client.text(session_id), "/mcp login says the page was opened in the editor"
    assert cards["call_echo"]["status"] == "completed" and _card_text(cards["call_echo"]) == "signed"
    revoked = cards["call_revoked"]
    assert revoked["status"] == "failed" and "/mcp login remote" in _card_text(revoked), revoked
    assert cards["call_again"]["status"] == "completed" and _card_text(cards["call_again"]) == "again"
    assert [c["arguments"]["text"] for c in read_journal(journal).calls("echo")] == ["signed", "again"]
    log = protected.authority.log
    assert log[:3] == ["register", "authorize", "code"] and "refresh" in log and log.count("register") == 1
    [token_file] = token_files
    assert token_file.stat().st_mode & 0o777 == 0o600 and folder_mode == 0o700
    issued = protected.authority.issued
    assert _secrets_seen(issued[-2:], token_file.read_bytes()) == issued[-2:], "the latest pair is stored"
    environment = _card_text(cards["call_env"])
    assert "PATH=" in environment, "the command ran and printed its environment"
    assert b"mcp" in logs, "the log was written"
    assert _secrets_seen(issued, store) == [], "a token reached the session store"
    assert _secrets_seen(issued, logs) == [], "a token reached the log"
    assert _secrets_seen(issued, environment.encode()) == [], "a token reached a command's environment"
    sent = [r for r in requests if _secrets_seen(issued, (r.body_text or str(r.body)).encode())]
    assert sent == [], "a token reached the model"


async def test_an_editor_without_url_elicitation_gets_the_address_once_then_from_mcp_login(tmp_path: Path) -> None:
    """Its user's browser runs on another machine: the address it ended on is pasted back with ``/mcp login``."""
    scenario = {"name": "plain", "responses": [{"repeat": True, "steps": [{"text": "Noted."}]}]}
    async with serve_protected() as protected:
        async with spawn_agent(tmp_path, scenario) as agent:
            session_id = await agent.new_session([http_entry(protected.url)])
            told = "Sign in to MCP server 'remote': open "
            await agent.client.wait_for(lambda: told in agent.client.text(session_id), timeout=START_S)
            await agent.prompt(session_id, "hello")
            before = agent.client.text(session_id)
            await agent.prompt(session_id, "/mcp")
            listing = agent.client.text(session_id)[len(before) :]
            mark = len(agent.client.text(session_id))
            await agent.prompt(session_id, "/mcp login remote")
            reply = agent.client.text(session_id)[mark:]
            [url] = re.findall(r"open this address in your browser and approve: (\S+)", reply)
            async with httpx2.AsyncClient(follow_redirects=False) as browser:  # on another machine: the redirect
                ended_on = (await browser.get(url)).headers["location"]  # to our loopback address lands there
            mark = len(agent.client.text(session_id))
            await agent.prompt(session_id, f"/mcp login remote {ended_on}")
            pasted = agent.client.text(session_id)[mark:]
            done = "Signed in to MCP server 'remote'"
            await agent.client.wait_for(lambda: done in agent.client.text(session_id), timeout=START_S)
            mark = len(agent.client.text(session_id))
            await agent.prompt(session_id, "/mcp")
            ready = agent.client.text(session_id)[mark:]
            await agent.prompt(session_id, "and now")
            requests = agent.model_requests()
    noticed = agent.client.text(session_id)
    assert noticed.count(told) == 1, "the address is told once"
    assert url in noticed.split(told, 1)[1], "the notice and /mcp login name the same page"
    assert url.startswith(f"{protected.base}/authorize?")
    assert "`/mcp login remote ADDRESS`" in reply and "Signed in to MCP server 'remote'" in pasted
    assert _sent(agent, "elicitation/create") == [], "nothing was asked of an editor that cannot open addresses"
    assert "- remote (http): signing in" in listing and "/mcp login NAME" in listing
    assert "- remote (http): ready; " in ready and "mcp__remote__echo" in ready
    note = "[Note from hermes-acp: MCP server 'remote' waits for the user to sign in (/mcp login remote)"
    assert note in _user_text(requests[0]), "the model is told which server waits"
    assert note not in _user_text(requests[-1]) and "mcp__remote__echo" in str(requests[-1].body)


def _asker(journal: Path) -> dict[str, Any]:
    return stdio_spec("asker", journal, tools=["echo"], asking=True)


async def test_a_servers_questions_go_to_the_editor_and_its_answers_back_checked(tmp_path: Path) -> None:
    scenario = {
        "name": "asking",
        "responses": [
            _call("call_pick", "mcp__asker__pick_colour"),
            _call("call_visit", "mcp__asker__visit"),
            _say("Asked."),
            _call("call_bad", "mcp__asker__pick_colour"),
            _call("call_no", "mcp__asker__pick_colour"),
            _say("Asked again."),
        ],
    }
    answers: list[dict[str, Any]] = [
        {"action": "accept", "content": {"colour": "green", "sure": True}},
        {"action": "accept"},
        {"action": "accept", "content": {"colour": "purple"}},
        {"action": "decline"},
    ]
    client = RecordingClient(elicitation_answers=answers)
    async with spawn_agent(tmp_path, scenario, client=client, initialize=False) as agent:
        await agent.initialize(capabilities=ASKING)
        session_id = await agent.new_session([_asker(tmp_path / "journal")])
        await agent.prompt(session_id, "ask me")
        await agent.prompt(session_id, "ask me again")
        await client.wait_for(lambda: bool(client.completions))
        cards = client.cards(session_id)
    assert [_card_text(cards[c]) for c in ("call_pick", "call_visit", "call_bad", "call_no")] == [
        "accept:green:True",
        "accept",
        "cancel",  # the answer did not fit the form: the server is never given it
        "decline",
    ]
    form, url, *_ = client.elicitations
    assert form["kind"] == "ElicitationFormSessionMode" and form["toolCallId"] == "call_pick"
    assert form["message"] == "MCP server 'asker' asks: Which colour?"
    assert form["requestedSchema"]["properties"]["colour"]["enum"] == ["red", "green", "blue"]
    assert url["kind"] == "ElicitationUrlSessionMode" and url["toolCallId"] == "call_visit"
    assert str(url["url"]) == "https://example.com/connect" and "'asker'" in url["message"]
    assert client.completions == [url["elicitationId"]], "the server said it twice; the editor is told once"


async def test_a_server_in_a_plain_editor_roots_progress_cancel_list_changes_and_prompts(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    scenario = {
        "name": "plain asking",
        "responses": [
            _call("call_pick", "mcp__asker__pick_colour"),
            _call("call_roots", "mcp__asker__show_roots"),
            _call("call_count", "mcp__asker__count_to", steps=3),
            _say("Done."),
            _call("call_grow", "mcp__asker__grow", tool="fresh"),
            _say("Grown."),
            _say("Next turn."),
            _say("Greeted."),
            _call("call_wait", "mcp__asker__wait_for_cancel", seconds=600),
            {"repeat": True, "steps": [{"text": "Later."}]},
        ],
    }
    async with spawn_agent(tmp_path, scenario) as agent:
        session_id = await agent.new_session([_asker(journal)])
        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        await agent.prompt(session_id, "ask, list roots and count")
        await agent.prompt(session_id, "grow a tool")
        await agent.prompt(session_id, "the next turn")
        commands = agent.client.of_kind("available_commands_update", session_id)
        await agent.prompt(session_id, "/asker:greet Ada")
        async with anyio.create_task_group() as group:
            group.start_soon(agent.prompt, session_id, "wait")
            waiting = agent.client.tool_frames
            await agent.client.wait_for(lambda: any("⏳ waiting" in _card_text(u) for u in waiting("call_wait")))
            await agent.conn.cancel(session_id=session_id)
        cards = agent.client.cards(session_id)
        progress = [u for u in agent.client.tool_frames("call_count", session_id) if "⏳" in _card_text(u)]
        requests = agent.model_requests()
        offered = agent.offered_tools()
    assert _card_text(cards["call_pick"]) == "decline", "declined at once: the editor cannot show forms"
    assert _sent(agent, "elicitation/create") == []
    assert _card_text(cards["call_roots"]) == agent.workspace.as_uri()
    assert progress and all(u["status"] == "in_progress" for u in progress)
    assert _card_text(progress[0]).startswith("⏳ step ") and cards["call_count"]["status"] == "completed"
    grew, after_grow, next_turn = offered[4], offered[5], offered[6]
    assert "mcp__asker__fresh" not in grew + after_grow, "the tool list stays as it was within the turn"
    assert "mcp__asker__fresh" in next_turn, "the new tool is offered at the next turn"
    names = [c["name"] for update in commands for c in update["availableCommands"]]
    assert "asker:greet" in names, "the server's prompt is a command"
    greet = next(c for c in commands[-1]["availableCommands"] if c["name"] == "asker:greet")
    assert greet["input"] == {"hint": "<name>"}
    assert _user_text(requests[7]) == "Say hello to Ada.", "the prompt's text is the model's turn"
    assert read_journal(journal).count("cancelled", tool="wait_for_cancel") == 1, "the cancel reached the server"
