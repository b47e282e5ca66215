"""The session store failing under the real ``python -m hermes_acp`` process, and the process killed mid-stream.

- A store that fills while a command runs (the agent's file-size limit lowered to what its write-ahead log holds,
  as ``prlimit --pid PID --fsize=N`` does) and one that turns read-only (the log made immutable): the prompt
  answers with an error naming the cause, the command ran once and its card says "outcome unknown" live, after the
  repair the next prompt makes, and after a reload in a new process: the same words. Reads keep working meanwhile,
  and the session goes on once the cause is gone.
- Kill -9 while a response streams: a reload in a new process shows the text up to the last checkpoint, and the
  next prompt's model request carries it.
- A command's output with invisible TAG characters reaches neither the editor nor the model.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError

from hermes_acp.turns.recovery import STORE_FAILED_TEXT
from tests.fakes.agent_process import AgentProcess, spawn_agent
from tests.fakes.store_faults import immutable, limit_file_size

pytestmark = pytest.mark.anyio

JOB: dict[str, Any] = {
    "name": "job",
    "responses": [
        {
            "match": {"last_message_contains": "start the job"},
            "steps": [
                {
                    "tool_call": {
                        "id": "call_job",
                        "name": "terminal",
                        "arguments": {
                            "command": "echo ran >> runs.log; echo job-started; until [ -e go ]; do sleep 0.02; done",
                        },
                    }
                }
            ],
        },
        {"repeat": True, "steps": [{"text": "Understood."}]},
    ],
}


def _job_output_seen(agent: AgentProcess, session_id: str) -> bool:
    return any(
        "job-started" in str(u.get("content"))
        for s, u in agent.client.updates
        if s == session_id and u["sessionUpdate"] == "tool_call_update" and u.get("toolCallId") == "call_job"
    )


async def _store_fails_while_the_job_runs(
    tmp_path: Path, fault: Callable[[AgentProcess], contextlib.AbstractAsyncContextManager[None]]
) -> tuple[str, dict[str, Any]]:
    """Run the job with ``fault`` active from the moment it runs until the prompt has failed; then go on in the same
    process and reload in a new one. Returns the prompt's error message and what was seen where."""
    home = tmp_path / "home"
    workspace = tmp_path / "workspace"
    async with spawn_agent(tmp_path, JOB, home=home) as agent:
        other = await agent.new_session()
        session_id = await agent.new_session()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        errors: list[RequestError] = []
        answered = anyio.Event()

        async def prompt() -> None:
            with pytest.raises(RequestError) as failed:
                await agent.prompt(session_id, "Please start the job")
            errors.append(failed.value)
            answered.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt)
            await agent.client.wait_for(lambda: _job_output_seen(agent, session_id), timeout=30)
            async with fault(agent):
                (workspace / "go").touch()
                with anyio.fail_after(30):
                    await answered.wait()
                live_card = agent.client.cards(session_id)["call_job"]
                with anyio.fail_after(30):
                    listed = await agent.conn.list_sessions(cwd=str(workspace))
        after = await agent.prompt(session_id, "What happened to the job?")
        request = agent.model_requests()[-1].body["messages"]
        agent.assert_json_rpc_only()
    async with spawn_agent(tmp_path / "second", JOB, home=home) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        reloaded_card = agent.client.cards(session_id)["call_job"]
    assert after.stop_reason == "end_turn"
    assert {s.session_id for s in listed.sessions} == {session_id, other}, "reads keep working"
    assert (workspace / "runs.log").read_text() == "ran\n", "the command ran exactly once"
    return str(errors[0]), {
        "live": _card_text(live_card),
        "reloaded": _card_text(reloaded_card),
        "statuses": (live_card["status"], reloaded_card["status"]),
        "model": [m for m in request if m.get("role") == "tool"],
    }


def _card_text(card: dict[str, Any]) -> str:
    return str(card["content"][0]["content"]["text"])


@contextlib.asynccontextmanager
async def _full(agent: AgentProcess) -> AsyncIterator[None]:
    wal = agent.home / "state.db-wal"
    limit_file_size(agent.process.pid, wal.stat().st_size)
    try:
        yield
    finally:
        limit_file_size(agent.process.pid, None)


@contextlib.asynccontextmanager
async def _read_only(agent: AgentProcess) -> AsyncIterator[None]:
    async with immutable(agent.home / "state.db-wal"):
        yield


@pytest.mark.parametrize(
    ("fault", "cause"),
    [(_full, "disk full"), (_read_only, "read-only")],
    ids=["fills", "turns-read-only"],
)
async def test_a_store_failing_mid_turn_names_the_cause_and_every_view_says_outcome_unknown(
    tmp_path: Path, fault: Callable[[AgentProcess], contextlib.AbstractAsyncContextManager[None]], cause: str
) -> None:
    message, seen = await _store_fails_while_the_job_runs(tmp_path, fault)
    assert "StorageError: session store" in message
    assert f": {cause}: " in message
    assert seen["statuses"] == ("failed", "failed")
    assert seen["live"] == seen["reloaded"] == STORE_FAILED_TEXT
    assert [m["content"] for m in seen["model"]] == [STORE_FAILED_TEXT]


STREAM_TEXT = "".join(f"Sentence {i:04d} of a long answer. " for i in range(200))
LONG_STREAM: dict[str, Any] = {
    "name": "long-stream",
    "responses": [
        {
            "match": {"last_message_contains": "write a lot"},
            "chunk_size": 16,
            "chunk_delay_ms": 1,
            "hold_after_chunks": len(STREAM_TEXT) // 16,
            "steps": [{"text": STREAM_TEXT}],
        },
        {"repeat": True, "steps": [{"text": "Continuing."}]},
    ],
}


async def test_text_shown_before_a_kill_9_mid_stream_survives_a_reload_and_reaches_the_model(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shown_chars = (len(STREAM_TEXT) // 16) * 16
    async with spawn_agent(tmp_path, LONG_STREAM, home=home) as agent:
        session_id = await agent.new_session()
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, session_id, "Please write a lot")
            await agent.client.wait_for(lambda: len(agent.client.text(session_id)) == shown_chars, timeout=30)
            shown = agent.client.transcript(session_id)["messages"]
            agent.process.send_signal(signal.SIGKILL)
            tg.cancel_scope.cancel()
        with anyio.fail_after(10):
            await agent.process.wait()
    ((message_id, text),) = shown.items()
    async with spawn_agent(tmp_path / "second", LONG_STREAM, home=home) as agent:
        with anyio.fail_after(30):
            await agent.conn.load_session(cwd=str(tmp_path / "workspace"), session_id=session_id, mcp_servers=[])
        replayed = agent.client.transcript(session_id)["messages"]
        after = await agent.prompt(session_id, "Go on")
        request = agent.model_requests()[-1].body["messages"]
    kept = replayed[message_id]
    assert len(kept) >= 2048, "at least the first checkpoint (2,048 characters) was stored before the kill"
    assert text.startswith(kept), "what the user saw, up to the last checkpoint"
    assert list(replayed) == [message_id], "the same message, once"
    assert after.stop_reason == "end_turn"
    assert [m["content"] for m in request if m["role"] == "assistant"] == [kept]


TAGGED: dict[str, Any] = {
    "name": "tagged-output",
    "responses": [
        {
            "match": {"last_message_contains": "print the file"},
            "steps": [
                {
                    "tool_call": {
                        "id": "call_print",
                        "name": "terminal",
                        "arguments": {
                            "command": r"printf 'visible \xf3\xa0\x81\x89\xf3\xa0\x81\x87\xf3\xa0\x81\x8e text'"
                        },
                    }
                }
            ],
        },
        {"repeat": True, "steps": [{"text": "Printed."}]},
    ],
}


async def test_invisible_tag_characters_in_a_command_s_output_reach_neither_editor_nor_model(tmp_path: Path) -> None:
    async with spawn_agent(tmp_path, TAGGED) as agent:
        session_id = await agent.new_session()
        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        response = await agent.prompt(session_id, "Please print the file")
        card = agent.client.cards(session_id)["call_print"]
        request = agent.model_requests()[-1].body["messages"]
    (result,) = [m for m in request if m.get("role") == "tool"]
    assert response.stop_reason == "end_turn"
    assert "visible  text" in _card_text(card)
    assert "visible  text" in result["content"]
    assert not any("\U000e0000" <= ch <= "\U000e007f" for ch in _card_text(card) + result["content"])
