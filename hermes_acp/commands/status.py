"""``/status``: what a session runs on and how full its context is, as the text the editor shows. No model call.

Model and mode; the context the next request would take (the meter a ``usage_update`` shows) against the window,
the threshold at which it is compacted, and the estimated breakdown (system prompt, tool schemas, history,
images); the compactions so far; the session's cost (its subagents' included); each ``[budget]`` cap set, spent
and left; each subagent with its tokens and
cost, and their total; each MCP server and its state; the session's directories and the instruction files read when
it opened; its skills, and those skipped with why; the system prompt the editor gave it; the prompts and steering
messages waiting. Reads session state only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_acp.core import Usage
from hermes_acp.providers.catalog import Cost

if TYPE_CHECKING:
    from hermes_acp.turns.meter import Meter

    from .view import CommandView

__all__ = ["session_status"]


def session_status(session: CommandView) -> str:
    options = session.options
    model = options.current_model()
    lines = [f"**Model:** {model.id if model is not None else 'none configured'}", f"**Mode:** {options.mode}"]
    if model is not None:
        if not model.usable:
            lines[0] += f" (needs {model.api_key_env})"
        meter = session.wiring.meter(model)
        lines.extend(_context(session, meter))
        lines.extend(_children(session, meter))
    lines.append("**MCP servers:**" + ("" if session.mcp else " none"))
    for connection in session.mcp.connections:
        state = str(connection.state)
        if connection.offered:
            state += f", {len(connection.tools)} tools"
        if connection.error:
            state += f": {connection.error}"
        lines.append(f"- {connection.name}: {state}")
    lines.extend(f"- {spec.name}: not started ({spec.reason})" for spec in session.mcp.unusable)
    workspace = session.workspace
    lines.append(f"**Directories:** {workspace.cwd}" + "".join(f", {p}" for p in workspace.additional))
    lines.append("**Instruction files:**" + ("" if session.instructions else " none"))
    for item in session.instructions:
        cut = f", {item.cut:,} bytes left out" if item.cut else ""
        lines.append(f"- {item.path} ({item.size:,} bytes{cut})")
    skills = session.commands.skills
    lines.append("**Skills:**" + ("" if skills.skills or skills.problems else " none"))
    lines.extend(f"- `/{skill.name}` ({skill.origin}, {skill.path}): {skill.description}" for skill in skills.skills)
    lines.extend(f"- skipped: {problem.text()}" for problem in skills.problems)
    client = options.client_system_prompt
    if client is None:
        lines.append("**System prompt:** the agent's own")
    else:
        how = "added to the agent's own" if client.mode == "append" else "in place of the agent's own instructions"
        lines.append(f"**System prompt:** the editor's ({len(client.text):,} characters, {how})")
    waiting = session.queue.listing()
    lines.append("**Queue:**" + ("" if waiting else " empty"))
    for n, waiting_input in enumerate(waiting, start=1):
        kind = waiting_input.input_kind
        what = "prompt" if kind == "prompt" else "steering message for the running turn"
        text = " ".join(waiting_input.text.split())
        lines.append(f"{n}. {what}: «{text if len(text) <= 80 else text[:79] + '…'}»")
    return "\n".join(lines)


def _context(session: CommandView, meter: Meter) -> list[str]:
    tools = tuple(session.wiring.tools())
    request = meter.request(tools)
    measured = meter.measure(request)
    parts = measured.parts
    window = meter.window
    threshold = session.services.settings.agent.compaction_threshold
    projection = session.recorder.projection
    share = measured.used / window if window else 0.0
    cost = meter.cost()
    return [
        f"**Context:** {measured.used:,} of {window:,} tokens ({share:.0%}); compacted above {threshold:.0%}"
        f" ({int(threshold * window):,})",
        f"- system prompt ≈ {parts.system:,}, tool schemas ≈ {parts.tools:,} ({len(tools)} tools), history ≈"
        f" {parts.history:,} ({len(request.messages)} messages), images ≈ {parts.images:,}",
        f"- compactions so far: {projection.compactions}",
        f"**Cost so far:** {f'${cost.amount:.4f}' if cost is not None else 'unknown (no prices configured)'}"
        + (" (subagents included)" if projection.children else ""),
        *_budget(meter),
    ]


def _budget(meter: Meter) -> list[str]:
    caps = meter.budget.status() if meter.budget is not None else []
    if not caps:
        return []
    lines = ["**Budget:** (subagents included)"]
    for cap in caps:
        lifted = ", lifted for this session" if cap.lifted else ""
        lines.append(
            f"- {cap.scope} ({cap.key}): {cap.amount(cap.spent)} of {cap.amount(cap.limit)} spent,"
            f" {cap.amount(cap.left)} left{lifted}"
        )
    return lines


def _children(session: CommandView, meter: Meter) -> list[str]:
    projection = session.recorder.projection
    children = list(projection.children.values())
    if not children:
        return []
    lines = [f"**Subagents:** {len(children)}"]
    for child in children:
        outcome = child.outcome or "running"
        cost = _cost(meter.cost_of(child.usage_by_model))
        lines.append(f"- {child.title} ({outcome}, {child.model_id}): {_tokens(child.usage)}, {cost}")
    total = sum((child.usage for child in children), Usage())
    lines.append(f"- all subagents: {_tokens(total)}, {_cost(meter.cost_of(projection.children_usage_by_model()))}")
    return lines


def _tokens(usage: Usage) -> str:
    return f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens"


def _cost(cost: Cost | None) -> str:
    return f"${cost.amount:.4f}" if cost is not None else "cost unknown"
