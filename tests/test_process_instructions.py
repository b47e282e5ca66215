"""Project instructions through the real process: AGENTS.md of the cwd, an additional directory and the home go into
the system prompt of every request, byte-identical for the session even when a file changes while it runs."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.fakes.agent_process import spawn_agent

pytestmark = pytest.mark.anyio


def _system(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    first = messages[0]
    assert first["role"] == "system"
    return str(first["content"])


async def test_instruction_files_reach_every_request_unchanged_for_the_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "AGENTS.md").write_text("Sign commits with the user's name.")
    library = tmp_path / "library"
    library.mkdir()
    (library / "CLAUDE.md").write_text("The library is vendored: never edit it.")
    async with spawn_agent(tmp_path, home=home) as agent:
        (agent.workspace / "AGENTS.md").write_text("Use pytest; run `make test` before saying done.")
        with anyio.fail_after(30):
            response = await agent.conn.new_session(
                cwd=str(agent.workspace), mcp_servers=[], additional_directories=[str(library)]
            )
        session_id = response.session_id
        await agent.prompt(session_id, "first")
        (agent.workspace / "AGENTS.md").write_text("Changed while the session runs.")
        await agent.prompt(session_id, "second")
        first, second = (_system(r.body) for r in agent.model_requests())
    assert first == second, "the system prompt is byte-identical for the session"
    for text in ("Sign commits", "Use pytest", "never edit it"):
        assert text in first
    assert "Changed while" not in second
    assert first.index("Sign commits") < first.index("Use pytest") < first.index("never edit it")
