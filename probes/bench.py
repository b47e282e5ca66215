"""``make bench``: speed and memory of hermes-acp on this machine, printed as a table and appended to NOTES.md.

Every row drives the real ``python -m hermes_acp`` process over stdio with the probe's client, against the scripted
model server (and the simulated cua-driver / fixture MCP server where a row needs them), in a fresh temporary home.
Process-level timings (spawn → initialize) use our own clock rather than hyperfine: hyperfine times a command until
it exits, and the number that matters is the moment the ``initialize`` answer arrives.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from acp import schema

from fixtures.model_server import load_scenario, serve_model_server

from .agent import AgentProcess, ProbeClient, peak_rss_kib, spawn_agent
from .bench_control import STEERING_RESPONSES, rewind_rows, steering_rows
from .raw import raw_agent

__all__ = ["ROWS", "Row", "main", "run_bench"]

REPO = Path(__file__).resolve().parent.parent
NOTES = REPO / "NOTES.md"
COMMAND = [sys.executable, "-m", "hermes_acp"]


@dataclass
class Row:
    name: str
    value: str
    note: str = ""


@dataclass
class Bench:
    base_url: str
    home: Path
    workspace: Path
    server: Any
    repo: Path = REPO
    """The checkout whose ``hermes_acp`` the agent runs (``probes/bench_against.py`` names another)."""

    def env(self) -> dict[str, str]:
        return {"HERMES_ACP_HOME": str(self.home), "HOME": str(self.home), "PYTHONPATH": str(self.repo)}

    def spawn(self, client: ProbeClient | None = None, *, initialize: bool = True) -> Any:
        return spawn_agent(
            COMMAND,
            env=self.env(),
            stderr=self.home / "agent.stderr",
            client=client or ProbeClient(),
            cwd=self.workspace,
            initialize=initialize,
        )


USE_EVERYTHING: list[dict[str, Any]] = [
    {"match": {"last_message_contains": "use-everything"}, "steps": [
        {"tool_call": {"name": "read_file", "arguments": {"path": "notes.txt"}}},
        {"tool_call": {"name": "search_files", "arguments": {"pattern": "hello"}}},
        {"tool_call": {"name": "terminal", "arguments": {"command": "echo hi && ls"}}},
        {"tool_call": {"name": "mcp__fixture__echo", "arguments": {"text": "hi"}}},
    ]},
]  # fmt: skip
"""A response that calls a file tool, a search, a command and an MCP server's tool."""


SCENARIO: dict[str, Any] = {
    "name": "bench",
    "models": ["bench-model"],
    "responses": [
        *STEERING_RESPONSES,
        {
            "match": {"last_message_contains": "stream-rate"},
            "repeat": True,
            "chunk_size": 4,
            "chunk_delay_ms": 1,
            "steps": [{"text": "0123" * 500}],
        },
        {
            "match": {"last_message_contains": "flood-me"},
            "repeat": True,
            "steps": [{"tool_call": {"name": "mcp__hostile__flood", "arguments": {}}}],
        },
        {"match": {"last_message_contains": "FLOOD"}, "repeat": True, "steps": [{"text": "read it"}]},
        {
            "match": {"last_message_contains": "never-ending"},
            "repeat": True,
            "endless": True,
            "steps": [{"text": "never ending "}],
        },
        {
            "match": {"last_message_contains": "cancel-me"},
            "repeat": True,
            "hold_after_chunks": 1,
            "steps": [{"text": "x" * 64}],
        },
        *USE_EVERYTHING,
        {"repeat": True, "steps": [{"text": "Hi."}], "usage": {"input_tokens": 100, "output_tokens": 2}},
    ],
}


def _config(base_url: str) -> str:
    models = '["bench-model", "bench-model-2", { id = "bench-16k", context_window = 16000 }]'
    return (
        '[model]\ndefault = "bench:bench-model"\n'
        f'[providers.bench]\nkind = "openai"\nbase_url = "{base_url}/v1"\nmodels = {models}\n'
    )


def _text(text: str) -> list[Any]:
    return [schema.TextContentBlock(type="text", text=text)]


async def _new(agent: AgentProcess, bench: Bench) -> str:
    with anyio.fail_after(30):
        response = await agent.conn.new_session(cwd=str(bench.workspace), mcp_servers=[])
    return response.session_id


async def cold_start(bench: Bench, runs: int) -> list[Row]:
    initialize: list[float] = []
    first_new: list[float] = []
    first_chunk: list[float] = []
    cold_turn: list[float] = []
    later_new: list[float] = []
    for _ in range(runs):
        async with bench.spawn() as agent:
            initialize.append(agent.initialize_ms or 0)
            session_id = await _new(agent, bench)
            first_new.append((time.perf_counter() - agent.spawned_at) * 1000)
            agent.client.reset_first_update()
            async with anyio.create_task_group() as tg:
                sent = time.perf_counter()
                tg.start_soon(_prompt, agent, session_id, "hello")
                with anyio.fail_after(30):
                    await agent.client.first_update.wait()
                first_chunk.append((time.perf_counter() - agent.spawned_at) * 1000)
                cold_turn.append((time.perf_counter() - sent) * 1000)
            for _ in range(5):
                t0 = time.perf_counter()
                await _new(agent, bench)
                later_new.append((time.perf_counter() - t0) * 1000)
    return [
        Row("cold start → initialize response", _ms(initialize), f"median of {runs} spawns (goal ≤ 150 ms)"),
        Row("cold start → first session/new answered", _ms(first_new), "goal ≤ 450 ms"),
        Row(
            "cold first turn: prompt → first chunk",
            _ms(cold_turn),
            "prompt right after the first session/new, as `acpx exec`; 0 ms model; goal ≤ 300 ms",
        ),
        Row("cold start → first chunk of the first prompt", _ms(first_chunk), "spawn, initialize, new, prompt"),
        Row("session/new (warm, no MCP server)", _ms(later_new), "goal ≤ 20 ms"),
    ]


async def model_switch(bench: Bench, runs: int) -> list[Row]:
    """Zed switches the model right after the first session/new: the first switch of a fresh process, then later."""
    first: list[float] = []
    later: list[float] = []
    for _ in range(runs):
        async with bench.spawn() as agent:
            session_id = await _new(agent, bench)
            for i, target in enumerate(["bench:bench-model-2", "bench:bench-model", "bench:bench-model-2"]):
                started = time.perf_counter()
                with anyio.fail_after(30):
                    await agent.conn.set_config_option(config_id="model", session_id=session_id, value=target)
                (first if i == 0 else later).append((time.perf_counter() - started) * 1000)
    return [
        Row("first model switch of a process", _ms(first), f"right after the first session/new; median of {runs}"),
        Row("later model switches", _ms(later), "set_config_option model"),
    ]


async def fresh_load(bench: Bench, runs: int) -> list[Row]:
    """session/load of a short session (5 turns) in a fresh process: right after initialize (it waits for the
    server to load) and once the server is up."""
    session_id = await _stored_session(bench, turns=5)
    right_after: list[float] = []
    when_ready: list[float] = []
    for _ in range(runs):
        for ready in (False, True):
            async with bench.spawn() as agent:
                if ready:
                    with anyio.fail_after(30):
                        await agent.conn.list_sessions()
                started = time.perf_counter()
                with anyio.fail_after(60):
                    await agent.conn.load_session(cwd=str(bench.workspace), session_id=session_id, mcp_servers=[])
                (when_ready if ready else right_after).append((time.perf_counter() - started) * 1000)
    return [
        Row("session/load of a short session, fresh process", _ms(when_ready), "15 events; server up; goal ≤ 50 ms"),
        Row("session/load right after initialize", _ms(right_after), "fresh process; includes the server's own load"),
    ]


async def delete_after_load(bench: Bench, runs: int) -> list[Row]:
    """session/delete sent right behind a session/load in a fresh process (the server up): the delete must not wait
    for the turn machinery, which the load starts warming up in the background."""
    times: list[float] = []
    for _ in range(runs):
        session_id = await _stored_session(bench, turns=5)
        async with bench.spawn() as agent:
            with anyio.fail_after(30):
                await agent.conn.list_sessions()
                await agent.conn.load_session(cwd=str(bench.workspace), session_id=session_id, mcp_servers=[])
                started = time.perf_counter()
                await agent.conn.delete_session(session_id=session_id)
            times.append((time.perf_counter() - started) * 1000)
    return [Row("session/delete right after a cold session/load", _ms(times), f"median of {runs}; fresh process")]


SKILLS = 200


def _write_skills(workspace: Path, count: int) -> None:
    folder = workspace / ".agents" / "skills"
    for index in range(count):
        name = f"skill-{index:03d}"
        path = folder / name / "SKILL.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"---\nname: {name}\ndescription: Does task number {index} of the project, when asked for it.\n"
            f"license: MIT\nmetadata:\n  author: bench\n---\n# Task {index}\n\n" + "Do this step.\n" * 40
        )


async def skill_discovery(bench: Bench, runs: int) -> list[Row]:
    """Finding a project's 200 skills: the first scan and a rescan, in this process (the files in the page cache;
    PyYAML loaded, as it is after the first scan of a server), and what the real server's session/new costs with
    them: the scan runs after the answer, before the first command listing."""
    from hermes_acp.commands.skills import SkillShelf, skill_roots
    from hermes_acp.tools.context import Workspace

    with tempfile.TemporaryDirectory(prefix="hermes-skills-") as tmp:
        workspace = Path(tmp) / "project"
        workspace.mkdir()
        _write_skills(workspace, SKILLS)
        roots = skill_roots(Workspace(cwd=workspace), bench.home)
        await SkillShelf(roots).ensure()  # loads PyYAML
        first: list[float] = []
        rescans: list[float] = []
        for _ in range(runs):
            shelf = SkillShelf(roots)
            started = time.perf_counter()
            await shelf.ensure()
            first.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            await shelf.rescan()
            rescans.append((time.perf_counter() - started) * 1000)
            assert len(shelf.skills) == SKILLS, shelf.problems[:3]
        new_with: list[float] = []
        new_without: list[float] = []
        listed: list[float] = []
        async with bench.spawn() as agent:
            await _new(agent, bench)  # the first session/new of a process loads the rest of the server
            for _ in range(runs):
                for cwd, times in ((workspace, new_with), (bench.workspace, new_without)):
                    started = time.perf_counter()
                    with anyio.fail_after(30):
                        response = await agent.conn.new_session(cwd=str(cwd), mcp_servers=[])
                    times.append((time.perf_counter() - started) * 1000)
                    if cwd == workspace:
                        listed.append(await _until_commands(agent, response.session_id, started))
    python = "import time; started = time.perf_counter(); import yaml; print((time.perf_counter() - started) * 1000)"
    process = await anyio.run_process([sys.executable, "-c", python])
    return [
        Row(f"skill discovery, {SKILLS} skills: first scan", _ms(first), f"median of {runs}; goal ≤ 20 ms"),
        Row(f"skill rescan, {SKILLS} unchanged", _ms(rescans), "around every prompt; stat only"),
        Row(f"session/new, project with {SKILLS} skills", _ms(new_with), f"without skills: {_ms(new_without)}"),
        Row(
            f"session/new → commands listed, {SKILLS} skills",
            _ms(listed),
            "the first available_commands_update, skills included (after the answer)",
        ),
        Row(
            "PyYAML import", f"{float(process.stdout):.1f} ms", "once per process, by the first scan that finds a skill"
        ),
    ]


async def _until_commands(agent: AgentProcess, session_id: str, started: float) -> float:
    """Milliseconds from ``started`` to the session's first ``available_commands_update`` (its arrival time is
    recorded when the client takes it; the frame's observer runs just before, hence the bounded re-check)."""
    with anyio.fail_after(30):
        while True:
            for update in agent.client.updates:
                if update.session_id == session_id and update.body.get("sessionUpdate") == "available_commands_update":
                    return (update.at - started) * 1000
            with anyio.move_on_after(0.05):
                await agent.client.frame_arrived.wait()


async def cancel_request(bench: Bench, runs: int) -> list[Row]:
    """The SDK 1.0 client sends ``$/cancel_request`` when a caller stops waiting for a prompt: time to the answer."""
    latencies: list[float] = []
    async with bench.spawn() as agent:
        session_id = await _new(agent, bench)
        for _ in range(runs):
            agent.client.reset_first_update()
            with anyio.fail_after(30):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_prompt, agent, session_id, "cancel-me")
                    await agent.client.first_update.wait()
                    (prompt_id,) = [
                        i
                        for i, (_, m) in agent.client.sent_requests.items()
                        if m == "session/prompt" and i not in agent.client.answered
                    ][-1:]
                    cancelled = time.perf_counter()
                    tg.cancel_scope.cancel()
                while prompt_id not in agent.client.answered:
                    await agent.client.frame_arrived.wait()
            latencies.append((agent.client.answered[prompt_id] - cancelled) * 1000)
    return [Row("$/cancel_request of a prompt → answered", _ms(latencies), f"median of {runs}; the turn settles first")]


async def shutdown(bench: Bench, runs: int) -> list[Row]:
    """From SIGTERM (or stdin's EOF) with a command running to the process's exit: turns settled, children gone."""
    bench.server.set_scenario(load_scenario(_LONG_COMMAND))
    times: dict[str, list[float]] = {"SIGTERM": [], "EOF": []}
    try:
        for _ in range(runs):
            for how, values in times.items():
                async with bench.spawn() as agent:
                    session_id = await _new(agent, bench)
                    with anyio.fail_after(30):
                        await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
                    agent.client.reset_first_update()
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(_prompt, agent, session_id, "start the long command")
                        with anyio.fail_after(30):
                            await agent.client.first_update.wait()
                        started = time.perf_counter()
                        if how == "SIGTERM":
                            agent.process.terminate()
                        else:
                            assert agent.process.stdin is not None
                            agent.process.stdin.close()
                        with anyio.fail_after(30):
                            await agent.process.wait()
                        values.append((time.perf_counter() - started) * 1000)
                        tg.cancel_scope.cancel()
    finally:
        bench.server.set_scenario(load_scenario(SCENARIO))
    return [
        Row(f"shutdown on {how} with a command running", _ms(values), "to the process's exit; goal ≤ 2 s")
        for how, values in times.items()
    ]


_LONG_COMMAND: dict[str, Any] = {
    "name": "bench-long-command",
    "responses": [
        {
            "match": {"last_message_contains": "start the long command"},
            "repeat": True,
            "steps": [{"tool_call": {"name": "terminal", "arguments": {"command": "sleep 60", "timeout_s": 120}}}],
        },
        {"repeat": True, "steps": [{"text": "Done."}]},
    ],
}


async def _stored_session(bench: Bench, turns: int, home: Path | None = None) -> str:
    """A session of ``turns`` question/answer turns written straight into the store (of ``home``: the bench's)."""
    from hermes_acp.core import (
        AssistantMessage,
        AssistantMessageStored,
        TextBlock,
        TextPart,
        TurnEnded,
        Usage,
        UserMessage,
        UserPrompted,
    )
    from hermes_acp.storage import SessionRecord, SqliteSessionStore, utc_now

    store = await SqliteSessionStore.open((home or bench.home) / "state.db")
    now = utc_now()
    session_id = f"bench-{turns}-turns-{time.time_ns()}"
    await store.create_session(
        SessionRecord(
            id=session_id, cwd=str(bench.workspace.resolve()), created_at=now, updated_at=now, mode_id="default"
        )
    )
    batch: list[Any] = []
    for turn in range(turns):
        question = f"question {turn}: what does line {turn} of the parser do?"
        batch += [
            UserPrompted(
                turn_id=f"t{turn}",
                message_id=f"u{turn}",
                display=[TextBlock(text=question)],
                message=UserMessage(parts=[TextPart(text=question)]),
            ),
            AssistantMessageStored(
                turn_id=f"t{turn}",
                message_id=f"a{turn}",
                message=AssistantMessage(parts=[TextPart(text=f"Line {turn} tokenises the input. " * 4)]),
                model_id="bench:bench-model",
                usage=Usage(input_tokens=900 + turn, output_tokens=40),
                context_window=128_000,
            ),
            TurnEnded(turn_id=f"t{turn}", stop_reason="end_turn"),
        ]
    await store.append_events(session_id, batch)
    await store.aclose()
    return session_id


async def session_new_with_mcp(bench: Bench, runs: int) -> list[Row]:
    """``session/new`` with one stdio MCP server, and with one OAuth server already signed in (its tokens on disk in
    the agent's home), one after the other in one agent process: what each adds to the answer (neither waits for its
    server; ``mcp_client`` measures the connects)."""
    from fixtures.mcp_auth import serve_protected

    from .bench_mcp import sign_in_once

    stdio = schema.McpServerStdio.model_validate(
        {
            "name": "fixture",
            "command": sys.executable,
            "args": ["-m", "fixtures.mcp_server", "--journal", str(bench.home / "mcp-journal.jsonl")],
            "env": [{"name": "PYTHONPATH", "value": str(REPO)}],
        }
    )
    times: dict[str, list[float]] = {"stdio": [], "oauth": []}
    async with serve_protected() as protected:
        await sign_in_once(protected.url, bench.home / "mcp-auth")
        oauth = schema.HttpMcpServer.model_validate(
            {"type": "http", "name": "remote", "url": protected.url, "headers": []}
        )
        async with bench.spawn() as agent:
            await _new(agent, bench)
            for _ in range(runs):
                for kind, server in (("stdio", stdio), ("oauth", oauth)):
                    started = time.perf_counter()
                    with anyio.fail_after(30):
                        response = await agent.conn.new_session(cwd=str(bench.workspace), mcp_servers=[server])
                    times[kind].append((time.perf_counter() - started) * 1000)
                    with anyio.fail_after(30):
                        await agent.conn.close_session(session_id=response.session_id)
    over = statistics.median(times["oauth"]) - statistics.median(times["stdio"])
    return [
        Row("session/new with one stdio MCP server", _ms(times["stdio"]), f"median of {runs}; goal ≤ 50 ms"),
        Row(
            "session/new with one OAuth MCP server, signed in",
            _ms(times["oauth"]),
            f"tokens on disk; median of {runs}, alternating with the stdio row; {over:+.1f} ms over it (goal ≤ 50)",
        ),
    ]


async def parallel_reads(bench: Bench, turns: int = 5) -> list[Row]:
    """Three 100 ms MCP calls in one response: the turn's tool time (from the end of that response to the next
    model request), for read-only calls (``slow_echo``, run together) and, for comparison, mutating ones
    (``sleep``, run one at a time)."""
    server = {
        "name": "fixture",
        "command": sys.executable,
        "args": ["-m", "fixtures.mcp_server", "--tools", "slow_echo,sleep"],
        "env": [{"name": "PYTHONPATH", "value": str(REPO)}],
    }
    reads = [
        {"tool_call": {"name": "mcp__fixture__slow_echo", "arguments": {"text": f"slow-{i}", "seconds": 0.1}}}
        for i in range(3)
    ]
    sleeps = [{"tool_call": {"name": "mcp__fixture__sleep", "arguments": {"seconds": 0.1}}} for _ in range(3)]
    bench.server.set_scenario(
        load_scenario(
            {
                "name": "parallel-reads-bench",
                "responses": [
                    {"match": {"last_message_contains": "read three"}, "repeat": True, "steps": reads},
                    {"match": {"last_message_contains": "sleep three"}, "repeat": True, "steps": sleeps},
                    {"repeat": True, "steps": [{"text": "Done."}]},
                ],
            }
        )
    )
    gaps: dict[str, list[float]] = {"read three": [], "sleep three": []}
    async with bench.spawn() as agent:
        with anyio.fail_after(30):
            response = await agent.conn.new_session(
                cwd=str(bench.workspace), mcp_servers=[schema.McpServerStdio.model_validate(server)]
            )
            await agent.conn.set_session_mode(session_id=response.session_id, mode_id="dont_ask")
        for prompt, times in gaps.items():
            await _prompt(agent, response.session_id, prompt)  # warm: the server started, the tools listed
            for _ in range(turns):
                before = len(bench.server.requests())
                await _prompt(agent, response.session_id, prompt)
                answered, asked = bench.server.requests()[before : before + 2]
                times.append(((asked.received_monotonic or 0) - (answered.finished_monotonic or 0)) * 1000)
    bench.server.set_scenario(load_scenario(SCENARIO))
    note = f"median of {turns} turns; from the end of the response to the next request"
    return [
        Row(
            "tool time: three 100 ms read-only MCP calls",
            _ms(gaps["read three"]),
            f"run together; {note}; goal ≤ 150 ms",
        ),
        Row("tool time: three 100 ms mutating MCP calls", _ms(gaps["sleep three"]), f"one at a time; {note}"),
    ]


async def file_changes(bench: Bench, turns: int = 5) -> list[Row]:
    """``edit_file`` on a 10 KB and a 1 MiB file: the tool time of one edit (from the end of the response to the next
    request: read, diff, approval, the old content stored with ``ToolCallRunning``, verify, write, settle) and the
    bytes its ``ToolCallRunning`` takes in the store (the file-change record, docs/architecture.md §9.1)."""
    import sqlite3

    sizes = {"10 KB": 10_000, "1 MiB": 1024 * 1024 - 200}
    responses: list[dict[str, Any]] = []
    for label in sizes:
        name = f"edit-{label.replace(' ', '')}.txt"
        for turn in range(turns + 1):
            edit = {"old_text": f"line {turn}\n", "new_text": f"LINE {turn}\n"}
            responses.append(
                {
                    "match": {"last_message_contains": f"edit {label} #{turn}"},
                    "steps": [{"tool_call": {"name": "edit_file", "arguments": {"path": name, "edits": [edit]}}}],
                }
            )
    responses.append({"repeat": True, "steps": [{"text": "Done."}]})
    bench.server.set_scenario(load_scenario({"name": "file-changes-bench", "responses": responses}))
    rows: list[Row] = []
    async with bench.spawn() as agent:
        session_id = await _new(agent, bench)
        with anyio.fail_after(30):
            await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        for label, size in sizes.items():
            lines = "".join(f"line {n}\n" for n in range(turns + 1))
            (bench.workspace / f"edit-{label.replace(' ', '')}.txt").write_text(lines + "x" * (size - len(lines)))
            times: list[float] = []
            for turn in range(turns + 1):
                before = len(bench.server.requests())
                await _prompt(agent, session_id, f"edit {label} #{turn}")
                answered, asked = bench.server.requests()[before : before + 2]
                if turn:  # the first edit warms the tools up
                    times.append(((asked.received_monotonic or 0) - (answered.finished_monotonic or 0)) * 1000)
            with sqlite3.connect(bench.home / "state.db") as db:
                (stored,) = db.execute(
                    "SELECT length(payload_json) FROM events WHERE session_id = ? AND kind = 'tool_call_running'"
                    " ORDER BY seq DESC LIMIT 1",
                    (session_id,),
                ).fetchone()
            rows.append(
                Row(
                    f"edit_file of a {label} file",
                    _ms(times),
                    f"tool time, median of {turns} edits; its ToolCallRunning (the old content) stores {stored} bytes",
                )
            )
    bench.server.set_scenario(load_scenario(SCENARIO))
    return rows


async def computer_use_overhead(bench: Bench) -> list[Row]:
    """Per action, the agent's own time around the simulated driver's (``rawOutput.meta`` of each call)."""
    from fixtures.cua_driver_sim import command as simulated_driver

    argv, env = simulated_driver(journal=bench.home / "cu-journal.jsonl", state=bench.home / "cu-state.json")
    capture = {"tool_call": {"name": "computer_use", "arguments": {"action": "capture", "app": "Calculator"}}}
    clicks = [{"tool_call": {"name": "computer_use", "arguments": {"action": "click", "element": 8}}}] * 10
    bench.server.set_scenario(
        load_scenario(
            {
                "name": "computer-use-bench",
                "responses": [
                    {
                        "match": {"last_message_contains": "press one"},
                        "steps": [
                            {
                                "tool_call": {
                                    "name": "computer_use",
                                    "arguments": {"action": "capture", "app": "Calculator"},
                                }
                            }
                        ],
                    },
                    {"match": {"any_message_contains": '"action":"capture"'}, "steps": [*clicks, *[capture] * 5]},
                    {"repeat": True, "steps": [{"text": "Done."}]},
                ],
            }
        )
    )
    client = ProbeClient()
    spawn = spawn_agent(
        COMMAND,
        env={**bench.env(), **env, "HERMES_CUA_DRIVER_CMD": shlex.join(argv), "PYTHONPATH": str(bench.repo)},
        stderr=bench.home / "agent.stderr",
        client=client,
        cwd=bench.workspace,
    )
    async with spawn as agent:
        session_id = await _new(agent, bench)
        with anyio.fail_after(30):
            await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
        await _prompt(agent, session_id, "press one ten times")
    bench.server.set_scenario(load_scenario(SCENARIO))
    outputs = [
        u.body["rawOutput"]
        for u in client.updates
        if u.kind == "tool_call_update" and isinstance(u.body.get("rawOutput"), dict) and "meta" in u.body["rawOutput"]
    ]
    first = outputs[0]["meta"] if outputs else None
    rows = []
    if first is not None:
        note = "the first capture starts the driver: MCP SDK import off the event loop + spawn + initialize"
        rows.append(Row("computer_use first action (driver start)", f"{first['total_ms']:.0f} ms", note))
    for action in ("capture", "click"):
        metas = [o["meta"] for o in outputs[1:] if o.get("action") == action]
        if not metas:
            continue
        overhead = [m["total_ms"] - m["driver_ms"] for m in metas]
        driver = statistics.median(m["driver_ms"] for m in metas)
        note = f"over the simulated driver's own {driver:.1f} ms; {len(metas)} actions"
        rows.append(Row(f"computer_use overhead per {action}", _ms(overhead), note))
    return rows or [Row("computer_use overhead per action", "n/a", "no rawOutput.meta in the frames")]


async def first_chunk_overhead(bench: Bench, turns: int) -> list[Row]:
    overheads: list[float] = []
    latencies: list[float] = []
    async with bench.spawn() as agent:
        session_id = await _new(agent, bench)
        await _prompt(agent, session_id, "warm up")
        for i in range(turns):
            agent.client.reset_first_update()
            before = len(bench.server.requests())
            sent = time.perf_counter()
            async with anyio.create_task_group() as tg:
                tg.start_soon(_prompt, agent, session_id, f"hello {i}")
                with anyio.fail_after(30):
                    await agent.client.first_update.wait()
                seen = time.perf_counter()
            record = bench.server.requests()[before]
            server_ttft = (record.first_token_monotonic or record.received_monotonic) - record.received_monotonic
            overheads.append((seen - sent) * 1000 - server_ttft * 1000)
            latencies.append((seen - sent) * 1000)
    return [
        Row("warm turn: prompt → first chunk", _ms(latencies), f"0 ms model; median of {turns} turns; goal ≤ 10 ms"),
        Row("agent overhead to first chunk", _ms(overheads), f"probe latency − fixture TTFT, median of {turns} turns"),
    ]


async def chunk_rate(bench: Bench) -> list[Row]:
    async with bench.spawn() as agent:
        session_id = await _new(agent, bench)
        before = len(agent.client.updates)
        requests_before = len(bench.server.requests())
        await _prompt(agent, session_id, "stream-rate please")
        chunks = [u for u in agent.client.updates[before:] if u.kind == "agent_message_chunk"]
        record = bench.server.requests()[requests_before]
    received = chunks[-1].at - chunks[0].at if len(chunks) > 1 else 0.0
    sent = (record.finished_monotonic or 0) - (record.first_token_monotonic or 0)
    rate = (len(chunks) - 1) / received if received else 0.0
    fixture_rate = (record.content_chunks - 1) / sent if sent else 0.0
    note = f"{len(chunks)} chunks; the fixture sent {fixture_rate:.0f}/s (1 ms apart)"
    return [Row("chunk forwarding", f"{rate:.0f} chunks/s", note)]


async def checkpoint_overhead(bench: Bench, pairs: int, chunks: int) -> list[Row]:
    """Chunk forwarding in the turn loop's streaming step with checkpointing (the default policy) against the same
    without, in process: a provider that yields ready deltas as fast as it can, the real SQLite store, a sink that
    renders each update as the wire does. CPU time of the process (the store's and the watcher's threads included).
    Each pair runs both, in random order, back to back, so load on the machine that comes and goes hits both alike;
    the figure is the median of the pairs' ratios, with their interquartile range, and the note gives the CPU one
    checkpoint costs (the difference over the checkpoints written), from which the cost at any stream rate follows.
    A stream this fast keeps the event loop busy, so the store's worker thread competes with it for the GIL: the
    worst case. The sink is cheaper than a real client connection, which makes the share larger, not smaller."""
    from hermes_acp.jsonrpc.framing import encode_frame
    from hermes_acp.protocol.convert import event_updates, live_update
    from hermes_acp.providers.base import ProviderEvent, ProviderRequest, ResponseDone, TextDelta
    from hermes_acp.storage import SessionRecord, SqliteSessionStore, utc_now
    from hermes_acp.turns import CHECKPOINTS, LiveUpdate, Recorder, SessionProjection
    from hermes_acp.turns.streaming import PartialResponse, stream_response

    deltas = [TextDelta(text=f"t{i % 1000:03d}") for i in range(chunks)]
    done = ResponseDone.model_validate(
        {"message": {"parts": [{"kind": "text", "text": "".join(d.text for d in deltas)}]}, "stop_reason": "end_turn"}
    )

    class ReadyProvider:
        provider_id = "bench"

        async def stream(self, request: ProviderRequest) -> AsyncGenerator[ProviderEvent, None]:
            for delta in deltas:
                await anyio.lowlevel.checkpoint()  # a real stream yields to the event loop on each read
                yield delta
            yield done

        async def aclose(self) -> None:
            return None

    class WireSink:
        async def emit_event(self, event: Any, *, live: bool, seq: int | None = None) -> None:
            for update in event_updates(event, live=live):
                encode_frame({"jsonrpc": "2.0", "method": "session/update", "params": {"update": update}})

        async def emit_live(self, update: LiveUpdate) -> None:
            encode_frame({"jsonrpc": "2.0", "method": "session/update", "params": {"update": live_update(update)}})

        async def notice(self, notice: Any) -> bool:
            return False

    store = await SqliteSessionStore.open(bench.home / "checkpoint-bench.db")
    now = utc_now()
    await store.create_session(SessionRecord(id="bench", cwd="/", created_at=now, updated_at=now, mode_id="default"))
    recorder = Recorder("bench", store, WireSink(), SessionProjection())
    request = ProviderRequest(model="bench", system="", messages=[])
    ratios: list[float] = []
    per_chunk: list[float] = []
    per_checkpoint: list[float] = []
    saved = 0
    for pair in range(pairs):
        seconds: dict[bool, float] = {}
        for checkpointing in (False, True) if pair % 2 else (True, False):
            before = len(await store.load_events("bench"))
            started = time.process_time()
            await stream_response(
                ReadyProvider(),
                request,
                PartialResponse(message_id=f"m{pair}-{checkpointing}"),
                recorder=recorder,
                turn_id="t",
                model_id="bench",
                checkpoints=CHECKPOINTS if checkpointing else None,
            )
            seconds[checkpointing] = time.process_time() - started
            if checkpointing:
                saved = len(await store.load_events("bench")) - before
        ratios.append(seconds[True] / seconds[False])
        per_chunk.append(seconds[False] / chunks)
        per_checkpoint.append((seconds[True] - seconds[False]) / max(saved, 1))
    await store.aclose()
    low, median, high = statistics.quantiles(ratios, n=4)
    return [
        Row(
            "checkpointing overhead on chunk forwarding",
            f"{(median - 1) * 100:+.1f} %",
            f"CPU, median of {pairs} paired runs (interquartile {(low - 1) * 100:+.1f} to {(high - 1) * 100:+.1f} %)"
            f" of {chunks} 4-character chunks streamed flat out; {statistics.median(per_chunk) * 1e6:.1f} µs per"
            f" chunk without; {statistics.median(per_checkpoint) * 1e3:.2f} ms per checkpoint",
        )
    ]


async def request_size(bench: Bench) -> list[Row]:
    """The first model request of a trivial turn, in characters of its JSON body as sent (compact), with the
    system prompt's and the tool schemas' shares."""
    async with bench.spawn() as agent:
        session_id = await _new(agent, bench)
        before = len(bench.server.requests())
        await _prompt(agent, session_id, "hi")
        record = bench.server.requests()[before]
    body: dict[str, Any] = record.body if isinstance(record.body, dict) else {}
    tools = body.get("tools", [])
    system = next((m["content"] for m in body.get("messages", []) if m.get("role") == "system"), "")
    return [
        Row(
            "request of a trivial turn",
            f"{len(_compact(body))} characters",
            f"system prompt {len(system)}, {len(tools)} tool schemas {len(_compact(tools))}; goal ≤ 8,000"
            " (Hermes: 43,156)",
        )
    ]


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def memory(bench: Bench) -> list[Row]:
    async with bench.spawn() as agent:
        await _new(agent, bench)
        with anyio.fail_after(30):  # session/new may be answered before the server has loaded; list waits for it
            await agent.conn.list_sessions()
        idle = _current_rss_kib(agent.process.pid)
        for _ in range(100):
            await _new(agent, bench)
        loaded = _current_rss_kib(agent.process.pid)
        peak = peak_rss_kib(agent.process.pid)
    return [
        Row("RSS idle (one session)", f"{idle / 1024:.1f} MiB"),
        Row("RSS with 100 extra sessions", f"{loaded / 1024:.1f} MiB", f"peak {peak / 1024:.1f} MiB"),
    ]


async def session_memory(bench: Bench) -> list[Row]:
    """Peak RSS of one process through a session that uses what a working one does: an MCP server (the stdio
    fixture), a turn that reads a file, searches, runs a command and calls the server's tool, a prompt with an
    image, then 20 more trivial turns."""
    from fixtures.mcp_server import stdio_spec

    from .agent import solid_png

    (bench.workspace / "notes.txt").write_text("hello\n" * 200)
    spec = stdio_spec("fixture")
    servers = [schema.McpServerStdio.model_validate(spec)]
    image = schema.ImageContentBlock(
        type="image", data=base64.b64encode(solid_png(640, 400)).decode(), mime_type="image/png"
    )
    async with bench.spawn(ProbeClient(permissions="allow")) as agent:
        with anyio.fail_after(60):
            session_id = (await agent.conn.new_session(cwd=str(bench.workspace), mcp_servers=servers)).session_id
            await agent.conn.prompt(session_id=session_id, prompt=_text("use-everything please"))
            await agent.conn.prompt(session_id=session_id, prompt=[*_text("what is this?"), image])
            for i in range(20):
                await _prompt(agent, session_id, f"more {i}")
        peak = peak_rss_kib(agent.process.pid)
    return [
        Row(
            "peak RSS of a working session",
            f"{peak / 1024:.1f} MiB",
            "an MCP server, file, search, command and MCP tool calls, an image, 20 more turns; goal ≤ 80 MB"
            f" ({peak * 1024 / 1e6:.1f} MB)",
        )
    ]


async def replay(bench: Bench, events: int) -> list[Row]:
    session_id = await _stored_session(bench, turns=events // 3)
    async with bench.spawn() as agent:
        started = time.perf_counter()
        with anyio.fail_after(60):
            await agent.conn.load_session(cwd=str(bench.workspace), session_id=session_id, mcp_servers=[])
        elapsed = (time.perf_counter() - started) * 1000
        frames = len(agent.client.of(session_id))
    return [Row(f"session/load replay of {events // 3 * 3} events", f"{elapsed:.0f} ms", f"{frames} updates received")]


async def corpus_replay(bench: Bench) -> list[Row]:
    """The recorded provider corpus (tests/providers/corpus) through the real providers over HTTP on 127.0.0.1, in
    3-byte chunks and in random 1-64-byte chunks: the decoding cost of real streams, in-process (no agent)."""
    from contextlib import aclosing

    from hermes_acp.config import ProviderSettings
    from hermes_acp.core import TextPart, UserMessage
    from hermes_acp.errors import ProviderError
    from hermes_acp.providers.anthropic import AnthropicProvider
    from hermes_acp.providers.base import ProviderRequest
    from hermes_acp.providers.openai import OpenAIProvider

    corpus = REPO / "tests" / "providers" / "corpus"
    notes = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(corpus.glob("*.json"))]
    size = sum(path.stat().st_size for path in corpus.glob("*.sse"))
    timings: list[str] = []
    for chunk_bytes, seed in ((3, None), (64, 1)):
        started = time.perf_counter()
        for note in notes:
            spec = {"chunk_bytes": chunk_bytes, "chunk_seed": seed}
            responses: list[dict[str, Any]] = [
                {"recorded": {"file": str(corpus / r["file"]), "content_type": r["content_type"], **spec}}
                for r in note["responses"]
            ]
            responses.append({"repeat": True, "steps": [{"text": "ok"}]})
            async with serve_model_server({"responses": responses}) as server:
                kind = note["kind"]
                base_url = server.openai_base_url if kind == "openai" else server.base_url
                settings = ProviderSettings(kind=kind, base_url=base_url, max_retries=0)
                provider = (OpenAIProvider if kind == "openai" else AnthropicProvider)("bench", settings, None)
                request = ProviderRequest(model="m", system="", messages=[UserMessage(parts=[TextPart(text="hi")])])
                async with aclosing(provider):
                    for _ in note["responses"]:
                        try:
                            async with aclosing(provider.stream(request)) as events:
                                async for _event in events:
                                    pass
                        except ProviderError:
                            pass  # the corpus's error streams end this way
        timings.append(f"{time.perf_counter() - started:.1f} s")
    note = f"{len(notes)} streams, {size / 1e6:.2f} MB, real providers over HTTP; in 1-64-byte chunks: {timings[1]}"
    return [Row("provider corpus replay, 3-byte chunks", timings[0], note)]


async def cancel_latency(bench: Bench, runs: int) -> list[Row]:
    latencies: list[float] = []
    async with bench.spawn() as agent:
        session_id = await _new(agent, bench)
        for _ in range(runs):
            latencies.append(await _one_cancel(agent, session_id))
    return [Row("cancel latency (during streaming)", _ms(latencies), f"median of {runs}")]


async def _one_cancel(agent: AgentProcess, session_id: str) -> float:
    agent.client.reset_first_update()
    done: list[float] = []

    async def run() -> None:
        await agent.conn.prompt(session_id=session_id, prompt=_text("cancel-me"))
        done.append(time.perf_counter())

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await agent.client.first_update.wait()
            sent = time.perf_counter()
            await agent.conn.cancel(session_id=session_id)
    return (done[0] - sent) * 1000


async def _prompt(agent: AgentProcess, session_id: str, text: str) -> None:
    with anyio.fail_after(60):
        await agent.conn.prompt(session_id=session_id, prompt=_text(text))


async def sandbox_overhead(bench: Bench, runs: int = 20) -> list[Row]:
    """What the sandbox adds to one command: the terminal tool's own path (``Sandbox.contained`` + ``run_command``)
    for ``bash -c true``, through bubblewrap against plain (in this process: the cost is the spawn, not the protocol);
    then the set-up alone (the allow-list view with the scan of the session's directory, the limits) on trees of
    10,000 and 100,000 files: the first command of a process walks the tree, later ones stat its folders."""
    from hermes_acp.exec.process import OutputBuffer, run_command
    from hermes_acp.exec.sandbox import Sandbox

    async def once(sandbox: Sandbox) -> float:
        started = time.perf_counter()
        line = sandbox.contained(
            ["bash", "-c", "true"], roots=[bench.workspace], cwd=bench.workspace, mode="dont_ask", extra_env={}
        )

        async def ignore(_buffer: OutputBuffer) -> None:
            return None

        async with line as confined:
            await run_command(
                confined.argv, cwd=bench.workspace, env=confined.env, timeout_s=30, buffer=OutputBuffer(1024, 1024),
                on_output=ignore, own_pid_namespace=confined.sandboxed, limits=confined.limits,
            )  # fmt: skip
        return (time.perf_counter() - started) * 1000

    sandboxed = Sandbox(home=bench.home)
    if not (await sandboxed.availability()).usable:
        return [Row("sandbox start-up per command", "n/a", (await sandboxed.availability()).describe())]
    plain = Sandbox(mode="off", home=bench.home)
    await once(sandboxed)
    await once(plain)
    with_bwrap = [await once(sandboxed) for _ in range(runs)]
    without = [await once(plain) for _ in range(runs)]
    added = statistics.median(with_bwrap) - statistics.median(without)
    rows = [
        Row(
            "sandbox start-up per command",
            f"+{added:.1f} ms",
            f"bwrap with its limits {_ms(with_bwrap)} vs plain {_ms(without)} (also limited), `bash -c true`,"
            f" median of {runs}",
        )
    ]
    for files in (10_000, 100_000):
        rows.append(await _sandbox_setup(bench, sandboxed, files, runs))
    rows.append(await anyio.to_thread.run_sync(_profile_rendering, bench, sandboxed, 10_000, runs))
    return rows


def _profile_rendering(bench: Bench, sandbox: Any, files: int, runs: int) -> Row:
    """The Seatbelt profile (and, for comparison, the bwrap line) rendered from one policy of the ``files``-file
    tree ``_sandbox_setup`` made: the rendering alone, the view computed once."""
    from dataclasses import replace

    from hermes_acp.exec import bwrap, seatbelt
    from hermes_acp.exec.view import View

    tree = bench.home.parent / f"tree-{files}"
    request = replace(sandbox.view_request([tree], os.environ), prepare=False, target="macos")
    view = View.compute(request, empty=Path(os.devnull))
    policy = sandbox.policy(view, network=True, cwd=tree, env={}, scratch=str(bench.home / "scratch"))
    seatbelt_ms, bwrap_ms = [], []
    for _ in range(runs):
        started = time.perf_counter()
        line = seatbelt.render(policy, ["/bin/true"])
        seatbelt_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        bwrap.render(policy, "bwrap", ["/bin/true"])
        bwrap_ms.append((time.perf_counter() - started) * 1000)
    size = sum(len(part) for part in line)
    rules = line[line.index("-p") + 1].count("\n")
    return Row(
        f"Seatbelt profile rendering, {files:,}-file tree",
        f"{statistics.median(seatbelt_ms):.2f} ms",
        f"{rules} rules, {len(policy.view.masked)} masked paths, {size:,} bytes of argv (kern.argmax 1 MiB);"
        f" the bwrap line from the same policy {statistics.median(bwrap_ms):.2f} ms; median of {runs}",
    )


async def _sandbox_setup(bench: Bench, sandbox: Any, files: int, runs: int) -> Row:
    """``Sandbox.confine`` (the view, the scan, the limits) for a workspace of ``files`` files in folders of 10."""
    tree = bench.home.parent / f"tree-{files}"
    await anyio.to_thread.run_sync(_make_tree, tree, files)

    async def once() -> float:
        started = time.perf_counter()
        confined = await sandbox.confine(["true"], roots=[tree], cwd=tree, mode="dont_ask", extra_env={})
        elapsed = (time.perf_counter() - started) * 1000
        await anyio.to_thread.run_sync(confined.limits.close)
        return elapsed

    cold = await once()
    warm = [await once() for _ in range(runs)]
    goal = "; goal ≤ 15 ms" if files == 10_000 else ""
    return Row(
        f"sandbox set-up, {files:,}-file tree",
        f"{statistics.median(warm):.1f} ms",
        f"per command once the tree is known, median of {runs} (min {min(warm):.1f}); the first command walks it:"
        f" {cold:.0f} ms{goal}",
    )


def _make_tree(root: Path, files: int) -> None:
    """``files`` empty files, ten per folder, three folders deep, a repository and a .env at the bottom."""
    made = 0
    index = 0
    while made < files:
        folder = root / f"a{index % 10}" / f"b{(index // 10) % 10}" / f"c{index // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(10):
            (folder / f"f{n}.py").touch()
        made += 10
        index += 1
    (root / ".git").mkdir(exist_ok=True)
    (root / ".git" / "config").write_text("[core]\n")
    (folder / ".env").write_text("TOKEN=x\n")


async def input_bounds_memory(bench: Bench) -> list[Row]:
    """Peak resident set of the agent through two inputs that used to take gigabytes: an MCP answer of 200 MiB on
    one line (read once, cut at 4 MiB) and a 50 MB prompt (refused with -32602)."""
    from fixtures.hostile_mcp import stdio_spec as hostile_spec

    rows = []
    async with bench.spawn() as agent:
        with anyio.fail_after(60):
            created = await agent.conn.new_session(
                cwd=str(bench.workspace),
                mcp_servers=[schema.McpServerStdio.model_validate(hostile_spec(flood_mib=200))],
            )
        idle = _current_rss_kib(agent.process.pid)
        started = time.perf_counter()
        with anyio.fail_after(120):
            await agent.conn.prompt(session_id=created.session_id, prompt=_text("flood-me"))
        elapsed = time.perf_counter() - started
        rows.append(
            Row(
                "peak RSS through a 200 MiB MCP answer",
                f"{peak_rss_kib(agent.process.pid) / 1024:.1f} MiB",
                f"idle {idle / 1024:.1f} MiB; the turn took {elapsed:.1f} s (read once, cut at 4 MiB)",
            )
        )
    async with bench.spawn() as agent:
        session_id = await _new(agent, bench)
        await _prompt(agent, session_id, "hi")
        idle = _current_rss_kib(agent.process.pid)
        started = time.perf_counter()
        with anyio.fail_after(120), contextlib.suppress(Exception):
            await agent.conn.prompt(session_id=session_id, prompt=_text("x" * 50_000_000))
        elapsed = (time.perf_counter() - started) * 1000
        rows.append(
            Row(
                "peak RSS through a 50 MB prompt",
                f"{peak_rss_kib(agent.process.pid) / 1024:.1f} MiB",
                f"idle {idle / 1024:.1f} MiB; refused (-32602) {elapsed:.0f} ms after it was sent",
            )
        )
    return rows


async def endless_stream_memory(bench: Bench) -> list[Row]:
    """A model stream that never ends, cut at the response bound (the default output limit: 32,000 tokens, so
    512,000 characters): the agent's peak resident set against its idle one, and the time to the cut."""
    async with bench.spawn() as agent:
        session_id = await _new(agent, bench)
        await _prompt(agent, session_id, "hi")
        idle = _current_rss_kib(agent.process.pid)
        started = time.perf_counter()
        with anyio.fail_after(120):
            answered = await agent.conn.prompt(session_id=session_id, prompt=_text("never-ending"))
        elapsed = time.perf_counter() - started
        peak = peak_rss_kib(agent.process.pid)
    return [
        Row(
            "peak RSS while a never-ending stream is cut",
            f"{peak / 1024:.1f} MiB",
            f"idle {idle / 1024:.1f} MiB; stop reason {answered.stop_reason}, cut after {elapsed:.1f} s at 512,000"
            " characters; goal ≤ 150 MiB",
        )
    ]


_TERMINAL_COMMANDS = {
    "sparse": 'for i in $(seq 1 30); do echo "$EPOCHREALTIME"; sleep 0.1; done',
    "flood": 'for i in $(seq 1 2500); do echo "$EPOCHREALTIME"; sleep 0.001; done',
}
_TERMINAL_CARDS: dict[str, Any] = {
    "name": "bench-terminal-cards",
    "responses": [
        *(
            {
                "match": {"last_message_contains": f"terminal-{name}"},
                "repeat": True,
                "steps": [{"tool_call": {"name": "terminal", "arguments": {"command": command}}}],
            }
            for name, command in _TERMINAL_COMMANDS.items()
        ),
        {"repeat": True, "steps": [{"text": "Done."}]},
    ],
}


async def terminal_cards(bench: Bench) -> list[Row]:
    """A Zed client (``_meta.terminal_output``) and a command that prints its own clock (bash's ``$EPOCHREALTIME``)
    once a line, in the sandbox: how late each line reaches the client in a ``terminal_output`` update (from the
    moment the command wrote it to the moment the update that completes it arrived), and how many updates one card
    gets in its busiest second. Sparse: a line every 100 ms; flood: about a line a millisecond for a few seconds."""
    bench.server.set_scenario(load_scenario(_TERMINAL_CARDS))
    rows: list[Row] = []
    try:
        async with bench.spawn(initialize=False) as agent:
            with anyio.fail_after(30):
                await agent.conn.initialize(
                    protocol_version=1,
                    client_capabilities=schema.ClientCapabilities.model_validate({"_meta": {"terminal_output": True}}),
                )
            session_id = await _new(agent, bench)
            with anyio.fail_after(30):
                await agent.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
            clock = time.time() - time.perf_counter()  # the updates are timed on perf_counter
            for name in _TERMINAL_COMMANDS:
                before = len(agent.client.updates)
                await _prompt(agent, session_id, f"terminal-{name}")
                outputs = [
                    (u.at + clock, u.body["_meta"]["terminal_output"]["data"])
                    for u in agent.client.updates[before:]
                    if "terminal_output" in (u.body.get("_meta") or {})
                ]
                late, lines = _line_delays(outputs)
                busiest = max(
                    (sum(1 for other, _ in outputs if at <= other < at + 1.0) for at, _ in outputs), default=0
                )
                p95 = sorted(late)[int(len(late) * 0.95)] if late else 0.0
                rows.append(
                    Row(
                        f"terminal card: output → editor ({name})",
                        f"{statistics.median(late):.1f} ms" if late else "n/a",
                        f"p95 {p95:.1f} ms, max {max(late, default=0):.1f} ms over {lines} lines; goal ≤ 50 ms",
                    )
                )
                rows.append(
                    Row(
                        f"terminal card: updates in the busiest second ({name})",
                        str(busiest),
                        f"{len(outputs)} terminal_output updates in all; goal ≤ 20 per second per card",
                    )
                )
    finally:
        bench.server.set_scenario(load_scenario(SCENARIO))
    return rows


def _line_delays(outputs: list[tuple[float, str]]) -> tuple[list[float], int]:
    """For each complete line (a timestamp the command printed), ms from its timestamp to the arrival of the update
    that completed it."""
    delays: list[float] = []
    pending = ""
    for at, data in outputs:
        pending += data
        *complete, pending = pending.split("\n")
        for line in complete:
            try:
                delays.append((at - float(line.strip())) * 1000)
            except ValueError:
                continue  # a note the stream inserted (a skip)
    return delays, len(delays)


_SUMMARY_MARKER = "You write the memory of a coding agent"
_LONG_SESSION: dict[str, Any] = {
    "name": "bench-long-session",
    "context_limit": {"tokens": 16_000},
    "responses": [
        {
            "match": {"system_contains": _SUMMARY_MARKER},
            "repeat": True,
            "steps": [{"text": "Goal: walk through the modules one by one. " + "Decisions and open tasks. " * 40}],
        },
        {
            "match": {"last_message_contains": "read the notes"},
            "repeat": True,
            "steps": [{"tool_call": {"name": "read_file", "arguments": {"path": "notes.md"}}}],
        },
        {"repeat": True, "steps": [{"text": "Module notes: " + "it parses, checks and stores the input. " * 14}]},
    ],
}


async def compaction(bench: Bench, turns: int) -> list[Row]:
    """A ``turns``-turn scripted session on a model with a 16,000-token window (the fixture refuses anything its
    estimate puts over 16,000): every fifth turn reads a file, every turn adds ~330 tokens. The agent's own time
    per compaction is the time it logs for each ("history compacted": from the decision to the stored event and the
    meter sent, the summary request included) less the fixture's time on that summary request. Then ``/status`` in
    that session, and ``session/load`` of it in a fresh process: over a bare pipe (the server's time) and with the
    SDK client (end to end)."""
    bench.server.set_scenario(load_scenario(_LONG_SESSION))
    (bench.workspace / "notes.md").write_text("".join(f"notes line {n}: the parser keeps state.\n" for n in range(40)))
    failed = 0
    status: list[float] = []
    try:
        async with bench.spawn() as agent:
            session_id = await _new(agent, bench)
            with anyio.fail_after(30):
                await agent.conn.set_config_option(config_id="model", session_id=session_id, value="bench:bench-16k")
            first = len(bench.server.requests())
            for n in range(turns):
                ask = "Please read the notes" if n % 5 == 4 else f"Step {n}: what does module_{n}.py do?"
                text_before = len(agent.client.updates)
                with anyio.fail_after(60):
                    response = await agent.conn.prompt(session_id=session_id, prompt=_text(ask + " " + "x" * 500))
                warned = any("⚠" in json.dumps(u.body) for u in agent.client.updates[text_before:])
                failed += response.stop_reason != "end_turn" or warned
            for _ in range(20):
                started = time.perf_counter()
                with anyio.fail_after(30):
                    await agent.conn.prompt(session_id=session_id, prompt=_text("/status"))
                status.append((time.perf_counter() - started) * 1000)
            records = bench.server.requests()[first:]
        load: list[float] = []
        end_to_end: list[float] = []
        for _ in range(5):
            elapsed, frames = await _raw_load(bench, session_id)
            load.append(elapsed)
            async with bench.spawn() as fresh:
                with anyio.fail_after(30):
                    await fresh.conn.list_sessions()  # the server is up
                started = time.perf_counter()
                with anyio.fail_after(60):
                    await fresh.conn.load_session(cwd=str(bench.workspace), session_id=session_id, mcp_servers=[])
                end_to_end.append((time.perf_counter() - started) * 1000)
    finally:
        bench.server.set_scenario(load_scenario(SCENARIO))
    summaries = [r for r in records if _SUMMARY_MARKER in json.dumps(r.body)]
    refused = [r for r in records if r.outcome == "context_exceeded"]
    sizes = [-(-len(json.dumps(r.body, separators=(",", ":"), ensure_ascii=False).encode()) // 4) for r in records]
    logged = [
        line["ms"]
        for line in map(json.loads, (bench.home / "logs" / "hermes-acp.log").read_text().splitlines())
        if line.get("event") == "history compacted" and line.get("session_id") == session_id
    ]
    model_ms = [((r.finished_monotonic or 0) - r.received_monotonic) * 1000 for r in summaries]
    per_compaction = [total - model for total, model in zip(logged, model_ms, strict=True)]
    return [
        Row(
            f"{turns}-turn session, 16,000-token window",
            f"{failed} failed turns",
            f"{len(refused)} requests over the window; largest request {max(sizes):,} tokens (body bytes / 4);"
            f" {len(summaries)} compactions",
        ),
        Row(
            "agent time per compaction",
            _ms(per_compaction),
            f"max {max(per_compaction, default=0):.1f} ms: the agent's logged time for each (plan, summary request,"
            " store, meter) less the fixture's time on the summary request; goal ≤ 50 ms",
        ),
        Row("/status answer", _ms(status), f"in that session, median of {len(status)}; no model call; goal ≤ 20 ms"),
        Row(
            f"session/load of the {turns}-turn session",
            _ms(load),
            f"server time: a raw pipe, frames not parsed; fresh process, server up; {frames} updates; goal ≤ 300 ms;"
            f" {_ms(end_to_end)} end to end with the SDK client parsing every update",
        ),
    ]


async def _raw_load(bench: Bench, session_id: str, capabilities: dict[str, Any] | None = None) -> tuple[float, int]:
    """``session/load`` over a bare pipe: from writing the request to reading its answer, the frames between only
    counted (the server's time, and the pipe's); and how many updates came. ``capabilities``: the client's."""
    async with raw_agent(COMMAND, env=bench.env(), cwd=bench.workspace) as agent:
        with anyio.fail_after(60):
            await agent.ask("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities or {}})
            await agent.ask("session/list", {})
            elapsed, updates, _ = await agent.ask(
                "session/load", {"sessionId": session_id, "cwd": str(bench.workspace), "mcpServers": []}
            )
    return elapsed, updates


def _current_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _ms(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"{statistics.median(values):.1f} ms (min {min(values):.1f})"


async def shared_host_rows(bench: Bench) -> list[Row]:
    """The session host (``probes/bench_host.py``)."""
    from .bench_host import shared_host

    stored = await _stored_session(bench, turns=667)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **bench.env()}
    return [Row(**row) for row in await shared_host(bench.home, bench.workspace, env, stored)]


async def remote_door_rows(bench: Bench) -> list[Row]:
    """The remote door's bound on a body (``probes/bench_host.py``)."""
    from .bench_host import remote_door_body

    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(bench.home), "PYTHONPATH": str(REPO)}
    config = (bench.home / "config.toml").read_text()
    return [Row(**row) for row in await remote_door_body(bench.home.parent, config, env)]


async def mcp_client_rows(bench: Bench) -> list[Row]:
    """The MCP client (``probes/bench_mcp.py``): connect with an OAuth server signed in, a list refresh."""
    from .bench_mcp import mcp_client_rows as rows

    return [Row(**row) for row in await rows(bench.home.parent / "mcp-client", 10)]


async def subagent_rows(bench: Bench) -> list[Row]:
    """Subagents (``probes/bench_subagents.py``): a child's start, forwarding while four stream, a family's load."""
    from .bench_subagents import child_start, chunk_forwarding, stored_family

    rows = [Row(**row) for row in await child_start(bench.home.parent, 10)]
    rows += [Row(**row) for row in await chunk_forwarding(bench.home.parent)]
    parent_id = await stored_family(bench.home, bench.workspace, children=20, events_each=100)
    shown: list[tuple[str, dict[str, Any]]] = [("with", {"subagents": {}}), ("without", {})]
    for name, capabilities in shown:
        times, frames = [], 0
        for _ in range(5):
            elapsed, frames = await _raw_load(bench, parent_id, capabilities)
            times.append(elapsed)
        rows.append(
            Row(
                f"session/load of a parent with 20 children, {name} subagents",
                _ms(times),
                f"server time: a raw pipe, frames not parsed; 2,000+ events in all; {frames} updates; median of 5;"
                " goal ≤ 300 ms",
            )
        )
    return rows


async def exec_start_rows(bench: Bench) -> list[Row]:
    """``hermes-acp exec``'s start beside the inline server's first turn (``probes/bench_exec.py``)."""
    from .bench_exec import exec_rows

    return await exec_rows(bench, Row, COMMAND)


async def connect_rows(bench: Bench) -> list[Row]:
    """``hermes-acp --connect`` against a warm host on loopback beside the local front door, and a rejoin by cursor
    after 100 missed events against a full ``session/load`` (``probes/bench_host.py``)."""
    from .bench_host import remote_front_door

    home = bench.home.parent / "connect-home"
    home.mkdir(exist_ok=True)
    config = (bench.home / "config.toml").read_text()
    stored = await _stored_session(bench, turns=667, home=home)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "PYTHONPATH": str(REPO)}
    return [Row(**row) for row in await remote_front_door(home, bench.workspace, config, env, stored)]


async def acp_v2_rows(bench: Bench) -> list[Row]:
    """ACP v2 beside v1 (``probes/bench_v2.py``): the renderings of one 2,000-event session, a rejoin by cursor."""
    from .bench_v2 import rendering_rows

    return [Row(**row) for row in await rendering_rows()]


ROWS: dict[str, Callable[[Bench], Awaitable[list[Row]]]] = {
    "cold_start": lambda b: cold_start(b, 5),
    "exec": exec_start_rows,
    "model_switch": lambda b: model_switch(b, 5),
    "fresh_load": lambda b: fresh_load(b, 5),
    "delete_after_load": lambda b: delete_after_load(b, 5),
    "skills": lambda b: skill_discovery(b, 10),
    "cancel_request": lambda b: cancel_request(b, 10),
    "shutdown": lambda b: shutdown(b, 3),
    "session_new_with_mcp": lambda b: session_new_with_mcp(b, 10),
    "mcp_client": mcp_client_rows,
    "first_chunk": lambda b: first_chunk_overhead(b, 10),
    "chunk_rate": chunk_rate,
    "checkpoints": lambda b: checkpoint_overhead(b, 41, 8_000),
    "request_size": request_size,
    "memory": memory,
    "session_memory": session_memory,
    "replay": lambda b: replay(b, 2000),
    "cancel_latency": lambda b: cancel_latency(b, 10),
    "computer_use": computer_use_overhead,
    "parallel_reads": parallel_reads,
    "file_changes": file_changes,
    "corpus_replay": corpus_replay,
    "sandbox": sandbox_overhead,
    "endless_stream": endless_stream_memory,
    "input_bounds": input_bounds_memory,
    "terminal_cards": terminal_cards,
    "compaction": lambda b: compaction(b, 200),
    "shared_host": shared_host_rows,
    "remote_door": remote_door_rows,
    "subagents": subagent_rows,
    "steering": lambda b: steering_rows(b, Row),
    "rewind": lambda b: rewind_rows(b, Row),
    "acp_v2": acp_v2_rows,
    "connect": connect_rows,
}


async def run_bench(only: list[str] | None = None, repo: Path = REPO) -> list[Row]:
    """The rows of ``only`` (default: every group), the agent run from ``repo``'s ``hermes_acp``."""
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        root = Path(tmp)
        async with serve_model_server(SCENARIO) as server:
            home = root / "home"
            home.mkdir()
            (home / "config.toml").write_text(_config(server.base_url))
            workspace = root / "workspace"
            workspace.mkdir()
            bench = Bench(server.base_url, home, workspace, server, repo)
            for name, row in ROWS.items():
                if not only or name in only:
                    rows.extend(await row(bench))
    return rows


def render(rows: list[Row]) -> str:
    width = max(len(r.name) for r in rows)
    value_width = max(len(r.value) for r in rows)
    lines = [
        f"| {'measure'.ljust(width)} | {'value'.ljust(value_width)} | note |",
        f"|{'-' * (width + 2)}|{'-' * (value_width + 2)}|------|",
    ]
    lines += [f"| {r.name.ljust(width)} | {r.value.ljust(value_width)} | {r.note} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="probes.bench", description=__doc__)
    parser.add_argument("--no-notes", action="store_true", help="print only; do not append to NOTES.md")
    parser.add_argument("--only", action="append", choices=sorted(ROWS), help="run only this row group (repeatable)")
    args = parser.parse_args(argv)
    rows = anyio.run(run_bench, args.only)
    if args.only:
        args.no_notes = True  # NOTES.md keeps whole tables
    table = render(rows)
    print(table)
    if not args.no_notes:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        command = "make bench  # " + shlex.join([sys.executable.rsplit("/", 1)[-1], "-m", "probes.bench"])
        with NOTES.open("a", encoding="utf-8") as notes:
            notes.write(f"\n### Benchmark {stamp}\n\n`{command}`\n\n{table}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
