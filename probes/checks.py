"""The probe's named checks. Each spawns the agent (or reuses what the check needs), exercises one part of ACP
and returns a ``CheckResult`` with a one-line detail and numbers. Checks skip what the agent does not advertise, so
the probe runs against any ACP agent.
"""

from __future__ import annotations

import base64
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
from acp import RequestError, schema

from .agent import AgentProcess, ProbeClient, Update, spawn_agent

__all__ = ["CHECKS", "CheckResult", "ProbeOptions"]

Status = Literal["pass", "fail", "skip"]


@dataclass
class ProbeOptions:
    command: list[str]
    env: dict[str, str]
    cwd: Path
    stderr: Path | None
    out_dir: Path
    timeout_s: float = 60.0
    permissions: Literal["allow", "deny", "cancel"] = "allow"
    prompt: str = "Say hello in one short sentence."
    long_prompt: str = "Write a long, detailed essay about the history of computing."
    vision_prompt: str = "What colour is this image?"
    image: bytes = b""
    tool_prompt: str = "Create a file named hello.txt containing a greeting, then run `cat hello.txt`."
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)
    mcp_prompt: str = "Call the MCP tool to look up the weather."
    computer_prompt: str = "Use the calculator to compute 2 + 3 and check the result."
    followup_prompt: str = "Summarise what we did so far in one sentence."


@dataclass
class CheckResult:
    name: str
    status: Status
    detail: str
    metrics: dict[str, Any] = field(default_factory=dict)


class CheckFailed(Exception):
    """A check found a problem; the message says which."""


class Skip(Exception):
    """The agent does not advertise what the check needs."""


def _spawn(options: ProbeOptions, client: ProbeClient | None = None) -> Any:
    return spawn_agent(
        options.command,
        env=options.env,
        stderr=options.stderr,
        client=client or ProbeClient(permissions=options.permissions),
        cwd=options.cwd,
        timeout_s=options.timeout_s,
    )


def _caps(agent: AgentProcess) -> schema.AgentCapabilities:
    assert agent.initialize is not None
    return agent.initialize.agent_capabilities or schema.AgentCapabilities()


async def _new_session(agent: AgentProcess, options: ProbeOptions, **kwargs: Any) -> tuple[str, Any, float]:
    started = time.perf_counter()
    with anyio.fail_after(options.timeout_s):
        response = await agent.conn.new_session(cwd=str(options.cwd), mcp_servers=kwargs.pop("mcp_servers", []))
    return response.session_id, response, (time.perf_counter() - started) * 1000


@dataclass
class Turn:
    stop_reason: str
    first_chunk_ms: float | None
    turn_ms: float
    updates: list[Update]


async def _prompt(
    agent: AgentProcess, session_id: str, blocks: list[Any], options: ProbeOptions, *, timeout_s: float | None = None
) -> Turn:
    before = len(agent.client.updates)
    started = time.perf_counter()
    with anyio.fail_after(timeout_s or options.timeout_s):
        response = await agent.conn.prompt(session_id=session_id, prompt=blocks)
    ended = time.perf_counter()
    agent.sample_rss()
    updates = [u for u in agent.client.updates[before:] if u.session_id == session_id]
    chunks = [u for u in updates if u.kind in ("agent_message_chunk", "agent_thought_chunk")]
    first = (chunks[0].at - started) * 1000 if chunks else None
    return Turn(str(response.stop_reason), first, (ended - started) * 1000, updates)


def _text(blocks: str) -> list[Any]:
    return [schema.TextContentBlock(type="text", text=blocks)]


def transcript(updates: list[Update]) -> dict[str, Any]:
    """What an editor shows: agent text per message, final tool-call states."""
    text: list[str] = []
    calls: dict[str, dict[str, Any]] = {}
    for update in updates:
        body = update.body
        if update.kind == "agent_message_chunk":
            text.append(body.get("content", {}).get("text", ""))
        elif update.kind in ("tool_call", "tool_call_update"):
            calls.setdefault(body["toolCallId"], {}).update(
                {k: v for k, v in body.items() if k in ("title", "status", "kind")}
            )
    return {"text": "".join(text), "tool_calls": calls}


def _unsettled(updates: list[Update]) -> list[str]:
    calls = transcript(updates)["tool_calls"]
    return [call_id for call_id, card in calls.items() if card.get("status") not in ("completed", "failed")]


# -- the checks ------------------------------------------------------------------------------------------------------


async def check_caps(options: ProbeOptions) -> CheckResult:
    async with _spawn(options) as agent:
        init = agent.initialize
        assert init is not None
        raw = agent.client.raw_initialize
    caps = (raw or {}).get("agentCapabilities", {})
    booleans = [k for k, v in caps.get("sessionCapabilities", {}).items() if isinstance(v, bool)]
    if booleans:
        raise CheckFailed(f"sessionCapabilities {booleans} are booleans; clients (JetBrains) expect objects")
    info = init.agent_info
    advertised = sorted(k for k, v in caps.get("sessionCapabilities", {}).items() if v is not None)
    detail = (
        f"protocol {init.protocol_version}, {info.name if info else 'unnamed agent'} {info.version if info else ''}, "
        f"loadSession={caps.get('loadSession', False)}, session: {', '.join(advertised) or 'none'}"
    )
    return CheckResult("caps", "pass", detail, {"protocol_version": init.protocol_version})


async def check_timing(options: ProbeOptions) -> CheckResult:
    async with _spawn(options) as agent:
        spawn_ms = agent.initialize_ms or 0.0
        _, _, first_new = await _new_session(agent, options)
        later = [(await _new_session(agent, options))[2] for _ in range(5)]
    metrics = {
        "spawn_to_initialize_ms": round(spawn_ms, 1),
        "first_session_new_ms": round(first_new, 1),
        "session_new_ms": round(statistics.median(later), 1),
    }
    detail = (
        f"spawn→initialize {spawn_ms:.0f} ms, first session/new {first_new:.0f} ms,"
        f" later {metrics['session_new_ms']} ms"
    )
    return CheckResult("timing", "pass", detail, metrics)


async def check_stream(options: ProbeOptions) -> CheckResult:
    async with _spawn(options) as agent:
        session_id, _, _ = await _new_session(agent, options)
        turn = await _prompt(agent, session_id, _text(options.prompt), options)
        rss = agent.peak_rss_kib
    chunks = [u for u in turn.updates if u.kind == "agent_message_chunk"]
    if not chunks:
        raise CheckFailed(f"no agent_message_chunk (stopReason {turn.stop_reason})")
    if unsettled := _unsettled(turn.updates):
        raise CheckFailed(f"tool calls left unsettled: {unsettled}")
    metrics = {
        "prompt_to_first_chunk_ms": round(turn.first_chunk_ms or 0, 1),
        "turn_ms": round(turn.turn_ms, 1),
        "frames": len(turn.updates),
        "agent_peak_rss_kib": rss,
    }
    detail = (
        f"{len(chunks)} chunks, first after {turn.first_chunk_ms or 0:.0f} ms, turn {turn.turn_ms:.0f} ms, "
        f"stopReason {turn.stop_reason}"
    )
    return CheckResult("stream", "pass", detail, metrics)


async def check_replay(options: ProbeOptions) -> CheckResult:
    async with _spawn(options) as agent:
        if not _caps(agent).load_session:
            raise Skip("the agent does not advertise loadSession")
        session_id, _, _ = await _new_session(agent, options)
        turn = await _prompt(agent, session_id, _text(options.prompt), options)
        live = transcript(turn.updates)
        before = len(agent.client.updates)
        with anyio.fail_after(options.timeout_s):
            await agent.conn.load_session(cwd=str(options.cwd), session_id=session_id, mcp_servers=[])
        replayed = transcript([u for u in agent.client.updates[before:] if u.session_id == session_id])
    if replayed["text"] != live["text"]:
        raise CheckFailed(f"replayed text differs: live {live['text'][:60]!r} vs replay {replayed['text'][:60]!r}")
    if replayed["tool_calls"] != live["tool_calls"]:
        raise CheckFailed("replayed tool calls differ from the live ones (ids, titles or statuses)")
    detail = f"replay matches: {len(live['text'])} chars of text, {len(live['tool_calls'])} tool calls"
    return CheckResult("replay", "pass", detail, {"replayed_frames": len(agent.client.updates) - before})


async def check_cancel(options: ProbeOptions) -> CheckResult:
    async with _spawn(options) as agent:
        session_id, _, _ = await _new_session(agent, options)
        latency = await _cancel_latency(agent, session_id, options)
        after = await _prompt(agent, session_id, _text(options.prompt), options)
    if after.stop_reason == "cancelled":
        raise CheckFailed("the next prompt after a cancel was cancelled too (session wedged)")
    detail = f"cancelled in {latency:.0f} ms; next prompt {after.stop_reason}"
    return CheckResult("cancel", "pass", detail, {"cancel_latency_ms": latency})


async def check_modes(options: ProbeOptions) -> CheckResult:
    async with _spawn(options) as agent:
        session_id, response, _ = await _new_session(agent, options)
        modes = response.modes
        options_list = [o for o in (response.config_options or []) if getattr(o, "category", None) == "mode"]
        if modes is None and not options_list:
            raise Skip("the agent offers no modes")
        ids = [m.id for m in modes.available_modes] if modes else [o.value for o in options_list[0].options]
        echoed = 0
        for mode_id in ids:
            before = len(agent.client.updates)
            with anyio.fail_after(options.timeout_s):
                if modes is not None:
                    await agent.conn.set_session_mode(session_id=session_id, mode_id=mode_id)
                else:
                    await agent.conn.set_config_option(
                        config_id=options_list[0].id, session_id=session_id, value=mode_id
                    )
            if any(u.kind in ("current_mode_update", "config_option_update") for u in agent.client.updates[before:]):
                echoed += 1
        try:
            with anyio.fail_after(options.timeout_s):
                await agent.conn.set_session_mode(session_id=session_id, mode_id="no-such-mode")
            bad = "accepted"
        except RequestError as exc:
            bad = f"error {exc.code}"
    if bad == "accepted":
        raise CheckFailed("an unknown mode id was accepted")
    detail = f"{len(ids)} modes: {', '.join(ids)}; {echoed} switches echoed as updates; unknown mode → {bad}"
    return CheckResult("modes", "pass", detail, {"mode_switches_echoed": echoed})


async def check_vision(options: ProbeOptions) -> CheckResult:
    async with _spawn(options) as agent:
        prompt_caps = _caps(agent).prompt_capabilities
        if not (prompt_caps and prompt_caps.image):
            raise Skip("the agent does not accept image prompts")
        session_id, _, _ = await _new_session(agent, options)
        image = schema.ImageContentBlock(
            type="image", data=base64.b64encode(options.image).decode(), mime_type="image/png"
        )
        turn = await _prompt(agent, session_id, [*_text(options.vision_prompt), image], options)
    if turn.stop_reason not in ("end_turn", "max_tokens"):
        raise CheckFailed(f"image prompt ended with {turn.stop_reason}")
    answer = transcript(turn.updates)["text"]
    return CheckResult("vision", "pass", f"answered {answer[:60]!r}")


async def check_env(options: ProbeOptions) -> CheckResult:
    names = sorted(options.env)
    async with _spawn(options) as agent:
        session_id, _, _ = await _new_session(agent, options)
    passed = ", ".join(names) or "none"
    detail = f"runs with only PATH + {len(names)} passed variable(s) ({passed}); session {session_id[:8]}"
    return CheckResult("env", "pass", detail)


async def check_mcp(options: ProbeOptions) -> CheckResult:
    if not options.mcp_servers:
        raise Skip("no --mcp-server given")
    async with _spawn(options) as agent:
        session_id, response, new_ms = await _new_session(agent, options, mcp_servers=options.mcp_servers)
        first = await _prompt(agent, session_id, _text(options.mcp_prompt), options)
        switched = await _switch_model(agent, session_id, response, options)
        second = await _prompt(agent, session_id, _text(options.mcp_prompt), options)
    results = []
    for label, turn in (("before", first), ("after model switch", second)):
        calls = transcript(turn.updates)["tool_calls"]
        completed = [c for c in calls.values() if c.get("status") == "completed"]
        if not completed:
            raise CheckFailed(f"no MCP tool call completed {label} ({calls})")
        results.append(len(completed))
    detail = (
        f"session/new with server {new_ms:.0f} ms; tool calls completed {results[0]} then {results[1]} ({switched})"
    )
    return CheckResult("mcp", "pass", detail, {"session_new_with_mcp_ms": round(new_ms, 1)})


async def _switch_model(agent: AgentProcess, session_id: str, response: Any, options: ProbeOptions) -> str:
    for option in response.config_options or []:
        if getattr(option, "category", None) == "model":
            values = [o.value for o in option.options if hasattr(o, "value")]
            others = [v for v in values if v != option.current_value]
            if others:
                with anyio.fail_after(options.timeout_s):
                    await agent.conn.set_config_option(config_id=option.id, session_id=session_id, value=others[0])
                return f"switched model to {others[0]}"
            return "only one model; no switch"
    return "no model option"


async def check_computer(options: ProbeOptions) -> CheckResult:
    async with _spawn(options) as agent:
        session_id, _, _ = await _new_session(agent, options)
        turn = await _prompt(agent, session_id, _text(options.computer_prompt), options)
    return _computer_result(turn, options)


def _computer_result(turn: Turn, options: ProbeOptions) -> CheckResult:
    calls = transcript(turn.updates)["tool_calls"]
    if not calls:
        raise Skip("the agent made no tool call for the computer prompt")
    if unsettled := _unsettled(turn.updates):
        raise CheckFailed(f"computer_use calls left unsettled: {unsettled}")
    images = [
        item["content"]
        for u in turn.updates
        if u.kind in ("tool_call", "tool_call_update")
        for item in u.body.get("content") or []
        if item.get("type") == "content" and item["content"].get("type") == "image"
    ]
    saved = ""
    if images:
        options.out_dir.mkdir(parents=True, exist_ok=True)
        path = options.out_dir / "last_screenshot.png"
        path.write_bytes(base64.b64decode(images[-1]["data"]))
        saved = f", last screenshot → {path}"
    answer = transcript(turn.updates)["text"]
    detail = f"{len(calls)} calls settled, {len(images)} screenshots{saved}; said {answer[-60:]!r}"
    return CheckResult("computer", "pass", detail, {"screenshots": len(images)})


async def check_e2e(options: ProbeOptions) -> CheckResult:
    """The whole flow: spawn, new, set_mode, tool turn, vision, computer_use, cancel, kill, list, load, continue."""
    steps: list[str] = []
    metrics: dict[str, Any] = {}
    client = ProbeClient(permissions=options.permissions)
    async with _spawn(options, client) as agent:
        metrics["spawn_to_initialize_ms"] = round(agent.initialize_ms or 0, 1)
        steps.append(f"spawn {agent.initialize_ms or 0:.0f} ms")
        session_id, response, new_ms = await _new_session(agent, options)
        metrics["session_new_ms"] = round(new_ms, 1)
        steps.append(f"new {new_ms:.0f} ms")
        steps.append(await _switch_mode(agent, session_id, response.modes, options))
        tools = await _prompt(agent, session_id, _text(options.tool_prompt), options)
        _require_settled(tools, "tool turn")
        metrics["tool_turn_ms"] = round(tools.turn_ms, 1)
        metrics["prompt_to_first_chunk_ms"] = round(tools.first_chunk_ms or 0, 1)
        steps.append(f"tools {len(transcript(tools.updates)['tool_calls'])} calls")
        if (_caps(agent).prompt_capabilities or schema.PromptCapabilities()).image:
            image = schema.ImageContentBlock(
                type="image", data=base64.b64encode(options.image).decode(), mime_type="image/png"
            )
            vision = await _prompt(agent, session_id, [*_text(options.vision_prompt), image], options)
            steps.append(f"vision {vision.stop_reason}")
        computer = await _prompt(agent, session_id, _text(options.computer_prompt), options)
        try:
            steps.append(_computer_result(computer, options).detail.split(";")[0])
        except Skip as exc:  # the rest of the flow (cancel, kill, reload) still runs
            steps.append(f"computer skipped ({exc})")
        metrics["cancel_latency_ms"] = await _cancel_latency(agent, session_id, options)
        steps.append(f"cancel {metrics['cancel_latency_ms']:.0f} ms")
        shown = transcript(client.of(session_id))
        await agent.kill()
        metrics["agent_peak_rss_kib"] = agent.peak_rss_kib
        steps.append("killed")
    fresh = ProbeClient(permissions=options.permissions)
    async with _spawn(options, fresh) as agent:
        with anyio.fail_after(options.timeout_s):
            listed = await agent.conn.list_sessions(cwd=str(options.cwd))
        if session_id not in [s.session_id for s in listed.sessions]:
            raise CheckFailed("after the kill, session/list does not show the session")
        steps.append("listed")
        with anyio.fail_after(options.timeout_s):
            await agent.conn.load_session(cwd=str(options.cwd), session_id=session_id, mcp_servers=[])
        replayed = transcript(fresh.of(session_id))
        if replayed["tool_calls"].keys() != shown["tool_calls"].keys():
            raise CheckFailed("the replay after the kill shows different tool calls")
        steps.append(f"replayed {len(replayed['tool_calls'])} calls")
        follow = await _prompt(agent, session_id, _text(options.followup_prompt), options)
        steps.append(f"continued {follow.stop_reason}")
    return CheckResult("e2e", "pass", "; ".join(steps), metrics)


async def _switch_mode(
    agent: AgentProcess, session_id: str, modes: schema.SessionModeState | None, options: ProbeOptions
) -> str:
    """Switch to a mode other than the current one; the e2e step's label."""
    others = [m.id for m in modes.available_modes if m.id != modes.current_mode_id] if modes else []
    if not others:
        return "mode skipped (no other mode offered)"
    with anyio.fail_after(options.timeout_s):
        await agent.conn.set_session_mode(session_id=session_id, mode_id=others[0])
    return f"mode {others[0]}"


def _require_settled(turn: Turn, label: str) -> None:
    if turn.stop_reason not in ("end_turn", "max_tokens", "max_turn_requests"):
        raise CheckFailed(f"{label} ended with {turn.stop_reason}")
    if unsettled := _unsettled(turn.updates):
        raise CheckFailed(f"{label}: tool calls left unsettled: {unsettled}")


async def _cancel_latency(agent: AgentProcess, session_id: str, options: ProbeOptions) -> float:
    agent.client.reset_first_update()
    box: dict[str, Any] = {}

    async def run() -> None:
        box["response"] = await agent.conn.prompt(session_id=session_id, prompt=_text(options.long_prompt))
        box["at"] = time.perf_counter()

    with anyio.fail_after(options.timeout_s):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await agent.client.first_update.wait()
            sent = time.perf_counter()
            await agent.conn.cancel(session_id=session_id)
    if box["response"].stop_reason != "cancelled":
        raise CheckFailed(f"cancel answered stopReason {box['response'].stop_reason!r}, not 'cancelled'")
    latency: float = round((box["at"] - sent) * 1000, 1)
    return latency


CHECKS: dict[str, Callable[[ProbeOptions], Awaitable[CheckResult]]] = {
    "caps": check_caps,
    "timing": check_timing,
    "stream": check_stream,
    "replay": check_replay,
    "cancel": check_cancel,
    "modes": check_modes,
    "vision": check_vision,
    "env": check_env,
    "mcp": check_mcp,
    "computer": check_computer,
    "e2e": check_e2e,
}
