"""Slash commands through the real process: the listing (built-ins and prompt files, re-listed when the files change
between turns), prompt files with arguments (the model gets the expanded text, the transcript what was typed, on
replay too), ``/help`` and ``/mcp`` without a model call, ``/mcp reconnect``, ``/init`` writing AGENTS.md through
``write_file`` after a permission request, and ``/review`` over git's view of the uncommitted changes."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.mcp_server import read_journal, stdio_spec
from hermes_acp.commands.builtins import BUILT_INS, INIT_PROMPT
from tests.fakes.acp_client import RecordingClient
from tests.fakes.agent_process import AgentProcess, spawn_agent

pytestmark = pytest.mark.anyio

BUILT_IN_NAMES = [b.command.name for b in BUILT_INS]
ANSWER: dict[str, Any] = {"repeat": True, "steps": [{"text": "Answered."}]}


def listings(agent: AgentProcess, session_id: str) -> list[list[dict[str, Any]]]:
    return [u["availableCommands"] for u in agent.client.of_kind("available_commands_update", session_id)]


def last_user_text(agent: AgentProcess) -> str:
    messages = agent.model_requests()[-1].body["messages"]
    return str([m for m in messages if m["role"] == "user"][-1]["content"])


async def reply(agent: AgentProcess, session_id: str, text: str) -> str:
    """Run a command the session answers itself; what it answered (a paragraph of agent text: its blank line left
    out)."""
    before = agent.client.text(session_id)
    response = await agent.prompt(session_id, text)
    assert response.stop_reason == "end_turn"
    answer = agent.client.text(session_id)[len(before) :]
    assert answer.endswith("\n\n")
    return answer.removesuffix("\n\n")


async def test_prompt_files_are_listed_expanded_relisted_when_they_change_and_replayed_as_typed(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / "commands").mkdir(parents=True)
    (home / "commands" / "standup.md").write_text("# Summarise what changed since yesterday\nList the commits.")
    project = tmp_path / "workspace" / ".hermes" / "commands"
    project.mkdir(parents=True)
    (project / "fix.md").write_text(
        "---\ndescription: Fix an issue the project's way\nargument-hint: <issue>\n---\n"
        "Fix issue $ARGUMENTS with a test."
    )
    (project / "help.md").write_text("A file that a built-in command shadows.")
    async with spawn_agent(tmp_path, {"responses": [ANSWER]}, home=home) as agent:
        session_id = await agent.new_session()
        await agent.client.wait_for(lambda: bool(listings(agent, session_id)))
        (first,) = listings(agent, session_id)
        await agent.prompt(session_id, "/fix 42 and 43")
        expanded = last_user_text(agent)
        (project / "later.md").write_text("Do it later.")
        await agent.prompt(session_id, "hello")
        after_new_file = listings(agent, session_id)
        (project / "fix.md").write_text("---\ndescription: Fix an issue the project's way\n---\nNow: $ARGUMENTS.")
        await agent.prompt(session_id, "/fix 7")
        edited = last_user_text(agent)
        (project / "later.md").unlink()
        requests = len(agent.model_requests())
        help_text = await reply(agent, session_id, "/help")
        assert len(agent.model_requests()) == requests, "/help asks no model"
        after_removal = listings(agent, session_id)
        await agent.prompt(session_id, "/nope x")
        unknown = last_user_text(agent)
    async with spawn_agent(tmp_path / "second", {"responses": [ANSWER]}, home=home) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(tmp_path / "workspace"), session_id=session_id, mcp_servers=[])
        typed = [u["content"]["text"] for u in agent.client.of_kind("user_message_chunk", session_id)]

    assert [c["name"] for c in first] == [*BUILT_IN_NAMES, "fix", "standup"], "a built-in wins over help.md"
    fix = next(c for c in first if c["name"] == "fix")
    assert fix == {"name": "fix", "description": "Fix an issue the project's way", "input": {"hint": "<issue>"}}
    assert {"name": "standup", "description": "Summarise what changed since yesterday"} in first
    assert expanded == "Fix issue 42 and 43 with a test."
    assert [[c["name"] for c in listing] for listing in after_new_file] == [
        [*BUILT_IN_NAMES, "fix", "standup"],
        [*BUILT_IN_NAMES, "fix", "later", "standup"],
    ], "one update when the file came; none for a turn that changed nothing"
    assert edited == "Now: 7.", "an edited template is used at once"
    assert [c["name"] for c in after_removal[-1]] == [*BUILT_IN_NAMES, "fix", "standup"]
    assert len(after_removal) == 4, "a changed hint and a removed file: one update each"
    assert "- `/fix`: Fix an issue the project's way" in help_text and "- `/standup`:" in help_text
    assert unknown == "/nope x", "an unknown command goes to the model as typed"
    assert typed == ["/fix 42 and 43", "hello", "/fix 7", "/help", "/nope x"], "the replay shows what was typed"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args], cwd=repo, check=True)


async def test_review_sends_the_uncommitted_changes_or_answers_alone_when_there_are_none(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, {"responses": [ANSWER]}) as agent:
        plain = await agent.new_session()
        outside = await reply(agent, plain, "/review")
        assert agent.model_requests() == [], "no model call outside a repository"
        repo = agent.workspace / "repo"
        repo.mkdir()
        git(repo, "init", "-q")
        (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "start")
        in_repo = await agent.new_session(cwd=repo)
        clean = await reply(agent, in_repo, "/review")
        (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        (repo / "new_test.py").write_text("assert True\n")
        response = await agent.prompt(in_repo, "/review the sign")
        asked = last_user_text(agent)
    assert f"{agent.workspace} is not inside a git repository" in outside
    assert f"No uncommitted changes in {repo}" in clean
    assert response.stop_reason == "end_turn"
    assert asked.startswith("Review the uncommitted changes of this repository")
    assert "Focus: the sign" in asked
    assert "-    return a + b\n+    return a - b" in asked
    assert "- new_test.py" in asked


INIT: dict[str, Any] = {
    "responses": [
        {
            "match": {"last_message_contains": "Write an AGENTS.md for this project"},
            "steps": [
                {"text": "Writing it."},
                {
                    "tool_call": {
                        "id": "call_agents",
                        "name": "write_file",
                        "arguments": {"path": "AGENTS.md", "content": "# Agents\nRun `make test`.\n"},
                    }
                },
            ],
        },
        {"match": {"last_message_contains": "Created AGENTS.md"}, "steps": [{"text": "AGENTS.md is written."}]},
    ]
}


async def test_init_asks_the_model_to_write_agents_md_through_write_file_with_a_permission_request(
    tmp_path: Path,
) -> None:
    client = RecordingClient(answers=["allow_once"])
    async with spawn_agent(tmp_path, INIT, client=client) as agent:
        session_id = await agent.new_session()
        response = await agent.prompt(session_id, "/init stress the tests")
        first = agent.model_requests()[0].body["messages"][-1]["content"]
        card = agent.client.cards(session_id)["call_agents"]
    assert response.stop_reason == "end_turn"
    assert first == INIT_PROMPT + "\n\nAlso: stress the tests"
    (asked,) = client.permissions
    assert asked.tool_call["toolCallId"] == "call_agents"
    assert card["status"] == "completed"
    assert (agent.workspace / "AGENTS.md").read_text() == "# Agents\nRun `make test`.\n"


async def test_mcp_lists_the_servers_and_reconnects_one_without_a_model_call(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    spec = stdio_spec("fixture", journal, tools=["echo", "add_note"])
    async with spawn_agent(tmp_path, {"responses": [ANSWER]}) as agent:
        session_id = await agent.new_session([spec])
        listing = ""
        with anyio.fail_after(60):
            while "(stdio): ready" not in listing:  # the server starts in the background (a notice may say so)
                listing = await reply(agent, session_id, "/mcp")
        reconnected = await reply(agent, session_id, "/mcp reconnect fixture")
        unknown = await reply(agent, session_id, "/mcp reconnect nope")
        usage = await reply(agent, session_id, "/mcp restart")
        assert agent.model_requests() == []
    tools = ["add_note", "echo", "get_prompt", "list_prompts", "list_resources", "read_resource"]
    assert f"- fixture (stdio): ready; 6 tools: {', '.join(f'mcp__fixture__{t}' for t in tools)}\n" in listing
    assert reconnected == "Reconnected MCP server 'fixture': ready, 6 tools."
    assert len(read_journal(journal).of("start")) == 2
    assert unknown == "No MCP server named 'nope' in this session; its servers: fixture."
    assert usage.startswith("Unknown /mcp argument 'restart'. Usage:")
