"""``make demo``: the whole flow on the bundled fixtures, with no API keys and no network.

It starts the scripted model server (``probes/scenarios/demo.json``) in this process, points a fresh home at it
and at the simulated cua-driver, then runs the probe's ``caps``, ``timing`` and ``e2e`` checks against the real
``python -m hermes_acp``: spawn, session/new, set_mode, a tool turn that writes a file and runs a command, a
vision turn, a computer_use turn on the simulated Calculator (capture, click 2 + 3 =, verify 5), cancel, kill the
process, list, load with replay, and continue the conversation. Then a session host: a front door (``--shared``)
starts a long job and is killed mid-command, as an editor whose SSH link drops; the job goes on in the host, and a
second front door's ``session/load`` catches up (everything so far, once) and follows the rest live. Then a long
conversation on a model with a small
context window (``demo:demo-small``, 6,000 tokens) that gets compacted: the client advertises compaction, so the
compaction streams its summary and completes, and ``/status`` shows the meter. Then a delegation: one prompt hands
two tasks to two subagents that run side by side, shown to a client that advertises ``subagents``. It prints the
checklist and the timings, checks the effects independently (the file on disk, the calculator's own state), and
leaves the last screenshot (with its element boxes) in ``out/last_screenshot.png``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from acp import schema

from fixtures.cua_driver_sim import command as simulated_driver
from fixtures.cua_driver_sim import read_state
from fixtures.model_server import load_scenario, serve_model_server

from .agent import ProbeClient, solid_png, spawn_agent
from .checks import ProbeOptions
from .probe import run_checks, summarise
from .raw import raw_agent

__all__ = ["main"]

REPO = Path(__file__).resolve().parent.parent
SCENARIO = Path(__file__).resolve().parent / "scenarios" / "demo.json"
OUT = REPO / "out"


def _config(base_url: str, driver: list[str]) -> str:
    return "\n".join(
        [
            "[model]",
            'default = "demo:demo-model"',
            "[providers.demo]",
            'kind = "openai"',
            f'base_url = "{base_url}/v1"',
            'models = [{ id = "demo-model", vision = true, context_window = 32768 },'
            ' { id = "demo-small", context_window = 6000 }]',
            "[computer_use]",
            f"driver_command = {json.dumps(driver)}",
            "",
        ]
    )


async def _run(root: Path) -> int:
    home, workspace = root / "home", root / "workspace"
    home.mkdir()
    workspace.mkdir()
    driver, driver_env = simulated_driver(journal=root / "journal.jsonl", state=root / "calculator.json")
    started = time.perf_counter()
    async with serve_model_server(load_scenario(SCENARIO)) as server:
        (home / "config.toml").write_text(_config(server.base_url, driver))
        options = ProbeOptions(
            command=[sys.executable, "-m", "hermes_acp"],
            env={"HERMES_ACP_HOME": str(home), "HOME": str(home), **driver_env, "PYTHONPATH": str(REPO)},
            cwd=workspace,
            stderr=root / "agent.stderr",
            out_dir=OUT,
            timeout_s=60,
            image=solid_png(),
        )
        print(f"hermes-acp demo — agent: {shlex.join(options.command)}")
        print(f"  model server {server.base_url}, simulated cua-driver, home {home}\n")
        results = await run_checks(["caps", "timing", "e2e"], options)
        compaction = await _compaction(options)
        delegation = await _delegation(options)
        rejoin = await _detach_and_rejoin(root, server.base_url, driver)
        requests = len(server.requests())
    effects = [*_effects(workspace, root / "calculator.json"), compaction, delegation, rejoin]
    for label, ok in effects:
        print(f"{'✓' if ok else '✗'} effect    {label}")
    summary = summarise(results, options)
    print("\nTimings:")
    for key in ("spawn_to_initialize_ms", "session_new_ms", "prompt_to_first_chunk_ms", "cancel_latency_ms"):
        print(f"  {key:<26} {summary.get(key)}")
    print(f"  {'agent_peak_rss_kib':<26} {summary.get('agent_peak_rss_kib')}")
    print(f"  {'model requests served':<26} {requests}")
    print(f"  {'demo wall time':<26} {time.perf_counter() - started:.1f} s")
    screenshot = OUT / "last_screenshot.png"
    print(f"\nLast screenshot: {screenshot if screenshot.exists() else 'none written'}")
    failed = [r.name for r in results if r.status == "fail"] + [label for label, ok in effects if not ok]
    print("Demo " + ("passed." if not failed else f"FAILED: {', '.join(failed)} (agent log: {root / 'agent.stderr'})"))
    return 1 if failed else 0


async def _compaction(options: ProbeOptions) -> tuple[str, bool]:
    """Twelve long turns on the 6,000-token model, with a client that renders compactions; then ``/status``."""
    client = ProbeClient()
    capabilities = schema.ClientCapabilities(
        session=schema.ClientSessionCapabilities(compaction=schema.CompactionCapabilities())
    )
    spawn = spawn_agent(
        options.command, env=options.env, stderr=options.stderr, client=client, cwd=options.cwd, initialize=False
    )
    async with spawn as agent:
        with anyio.fail_after(60):
            await agent.conn.initialize(protocol_version=1, client_capabilities=capabilities)
            session_id = (await agent.conn.new_session(cwd=str(options.cwd), mcp_servers=[])).session_id
            await agent.conn.set_config_option(config_id="model", session_id=session_id, value="demo:demo-small")
            for step in range(1, 13):
                text = f"Walk me through step {step} of the parser, in detail. " + "Context: " * 60
                await agent.conn.prompt(session_id=session_id, prompt=[schema.TextContentBlock(type="text", text=text)])
            before = len(client.updates)
            await agent.conn.prompt(
                session_id=session_id, prompt=[schema.TextContentBlock(type="text", text="/status")]
            )
    done = [u.body for u in client.of(session_id, "compaction_update") if u.body.get("status") == "completed"]
    chunks = client.of(session_id, "compaction_summary_chunk")
    status = "".join(u.body["content"]["text"] for u in client.updates[before:] if u.kind == "agent_message_chunk")
    context = next((line for line in status.splitlines() if line.startswith("**Context:**")), "")
    if not done:
        return "a long conversation on a 6,000-token window is compacted", False
    summary = done[-1]["summary"][0]["text"]
    print(f"\nCompaction ({len(done)} in 12 turns on a 6,000-token window; {len(chunks)} summary chunks streamed):")
    print("  " + summary.replace("\n", "\n  "))
    print(f"  /status: {context.replace('**', '')}\n")
    times = "once" if len(done) == 1 else f"{len(done)} times"
    return f"a long conversation on a 6,000-token window was compacted {times}", True


async def _delegation(options: ProbeOptions) -> tuple[str, bool]:
    """One prompt delegates to two subagents that run side by side; the client advertises ``subagents``, so each
    child is announced on the parent and streams under its own id; then a load replays them in place."""
    async with raw_agent(options.command, env=options.env, cwd=options.cwd, keep_updates=True) as agent:
        with anyio.fail_after(60):
            await agent.ask("initialize", {"protocolVersion": 1, "clientCapabilities": {"subagents": {}}})
            _, _, opened = await agent.ask("session/new", {"cwd": str(options.cwd), "mcpServers": []})
            session_id = opened["result"]["sessionId"]
            prompt = [{"type": "text", "text": "Look into the workspace with two helpers."}]
            await agent.ask("session/prompt", {"sessionId": session_id, "prompt": prompt})
            live = list(agent.updates)
            _, replayed, _ = await agent.ask(
                "session/load", {"sessionId": session_id, "cwd": str(options.cwd), "mcpServers": []}
            )
    titles = {
        u.update["sessionId"]: u.update["title"]
        for u in live
        if u.session_id == session_id and u.update["sessionUpdate"] == "subagent_update" and "title" in u.update
    }
    print("\nDelegation (two subagents, side by side, shown to a client with `subagents`):")
    order = [u.session_id for u in live if u.session_id in titles]
    switches = sum(1 for a, b in itertools.pairwise(order) if a != b)
    for child, title in titles.items():
        mine = [u.update for u in live if u.session_id == child]
        text = "".join(u["content"]["text"] for u in mine if u["sessionUpdate"] == "agent_message_chunk")
        tools = [u["title"] for u in mine if u["sessionUpdate"] == "tool_call"]
        print(f"  {title}: {len(mine)} updates under {child[:8]}…, tools {tools}; said: {text!r}")
    answer = "".join(
        u.update["content"]["text"]
        for u in live
        if u.session_id == session_id and u.update["sessionUpdate"] == "agent_message_chunk"
    )
    print(f"  the streams interleaved {switches} times; the parent answered: {answer!r}")
    print(f"  session/load replayed {replayed} updates, each child's in its place")
    ok = len(titles) == 2 and "Both subagents reported" in answer
    return "two subagents ran side by side, announced and streamed under their own ids, and reported", ok


async def _detach_and_rejoin(root: Path, base_url: str, driver: list[str]) -> tuple[str, bool]:
    """Shared mode: detach mid-turn (the front door killed), rejoin with catch-up, then stop the host."""
    home, workspace = root / "shared-home", root / "workspace"
    home.mkdir()
    (home / "config.toml").write_text(_config(base_url, driver) + '[host]\nmode = "shared"\n')
    runtime = Path(tempfile.mkdtemp(prefix="hacp-demo-", dir="/tmp"))
    env = {"HERMES_ACP_HOME": str(home), "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime), "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "hermes_acp"]  # [host] mode = "shared": this is the front door
    final = "The long job finished while you were away: three steps, all done."
    print("\nSession host (shared mode):")
    try:
        first = ProbeClient()
        async with spawn_agent(command, env=env, stderr=root / "front-door.stderr", client=first, cwd=workspace) as a:
            with anyio.fail_after(60):
                session_id = (await a.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
                await a.conn.set_session_mode(session_id=session_id, mode_id="dont_ask")
            # The prompt ends by itself when the connection reads EOF (bounded here); cancelling it would write
            # a `$/cancel_request` into the dead pipe.
            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    group.start_soon(_prompt_ignoring_the_end, a, session_id, "Run the long job while I am away.")
                    await _until(lambda: "away-step 1" in json.dumps([u.body for u in first.of(session_id)]), first)
                    a.process.kill()  # the editor's SSH link drops mid-command
        print(f"  detached mid-command after {len(first.of(session_id))} updates (front door killed)")
        second = ProbeClient()
        async with spawn_agent(command, env=env, stderr=root / "front-door.stderr", client=second, cwd=workspace) as b:
            started = time.perf_counter()
            with anyio.fail_after(60):
                await b.conn.load_session(session_id=session_id, cwd=str(workspace), mcp_servers=[])
            caught_up = len(second.of(session_id))
            print(f"  rejoined: {caught_up} updates of catch-up in {(time.perf_counter() - started) * 1000:.0f} ms")
            await _until(lambda: _agent_text(second, session_id).endswith(final), second)
            print(f"  then live: {len(second.of(session_id)) - caught_up} more updates until the turn ended")
        status = await anyio.run_process([*command, "host", "status"], env=env, check=False)
        sessions = json.loads(status.stdout).get("sessions", []) if status.returncode == 0 else []
        print(f"  host status: {len(sessions)} open session(s); stopping the host")
    finally:
        await anyio.run_process([*command, "host", "stop"], env=env, check=False)
        for path in sorted(runtime.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        runtime.rmdir()
    text = _agent_text(second, session_id)
    once = text.count(final) == 1 and text.count("Starting the long job") == 1
    return "detached mid-turn, rejoined with catch-up: every update once, the rest live", once


async def _until(predicate: Callable[[], bool], client: ProbeClient) -> None:
    """Until ``predicate`` holds, looking again at each frame the client gets (and every 50 ms), at most 60 s."""
    with anyio.fail_after(60):
        while not predicate():
            with anyio.move_on_after(0.05):
                await client.frame_arrived.wait()


async def _prompt_ignoring_the_end(agent: Any, session_id: str, text: str) -> None:
    """The prompt of a front door that is killed: its answer never comes."""
    with contextlib.suppress(Exception):
        await agent.conn.prompt(session_id=session_id, prompt=[schema.TextContentBlock(type="text", text=text)])


def _agent_text(client: ProbeClient, session_id: str) -> str:
    return "".join(u.body["content"]["text"] for u in client.of(session_id, "agent_message_chunk"))


def _effects(workspace: Path, calculator: Path) -> list[tuple[str, bool]]:
    hello = workspace / "hello.txt"
    state: Any = read_state(calculator) if calculator.exists() else {}
    display = state.get("calculator", {}).get("display")
    return [
        (
            f"hello.txt on disk: {hello.read_text().strip()!r}" if hello.exists() else "hello.txt on disk",
            hello.exists(),
        ),
        (f"the simulated Calculator displays {display!r}", display == "5"),
    ]


def main() -> int:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hermes-demo-") as tmp:
        return anyio.run(_run, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
