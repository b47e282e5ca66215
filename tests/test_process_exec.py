"""``hermes-acp exec`` through the real process (``python -m hermes_acp exec``) and the scripted model server, as a
script or a CI job runs it (docs/ci.md): the answer on stdout and exit code 0; a provider that fails (nothing
answers, a 401, a 404 model, a 503, a stream cut for good) exits 1 with the failure's kind in the result; a command
the policy refuses ends the turn with exit code 4 and never runs, one the policy file allows runs; ``--json`` is
every ``session/update`` (each valid against the ACP schema) and then the result; a prompt's and a session's budget
(a subagent's usage counted in its parent's) end the turn with exit code 3; ``--session`` continues a conversation
(and what it spent in earlier runs counts); ``--timeout`` exits 5; SIGINT while a command runs exits 130 and leaves
no process; bad options exit 2."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.model_server import serve_model_server
from tests.fakes.acp_schema import FrameLog
from tests.fakes.exec_process import exec_home

pytestmark = pytest.mark.anyio

DOWN = "http://127.0.0.1:9/v1"
"""Nothing listens there (the discard port)."""
CHILD = "You are a subagent"
HELLO: dict[str, Any] = {"name": "hello", "responses": [{"repeat": True, "steps": [{"text": "Hello from exec."}]}]}


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": call_id, "name": name, "arguments": arguments}}


async def test_a_finished_answer_is_on_stdout_and_exits_0(tmp_path: Path) -> None:
    async with serve_model_server(HELLO) as server:
        home = exec_home(tmp_path, server.openai_base_url)
        done = await home.run("Say hello")
        from_stdin = await home.run("-f", "-", stdin=b"Say hello from stdin")
        (home.workspace / "task.md").write_text("Say hello from a file")
        from_file = await home.run("-f", "task.md")
        words = await home.run("--", "what does", "--connect", "do")  # exec's words, not the relay's option
        prompts = [r.body["messages"][-1]["content"] for r in server.requests() if isinstance(r.body, dict)]
    assert (done.code, done.stdout) == (0, "Hello from exec.\n"), done.stderr
    assert "hermes-acp exec: session " in done.stderr
    assert (from_stdin.code, from_file.code, words.code) == (0, 0, 0), words.stderr
    assert prompts == ["Say hello", "Say hello from stdin", "Say hello from a file", "what does --connect do"]


FAILURES: dict[str, tuple[dict[str, Any] | None, int | None]] = {
    "unreachable": (None, None),
    "unauthorized": ({"error": {"status": 401, "message": "Incorrect API key provided"}}, 401),
    "model_not_found": ({"error": {"status": 404, "message": "The model `m` does not exist"}}, 404),
    "server_error": ({"error": {"status": 503, "message": "overloaded"}}, 503),
    "stream_cut": ({"cut_after_chunks": 2, "chunk_size": 4, "steps": [{"text": "Half an answer that stops"}]}, None),
}
"""Kind → (the scripted response, the HTTP status the failure carries); None: the provider's address is dead."""


@pytest.mark.parametrize("kind", list(FAILURES))
async def test_a_provider_that_fails_exits_1_with_what_failed(tmp_path: Path, kind: str) -> None:
    response, status = FAILURES[kind]
    scenario = {"name": kind, "responses": [response or {"steps": [{"text": "unused"}]}]}
    async with serve_model_server(scenario) as server:
        home = exec_home(tmp_path, server.openai_base_url if response is not None else DOWN)
        done = await home.run("--json", "Fix the parser")
    result = done.result
    failure = result["failure"]
    assert done.code == 1, done.stderr
    assert (result["outcome"], failure["kind"], failure["status"], failure["provider"]) == (
        "failed",
        kind,
        status,
        "fx",
    )
    assert failure["model"] == "fx:m"
    assert result["answer"] == ""
    assert f"The model request failed: {failure['message']} (exit code 1)" in done.stderr
    assert "⚠ The model request failed" in _said(done.updates), "the transcript keeps the notice for the person"


async def test_a_command_the_policy_refuses_ends_the_turn_with_exit_4_and_never_runs(tmp_path: Path) -> None:
    scenario = {
        "name": "refused",
        "responses": [
            {"steps": [{"text": "I'll run it."}, _call("t1", "terminal", command="touch ran.txt")]},
            {"steps": [{"text": "Done."}]},
        ],
    }
    async with serve_model_server(scenario) as server:
        home = exec_home(tmp_path, server.openai_base_url)
        done = await home.run("--json", "--approve", "edits", "Run it")
        asked = len(server.requests())
    result = done.result
    assert done.code == 4, done.stderr
    assert result["failure"]["kind"] == "permission_refused"
    assert "does not allow the command 'touch ran.txt'" in result["failure"]["message"]
    assert not (home.workspace / "ran.txt").exists()
    assert asked == 1, "the turn ended at the refusal: no request after it"
    cards = [u["update"] for u in done.updates if u["update"].get("toolCallId") == "t1"]
    assert cards[-1]["status"] == "failed", "the refused call settles"
    assert "✗ refused: Run `touch ran.txt`" in done.stderr


async def test_a_command_a_policy_file_allows_runs_and_its_edit_is_listed(tmp_path: Path) -> None:
    scenario = {
        "name": "allowed",
        "responses": [
            {"steps": [_call("t1", "terminal", command="touch ran.txt")]},
            {"steps": [_call("w1", "write_file", path="notes.md", content="# Notes\n")]},
            {"steps": [{"text": "Done."}]},
        ],
    }
    async with serve_model_server(scenario) as server:
        home = exec_home(tmp_path, server.openai_base_url)
        policy = tmp_path / "policy.toml"
        policy.write_text('approve = "edits"\nallow_commands = ["touch *"]\nrefuse_commands = ["git push*"]\n')
        done = await home.run("--json", "--policy", str(policy), "Run it and write notes")
    assert done.code == 0, done.stderr
    assert (home.workspace / "ran.txt").exists()
    assert done.result["filesChanged"] == ["notes.md"]
    assert done.result["answer"] == "Done."


async def test_json_is_every_update_valid_against_the_acp_schema_then_the_result(tmp_path: Path) -> None:
    scenario = {
        "name": "json",
        "responses": [
            {
                "steps": [{"reasoning": "Look first."}, {"text": "Listing."}, _call("l1", "list_files", path=".")],
                "usage": {"input_tokens": 500, "output_tokens": 20},
            },
            {"steps": [{"text": "Two files."}], "usage": {"input_tokens": 600, "output_tokens": 5}},
        ],
    }
    async with serve_model_server(scenario) as server:
        home = exec_home(tmp_path, server.openai_base_url)
        (home.workspace / "a.txt").write_text("a\n")
        done = await home.run("--json", "What is here?")
    log = FrameLog()
    for update in done.updates:
        log.add("to_client", {"jsonrpc": "2.0", "method": "session/update", "params": update})
    log.check(version=1)
    kinds = [u["update"]["sessionUpdate"] for u in done.updates]
    result = done.result
    assert done.code == 0, done.stderr
    assert {"agent_thought_chunk", "agent_message_chunk", "tool_call", "tool_call_update", "usage_update"} <= set(kinds)
    assert {u["sessionId"] for u in done.updates} == {result["sessionId"]}
    assert (result["outcome"], result["exitCode"], result["stopReason"]) == ("finished", 0, "end_turn")
    assert result["answer"] == "Two files."
    assert (result["usage"]["inputTokens"], result["usage"]["outputTokens"]) == (1100, 25)
    assert result["failure"] is None


LOOP_USAGE = {"input_tokens": 900, "output_tokens": 40}


async def test_a_prompt_budget_warns_then_ends_the_turn_with_exit_3(tmp_path: Path) -> None:
    scenario = {
        "name": "loop",
        "responses": [{"repeat": True, "steps": [_call("l", "list_files", path=".")], "usage": LOOP_USAGE}],
    }
    async with serve_model_server(scenario) as server:
        home = exec_home(tmp_path, server.openai_base_url)
        done = await home.run("--json", "--prompt-tokens", "2000", "Loop")
        asked = len(server.requests())
    result = done.result
    shown = _said(done.updates)
    assert done.code == 3, done.stderr
    assert asked == 3, "940, then 1,880 tokens (a warning), then 2,820: no fourth request"
    assert (result["stopReason"], result["failure"]["kind"], result["failure"]["limit"]) == (
        "max_turn_requests",
        "budget",
        "prompt_tokens",
    )
    assert "⚠ This prompt has spent 94% of its budget of 2,000 tokens (120 tokens left" in shown
    assert "⛔ This prompt's budget of 2,000 tokens is spent (2,820 tokens)" in shown
    assert result["budget"]["prompt_tokens"] == {
        "unit": "tokens",
        "limit": 2000,
        "spent": 2820,
        "left": 0,
        "lifted": False,
    }


async def test_a_session_budget_counts_a_subagent_s_usage_in_its_parent_s(tmp_path: Path) -> None:
    delegate = _call("d1", "delegate", task="TASK-A: look around", title="Look")
    scenario = {
        "name": "subagent-budget",
        "responses": [
            {
                "match": {"system_contains": CHILD, "last_message_contains": "TASK-A"},
                "steps": [{"text": "REPORT-A: nothing here."}],
                "usage": {"input_tokens": 600, "output_tokens": 5},
            },
            {
                "match": {"last_message_contains": "Delegate"},
                "steps": [delegate],
                "usage": {"input_tokens": 1000, "output_tokens": 10},
            },
            {"match": {"last_message_contains": "REPORT-A"}, "steps": [{"text": "Both done."}]},
        ],
    }
    async with serve_model_server(scenario) as server:
        home = exec_home(tmp_path, server.openai_base_url)
        done = await home.run("--json", "--session-tokens", "1500", "Delegate it")
        asked = len(server.requests())
    result = done.result
    assert done.code == 3, done.stderr
    assert asked == 2, "the parent (1,010) and the child (605) pass 1,500: the parent asks no more"
    assert (result["failure"]["kind"], result["failure"]["limit"]) == ("budget", "session_tokens")
    assert result["budget"]["session_tokens"]["spent"] == 1615


async def test_session_continues_a_conversation_and_its_id_is_printed(tmp_path: Path) -> None:
    async with serve_model_server(HELLO) as server:
        home = exec_home(tmp_path, server.openai_base_url)
        first = await home.run("--json", "Remember the word PAPAYA")
        session_id = first.result["sessionId"]
        second = await home.run("--session", session_id, "Which word?")
        sent = server.requests()[-1].body
        capped = await home.run("--json", "--session", session_id, "--session-tokens", "10", "Again?")
        asked = len(server.requests())
    assert (first.code, second.code) == (0, 0), second.stderr
    assert (capped.code, asked) == (3, 2), "what the session spent in earlier runs counts: no third request"
    assert capped.result["failure"]["limit"] == "session_tokens"
    assert f"hermes-acp exec: session {session_id}" in second.stderr
    assert isinstance(sent, dict)
    said = [m["content"] for m in sent["messages"] if m["role"] == "user"]
    assert said == ["Remember the word PAPAYA", "Which word?"]


async def test_the_timeout_cancels_the_turn_and_exits_5(tmp_path: Path) -> None:
    scenario = {"name": "slow", "responses": [{"hold_after_chunks": 1, "steps": [{"text": "Thinking hard"}]}]}
    async with serve_model_server(scenario) as server:
        home = exec_home(tmp_path, server.openai_base_url)
        done = await home.run("--json", "--timeout", "1", "Take forever")
    assert done.code == 5, done.stderr
    assert (done.result["failure"]["kind"], done.result["stopReason"]) == ("deadline", "cancelled")


async def test_sigint_while_a_command_runs_cancels_and_leaves_no_process(tmp_path: Path) -> None:
    scenario = {
        "name": "long-command",
        "responses": [
            {"steps": [_call("t1", "terminal", command="echo $$ > pid.fifo; exec sleep 300", timeout_s=600)]},
            {"steps": [{"text": "unused"}]},
        ],
    }
    async with serve_model_server(scenario) as server:
        home = exec_home(tmp_path, server.openai_base_url)
        fifo = home.workspace / "pid.fifo"
        os.mkfifo(fifo)
        process = await home.start("--approve", "all", "Run the long job")
        async with process:
            with anyio.fail_after(60):
                pid = int(await anyio.to_thread.run_sync(fifo.read_text, abandon_on_cancel=True))
                assert _running(pid), "the command runs"
                process.send_signal(signal.SIGINT)
                code = await process.wait()
    assert code == 130
    assert not _running(pid), "the command was killed with the turn"


def _said(updates: list[dict[str, Any]]) -> str:
    """The agent's message text in ``updates`` (its notices included)."""
    chunks = [u["update"] for u in updates if u["update"]["sessionUpdate"] == "agent_message_chunk"]
    return "".join(c["content"]["text"] for c in chunks)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its reaper is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--model", "fx:nope", "hi"], "fx:nope"),
        (["--session", "no-such-session", "hi"], "no-such-session"),
        (["--policy", "missing.toml", "hi"], "missing.toml: cannot be read"),
        (["--approve", "all", "--policy", "p.toml", "hi"], "--approve and --policy"),
        (["   "], "the prompt is empty"),
    ],
)
async def test_what_cannot_run_as_given_exits_2_and_says_why(tmp_path: Path, args: list[str], said: str) -> None:
    async with serve_model_server(HELLO) as server:
        home = exec_home(tmp_path, server.openai_base_url)
        done = await home.run(*args)
        asked = len(server.requests())
    assert done.code == 2, done.stderr
    assert said in done.stderr
    assert asked == 0
