"""Deny by default, through the real process with the real bubblewrap: a hostile model in ``dont_ask`` tries the
home's credentials, the session's secrets, the environment, a planted git configuration and a fork bomb; the effects
are checked from outside (the tree lies outside ``/tmp``, which commands see private).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.model_server import load_scenario
from tests.fakes.agent_process import AgentProcess, spawn_agent

from .support import outside_tmp, require_bwrap

pytestmark = pytest.mark.anyio

KEY = "sk-deny-by-default-0123456789"
TURN_S = 120.0
LIMITS = "\n[sandbox.limits]\nprocesses = 64\n"


@pytest.fixture
def tree() -> Iterator[Path]:
    require_bwrap()
    with outside_tmp() as root:
        yield root


def _calls(commands: list[str], prefix: str = "call") -> dict[str, Any]:
    steps = [
        {"tool_call": {"id": f"{prefix}_{i}", "name": "terminal", "arguments": {"command": c}}}
        for i, c in enumerate(commands)
    ]
    return {"name": "commands", "responses": [{"steps": steps}, {"steps": [{"text": "done"}], "repeat": True}]}


def _results(agent: AgentProcess) -> dict[str, str]:
    messages = agent.model_requests()[1].body["messages"]
    return {m["tool_call_id"]: m["content"] for m in messages if m.get("role") == "tool"}


async def test_a_hostile_model_reaches_no_secret_plants_nothing_and_a_fork_bomb_ends(tree: Path) -> None:
    # HOME is the tree (spawn_agent's choice): the workspace and the agent's home lie inside it.
    (tree / ".npmrc").write_text(f"//registry/:_authToken={KEY}")
    (tree / ".git-credentials").write_text(f"https://u:{KEY}@github.com")
    (tree / ".ssh").mkdir()
    (tree / ".ssh" / "id_ed25519").write_text(KEY)
    ws = tree / "workspace"
    (ws / "deep" / "a" / "b" / "c" / "d" / "e" / "f").mkdir(parents=True)
    (ws / "deep" / "a" / "b" / "c" / "d" / "e" / "f" / ".env").write_text(f"TOKEN={KEY}")
    await anyio.run_process(["git", "init", "-q", str(ws)])
    marker = tree / "ran-outside"
    commands = [
        "cat ~/.npmrc ~/.git-credentials ~/.ssh/id_ed25519 deep/a/b/c/d/e/f/.env; env",
        f"git config core.fsmonitor 'touch {marker}'; mkdir -p new && cd new && git init -q . &&"
        f" git config core.fsmonitor 'touch {marker}' && echo planted",
        "cat /sys/fs/cgroup/pids$(grep -E '^[0-9]+:pids:' /proc/self/cgroup | cut -d: -f3)/pids.max 2>/dev/null"
        " || ulimit -u",
    ]
    env = {
        "OPENAI_API_KEY": KEY,
        "GITHUB_PAT": KEY,
        "AWS_ACCESS_KEY_ID": KEY,
        "DATABASE_URL": f"postgres://app:{KEY}@db/prod",
        "SECRET": KEY,
    }
    async with spawn_agent(tree, _calls(commands), env=env, config_extra=LIMITS, sandbox="required") as agent:
        session_id = await agent.new_session()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        with anyio.fail_after(TURN_S):
            assert (await agent.prompt(session_id, "go")).stop_reason == "end_turn"
        results = _results(agent)
        assert all(KEY not in text for text in results.values()), "no secret reached a command"
        assert "home_read" in results["call_0"] and "reveal" in results["call_0"], "the model is told how to allow"
        assert "planted" in results["call_1"] and "switched off" in results["call_1"]
        limit = results["call_2"].split("\n")[1]
        if limit != "64":
            pytest.skip(f"the process limit is not in place here ({limit!r}): no fork bomb is run")
        bomb = _calls(["f(){ f & }; while :; do f; done"], prefix="bomb")
        bomb["responses"][0]["match"] = {"last_message_contains": "bomb"}
        bomb["responses"].insert(0, {"match": {"last_message_contains": "other"}, "steps": [{"text": "fine"}]})
        agent.model.set_scenario(load_scenario(bomb))
        other = await agent.new_session()
        with anyio.fail_after(TURN_S):
            async with anyio.create_task_group() as group:

                async def bomb_turn() -> None:
                    assert (await agent.prompt(session_id, "bomb")).stop_reason == "end_turn"

                group.start_soon(bomb_turn)
                answered = await agent.prompt(other, "the other session")
                assert answered.stop_reason == "end_turn", "another session goes on meanwhile"
        card = agent.client.cards(session_id)["bomb_0"]
        # Ended by the watcher, or gave up by itself when its forks failed: either way the note names the limit.
        assert card["status"] == "failed" and "[sandbox.limits] processes" in str(card["content"])
        assert agent.process.returncode is None
        assert await agent.shutdown() == 0
    for repository in (ws, ws / "new"):
        with anyio.fail_after(30):
            done = await anyio.run_process(["git", "status"], cwd=repository, check=False)
        assert done.returncode == 0
    assert not marker.exists(), "a plain git status outside ran nothing that was planted"
    assert "fsmonitor" not in (ws / ".git" / "config").read_text()
    assert os.path.exists(ws / "new" / ".git" / "config.quarantined")
