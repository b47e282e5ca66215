"""``make bench`` rows for subagents: what starting a child costs, chunk forwarding while four children stream, and
``session/load`` of a parent with twenty children.

Each row drives the real agent over a bare pipe (``probes/raw.py``) against a model server of its own, so the
timings are the server's (and the pipe's), and the child updates the SDK's client cannot read are simply read.
Gaps between model requests are taken from the fixture's own records (``time.monotonic()`` in both processes).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from fixtures.model_server import ModelServer, serve_model_server

from .raw import RawAgent, raw_agent

__all__ = ["child_start", "chunk_forwarding", "stored_family"]

COMMAND = [sys.executable, "-m", "hermes_acp"]
CHILD = "You are a subagent"
STREAM = {"chunk_size": 4, "chunk_delay_ms": 1, "steps": [{"text": "0123" * 500}]}
SCENARIO: dict[str, Any] = {
    "name": "bench-subagents",
    "models": ["bench-model"],
    "responses": [
        {"match": {"system_contains": CHILD, "last_message_contains": "TASK-stream"}, "repeat": True, **STREAM},
        {"match": {"system_contains": CHILD}, "repeat": True, "steps": [{"text": "R."}]},
        {
            "match": {"last_message_contains": "delegate-bench"},
            "repeat": True,
            "steps": [{"tool_call": {"name": "delegate", "arguments": {"task": "TASK-bench", "title": "Bench"}}}],
        },
        {
            "match": {"last_message_contains": "plan-bench"},
            "repeat": True,
            "steps": [{"tool_call": {"name": "update_plan", "arguments": {"steps": [{"content": "one"}]}}}],
        },
        {"match": {"last_message_contains": "stream-one"}, "repeat": True, **STREAM},
        {
            "match": {"last_message_contains": "stream-four"},
            "repeat": True,
            "steps": [
                {"tool_call": {"name": "delegate", "arguments": {"task": f"TASK-stream {i}", "title": f"S{i}"}}}
                for i in range(4)
            ],
        },
        {"repeat": True, "steps": [{"text": "Done."}]},
    ],
}


def _home(root: Path, server: ModelServer) -> tuple[dict[str, str], Path]:
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[model]\ndefault = "bench:bench-model"\n'
        f'[providers.bench]\nkind = "openai"\nbase_url = "{server.base_url}/v1"\nmodels = ["bench-model"]\n'
    )
    workspace = root / "workspace"
    workspace.mkdir(exist_ok=True)
    return {"HERMES_ACP_HOME": str(home), "HOME": str(home), "PYTHONPATH": str(Path(__file__).parent.parent)}, workspace


async def _session(agent: RawAgent, workspace: Path, capabilities: dict[str, Any]) -> str:
    await agent.ask("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
    _, _, answer = await agent.ask("session/new", {"cwd": str(workspace), "mcpServers": []})
    session_id: str = answer["result"]["sessionId"]
    return session_id


async def _prompt(agent: RawAgent, session_id: str, text: str) -> None:
    await agent.ask("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})


async def child_start(root: Path, runs: int) -> list[dict[str, str]]:
    """From the end of the response that calls ``delegate`` to the child's first model request (nothing but the
    agent in between), against the same gap for a trivial tool (``update_plan``)."""
    async with serve_model_server(SCENARIO) as server:
        env, workspace = _home(root / "child-start", server)
        async with raw_agent(COMMAND, env=env, cwd=workspace) as agent:
            with anyio.fail_after(120):
                session_id = await _session(agent, workspace, {})
                await _prompt(agent, session_id, "warm up")
                gaps: dict[str, list[float]] = {"delegate": [], "plan": []}
                for i in range(runs):
                    for kind, found in gaps.items():
                        before = len(server.requests())
                        await _prompt(agent, session_id, f"{kind}-bench {i}")
                        first, second = server.requests()[before : before + 2]
                        found.append((second.received_monotonic - (first.finished_monotonic or 0)) * 1000)
    child, plan = (statistics.median(gaps[k]) for k in ("delegate", "plan"))
    return [
        {
            "name": "subagent start: delegate response → child's first request",
            "value": f"{child:.1f} ms (min {min(gaps['delegate']):.1f})",
            "note": f"0 ms model; median of {runs}: the tool call stored, the child's record, its announcement, its"
            f" session and its first request; the same gap for a trivial tool (update_plan) is {plan:.1f} ms;"
            " goal ≤ 20 ms",
        }
    ]


async def chunk_forwarding(root: Path) -> list[dict[str, str]]:
    """Chunks forwarded per second: one session streaming alone, then four children streaming at once through the
    parent's connection (a client with ``subagents``), each as a share of what the fixture sent."""
    async with serve_model_server(SCENARIO) as server:
        env, workspace = _home(root / "chunk-forwarding", server)
        async with raw_agent(COMMAND, env=env, cwd=workspace, keep_updates=True) as agent:
            with anyio.fail_after(120):
                session_id = await _session(agent, workspace, {"subagents": {}})
                before = len(server.requests())
                await _prompt(agent, session_id, "stream-one")
                single = _shares(agent, server, before, {session_id})
                agent.updates.clear()
                before = len(server.requests())
                await _prompt(agent, session_id, "stream-four")
                children = {u.session_id for u in agent.updates} - {session_id}
                four = _shares(agent, server, before, children)
    alone = statistics.mean(single)
    together = min(four)
    return [
        {
            "name": "chunk forwarding, four children streaming",
            "value": f"{together:.1%} of the fixture's rate (slowest child)",
            "note": f"one session alone: {alone:.1%}; four children of one parent, 500 4-character chunks each, 1 ms"
            f" apart, all on one connection; within {abs(alone - together) / alone:.1%} of alone; goal ≤ 5%",
        }
    ]


def _shares(agent: RawAgent, server: ModelServer, before: int, sessions: set[str]) -> list[float]:
    """For each streaming session: the rate its chunks arrived at, over the rate the fixture sent them."""
    records = [r for r in server.requests()[before:] if r.content_chunks > 100]
    sent = statistics.mean(
        (r.content_chunks - 1) / ((r.finished_monotonic or 0) - (r.first_token_monotonic or 0)) for r in records
    )
    shares = []
    for session_id in sessions:
        arrivals = [
            u.at
            for u in agent.updates
            if u.session_id == session_id and u.update["sessionUpdate"] == "agent_message_chunk"
        ]
        if len(arrivals) > 1:
            shares.append((len(arrivals) - 1) / (arrivals[-1] - arrivals[0]) / sent)
    return shares


async def stored_family(home: Path, workspace: Path, children: int, events_each: int) -> str:
    """A parent whose one turn delegated to ``children`` children of ``events_each`` events each, written straight
    into the store (what a real delegation stores: the parent's cards and subagent events, each child's task, its
    tool rounds and its report)."""
    from hermes_acp.core import (
        AssistantMessage,
        AssistantMessageStored,
        SubagentEnded,
        SubagentStarted,
        TextBlock,
        TextPart,
        ToolCallPart,
        ToolCallRunning,
        ToolCallSettled,
        ToolCallStarted,
        ToolResultMessage,
        TurnEnded,
        Usage,
        UserMessage,
        UserPrompted,
    )
    from hermes_acp.storage import SessionRecord, SqliteSessionStore, utc_now
    from hermes_acp.storage.base import PROVENANCE_KEY, Provenance

    store = await SqliteSessionStore.open(home / "state.db")
    now, stamp = utc_now(), time.time_ns()
    cwd = str(workspace.resolve())
    parent_id = f"bench-family-{stamp}"
    await store.create_session(SessionRecord(id=parent_id, cwd=cwd, created_at=now, updated_at=now, mode_id="default"))
    model = "bench:bench-model"

    def prompt(turn: str, text: str, sender: str | None = None) -> UserPrompted:
        return UserPrompted(
            turn_id=turn,
            message_id=f"u-{turn}",
            display=[TextBlock(text=text)],
            message=UserMessage(parts=[TextPart(text=text)]),
            sender_session_id=sender,
        )

    def call(turn: str, call_id: str, name: str, args: str, text: str = "") -> list[Any]:
        part = ToolCallPart(id=call_id, name=name, arguments=args)
        return [
            AssistantMessageStored(
                turn_id=turn,
                message_id=f"a-{call_id}",
                message=AssistantMessage(parts=[*([TextPart(text=text)] if text else []), part]),
                model_id=model,
                usage=Usage(input_tokens=900, output_tokens=20),
            ),
            ToolCallStarted(turn_id=turn, tool_call_id=call_id, name=name, title=f"{name} {args}", tool_kind="read"),
        ]

    def settled(turn: str, call_id: str, name: str, text: str) -> ToolCallSettled:
        return ToolCallSettled(
            turn_id=turn,
            tool_call_id=call_id,
            status="completed",
            content=[TextBlock(text=text)],
            result=ToolResultMessage(tool_call_id=call_id, name=name, parts=[TextPart(text=text)]),
        )

    parent: list[Any] = [prompt("p", "split the work")]
    calls = [ToolCallPart(id=f"d{i}", name="delegate", arguments='{"task": "part"}') for i in range(children)]
    parent.append(
        AssistantMessageStored(
            turn_id="p", message_id="a-p", message=AssistantMessage(parts=calls), model_id=model, usage=Usage()
        )
    )
    parent += [
        ToolCallStarted(turn_id="p", tool_call_id=c.id, name="delegate", title=f"Delegate {c.id}", tool_kind="think")
        for c in calls
    ]
    rounds = (events_each - 4) // 4
    for i, c in enumerate(calls):
        child_id = f"{parent_id}-child-{i}"
        provenance = Provenance(kind="subagent", session_id=parent_id, at=now, tool_call_id=c.id)
        await store.create_session(
            SessionRecord(
                id=child_id,
                cwd=cwd,
                created_at=now,
                updated_at=now,
                mode_id="read_only",
                parent_id=parent_id,
                meta={PROVENANCE_KEY: provenance.as_meta()},
            )
        )
        log: list[Any] = [prompt("c", f"part {i}", sender=parent_id)]
        for r in range(rounds):
            log += call("c", f"c{i}-{r}", "read_file", f'{{"path": "src/file_{r}.py"}}', text=f"Reading file {r}.")
            log += [
                ToolCallRunning(turn_id="c", tool_call_id=f"c{i}-{r}"),
                settled("c", f"c{i}-{r}", "read_file", f"line {r}\n" * 20),
            ]
        report = f"Part {i}: every file was read; nothing is wrong."
        log += [
            AssistantMessageStored(
                turn_id="c",
                message_id="a-report",
                message=AssistantMessage(parts=[TextPart(text=report)]),
                model_id=model,
            ),
            TurnEnded(turn_id="c", stop_reason="end_turn"),
        ]
        await store.append_events(child_id, log)
        usage = Usage(input_tokens=900 * rounds, output_tokens=20 * rounds)
        parent += [
            ToolCallRunning(turn_id="p", tool_call_id=c.id),
            SubagentStarted(
                turn_id="p",
                tool_call_id=c.id,
                session_id=child_id,
                title=f"Part {i}",
                description="part",
                role="explore",
                model_id=model,
                cwd=cwd,
            ),
            SubagentEnded(
                turn_id="p",
                tool_call_id=c.id,
                session_id=child_id,
                outcome="completed",
                stop_reason="end_turn",
                usage=usage,
                usage_by_model={model: usage},
            ),
            settled("p", c.id, "delegate", report),
        ]
    parent += [
        AssistantMessageStored(
            turn_id="p",
            message_id="a-end",
            message=AssistantMessage(parts=[TextPart(text="All done.")]),
            model_id=model,
        ),
        TurnEnded(turn_id="p", stop_reason="end_turn"),
    ]
    await store.append_events(parent_id, parent)
    await store.aclose()
    return parent_id
