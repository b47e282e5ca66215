"""What a new user runs into, over the wire: a notice shown as agent text is a paragraph of its own; ``ask_user``
in an editor that cannot ask says so; an MCP server that failed is told right after ``session/new``; a session
closes without waiting for the turn machinery's warm-up; automatic compaction and the commands' network are
on/off options for a client that takes boolean options, stored with the session and applied."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from hermes_acp.core import TextPart, ToolResultMessage
from hermes_acp.providers.scripted import ScriptedProvider, text_reply, tool_reply
from hermes_acp.sessions import turn_imports
from tests.fakes.server import open_pair, scripted_model
from tests.fakes.tools import call
from tests.security.support import listener, require_bwrap

pytestmark = pytest.mark.anyio

GHOST = {"name": "ghost", "command": "/nonexistent/mcp-server", "args": [], "env": []}
BOOLEANS: dict[str, Any] = {"session": {"configOptions": {"boolean": {}}}}


async def test_a_notice_as_agent_text_is_a_paragraph_of_its_own(tmp_path: Path) -> None:
    config = '[computer_use]\ndriver_command = ["no-such-cua-driver", "mcp"]\n'
    async with open_pair(
        tmp_path, provider=ScriptedProvider([text_reply("Hello from the model.")]), config=config
    ) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "hi")
        text = pair.client.text(session_id)

    assert text.startswith("⚠ computer_use is off")
    notice, answer = text.split("\n\n", 1)
    assert "\n" not in notice and answer == "Hello from the model.", "not run together with the answer"


async def test_ask_user_in_an_editor_that_cannot_ask_says_the_editor_cannot_show_questions(tmp_path: Path) -> None:
    provider = ScriptedProvider([tool_reply(call("q1", "ask_user", question="Which one?")), text_reply("I chose.")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "pick")

    (result,) = [m for m in provider.requests[1].messages if isinstance(m, ToolResultMessage)]
    text = "".join(p.text for p in result.parts if isinstance(p, TextPart))
    assert "the editor cannot show questions to the user" in text
    assert "default mode" not in text


@pytest.mark.parametrize("notices", [True, False], ids=["notices", "text"])
async def test_an_mcp_server_that_failed_is_told_right_after_session_new_and_once(
    tmp_path: Path, notices: bool
) -> None:
    capabilities: dict[str, Any] = {"session": {"notices": {}}} if notices else {}
    provider = ScriptedProvider([text_reply("Ready.")])
    async with open_pair(tmp_path, provider=provider, client_capabilities=capabilities) as pair:
        session_id = await pair.new_session(mcp_servers=[GHOST])

        def told() -> list[str]:
            shown = [n["title"] for n in pair.client.of_kind("notice", session_id)]
            return shown if notices else [t for t in pair.client.text(session_id).split("\n\n") if "ghost" in t]

        await pair.client.wait_for(lambda: bool(told()), timeout=30)
        before_prompt = told()
        await pair.prompt(session_id, "hello")
        after_prompt = told()

    assert len(before_prompt) == 1 and "MCP server 'ghost' could not be started" in before_prompt[0]
    assert after_prompt == before_prompt, "not told again with the first prompt"


@pytest.fixture
def slow_warm_up(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The turn machinery's warm-up takes until the test ends (as a cold process's imports take their time)."""
    release = threading.Event()
    monkeypatch.setattr(turn_imports, "load_turn_modules", lambda: release.wait(30))
    yield release
    release.set()


async def test_delete_right_after_a_load_does_not_wait_for_the_warm_up(
    tmp_path: Path, slow_warm_up: threading.Event
) -> None:
    async with open_pair(tmp_path, provider=ScriptedProvider([text_reply("Hi.")])) as pair:
        session_id = await pair.new_session()
        await pair.conn.close_session(session_id=session_id)
        with anyio.fail_after(5):
            await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
            await pair.conn.delete_session(session_id=session_id)
            listed = await pair.conn.list_sessions()
        assert not slow_warm_up.is_set(), "the warm-up was still running"

    assert session_id not in [s.session_id for s in listed.sessions]


async def set_switch(pair: Any, session_id: str, option: str, value: bool) -> list[dict[str, Any]]:
    with anyio.fail_after(5):
        response = await pair.conn.set_config_option(session_id=session_id, config_id=option, value=value)
    return [o.model_dump(by_alias=True, exclude_none=True) for o in response.config_options]


async def test_switches_are_boolean_options_for_clients_that_take_them_and_are_stored(tmp_path: Path) -> None:
    async with open_pair(tmp_path, provider=ScriptedProvider([]), client_capabilities=BOOLEANS) as pair:
        created = await pair.conn.new_session(cwd=str(pair.workspace), mcp_servers=[])
        session_id = created.session_id
        offered = [o.model_dump(by_alias=True, exclude_none=True) for o in created.config_options or []]
        changed = await set_switch(pair, session_id, "auto_compaction", False)
        updates = pair.client.of_kind("config_option_update", session_id)
        await pair.conn.close_session(session_id=session_id)
        with anyio.fail_after(5):
            loaded = await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
    (tmp_path / "plain").mkdir()
    async with open_pair(tmp_path / "plain", provider=ScriptedProvider([])) as plain:
        other = await plain.conn.new_session(cwd=str(plain.workspace), mcp_servers=[])

    booleans = {o["id"]: o["currentValue"] for o in offered if o["type"] == "boolean"}
    assert booleans == {"auto_compaction": True, "sandbox_network": True}
    assert {o["id"]: o.get("currentValue") for o in changed}["auto_compaction"] is False
    assert updates and {o["id"]: o["currentValue"] for o in updates[-1]["configOptions"]}["auto_compaction"] is False
    reloaded = [o.model_dump(by_alias=True, exclude_none=True) for o in loaded.config_options or []]
    assert {o["id"]: o["currentValue"] for o in reloaded}["auto_compaction"] is False, "stored with the session"
    assert all(o.model_dump()["type"] != "boolean" for o in other.config_options or []), "only when advertised"


async def test_automatic_compaction_off_sends_the_request_without_compacting(tmp_path: Path) -> None:
    big = "word " * 3000
    provider = ScriptedProvider([text_reply("Seen."), text_reply("Seen again.")])
    small = scripted_model(context_window=4_000)
    async with open_pair(tmp_path, provider=provider, models=[small], client_capabilities=BOOLEANS) as pair:
        session_id = await pair.new_session()
        await set_switch(pair, session_id, "auto_compaction", False)
        await pair.prompt(session_id, big)
        await pair.prompt(session_id, big)
        compacted = pair.client.text(session_id)

    assert len(provider.requests) == 2, "no summary request"
    assert "Compacted the conversation" not in compacted


async def test_the_network_switch_reaches_the_sandbox_of_the_sessions_commands(tmp_path: Path) -> None:
    require_bwrap()
    with listener() as port:
        probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3); print('connected')\""
        provider = ScriptedProvider(
            [
                tool_reply(call("t1", "terminal", command=f"{probe} 2>&1 | tail -1")),
                text_reply("Tried."),
                tool_reply(call("t2", "terminal", command=f"{probe} 2>&1 | tail -1")),
                text_reply("Tried again."),
            ]
        )
        async with open_pair(tmp_path, provider=provider, client_capabilities=BOOLEANS, sandbox="auto") as pair:
            pair.client.answers = ["allow_once", "allow_once"]
            session_id = await pair.new_session()
            await pair.prompt(session_id, "connect")
            await set_switch(pair, session_id, "sandbox_network", False)
            await pair.prompt(session_id, "connect again")

    def output(request: int, call_id: str) -> str:
        results = [m for m in provider.requests[request].messages if isinstance(m, ToolResultMessage)]
        return "".join(p.text for r in results if r.tool_call_id == call_id for p in r.parts if isinstance(p, TextPart))

    assert "connected" in output(1, "t1")
    assert "connected" not in output(3, "t2") and "no network" in output(3, "t2")
