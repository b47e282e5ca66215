"""Agent-owned terminals on the wire: the card of a command the agent runs itself, for clients that render one.

What happens to such a terminal is three kinds of ``TerminalEvent``, read from the stored ``AgentTerminalBlock``\\ s
and the live ``LiveTerminalOutput`` (``terminal_events``):

- ``Opened`` — the call's first content announced it, with the command and its working folder;
- ``Output`` — text appended to it: each live delta, or on a replay all that the settlement kept, at once;
- ``Exited`` — the settlement ended it: the exit code or the signal (both unknown for a command that never ran or
  was stopped with its turn).

Each dialect renders those events, and only those:

- ``zed_meta``: Zed's extension to ACP v1, for a client that advertised ``_meta.terminal_output``. A ``tool_call``
  carries ``_meta.terminal_info {terminal_id, cwd, command}`` (Zed makes a display-only terminal, labelled with the
  call's title, so the title is the command) and content ``{"type": "terminal", "terminalId"}``; updates carry
  ``_meta.terminal_output {terminal_id, data}`` (appended) and ``_meta.terminal_exit {terminal_id, exit_code,
  signal}``. The terminal id is the tool call's, as claude-agent-acp and codex-acp name theirs. A client that
  advertised ``_meta.terminal_output_delta`` instead (codex-acp's name for the same channel; no ACP schema has either)
  gets the same card with its output under ``_meta.terminal_output_delta {terminal_id, data}``, appended (``delta``).
- ``v2_updates``: ACP v2's agent-owned terminals (``terminal_update`` with the command, cwd and exit status;
  ``terminal_output_chunk`` with base64 bytes), the same events, for when the server speaks v2.

A replay renders the same events from the same stored blocks, with the output the settlement kept, so it shows the
card a live client saw and never names a terminal that no longer exists. No I/O; nothing here knows sessions.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from hermes_acp.core import AgentTerminalBlock, DisplayBlock
from hermes_acp.turns.ports import LiveTerminalOutput

__all__ = [
    "TITLE_CHARS",
    "Exited",
    "Opened",
    "Output",
    "TerminalEvent",
    "card_title",
    "terminal_events",
    "v2_updates",
    "zed_meta",
]

TITLE_CHARS = 2_000
"""The longest command shown as a terminal card's title (its label in Zed)."""


@dataclass(frozen=True, slots=True)
class Opened:
    terminal_id: str
    command: str
    cwd: str


@dataclass(frozen=True, slots=True)
class Output:
    terminal_id: str
    data: str


@dataclass(frozen=True, slots=True)
class Exited:
    terminal_id: str
    exit_code: int | None
    signal: str | None


TerminalEvent = Opened | Output | Exited


def terminal_events(source: list[DisplayBlock] | LiveTerminalOutput, *, live: bool = True) -> list[TerminalEvent]:
    """What a call's content (or one live update) does to its agent-owned terminals. A terminal that has not ended
    opens; one that ended exits, after all it kept on a replay (``live=False``: nothing of it streamed there)."""
    if isinstance(source, LiveTerminalOutput):
        return [Output(source.terminal_id, source.data)] if source.data else []
    events: list[TerminalEvent] = []
    for block in source:
        if not isinstance(block, AgentTerminalBlock):
            continue
        if not block.ended:
            events.append(Opened(block.terminal_id, block.command, block.cwd))
            continue
        if not live and block.output:
            events.append(Output(block.terminal_id, block.output))
        events.append(Exited(block.terminal_id, block.exit_code, block.signal))
    return events


def card_title(blocks: list[DisplayBlock]) -> str | None:
    """The title of a call whose content announces a terminal: its command (Zed labels the terminal with it)."""
    for block in blocks:
        if isinstance(block, AgentTerminalBlock):
            command = block.command
            return command if len(command) <= TITLE_CHARS else command[: TITLE_CHARS - 1] + "…"
    return None


def zed_meta(events: list[TerminalEvent], *, delta: bool = False) -> dict[str, Any] | None:
    """The ``_meta`` of one ``tool_call`` / ``tool_call_update`` carrying ``events`` (one terminal per call: the
    latest of each kind), or None when there are none. Zed applies the output before the exit. ``delta``: the output
    goes under ``terminal_output_delta`` (the same appended text)."""
    output_key = "terminal_output_delta" if delta else "terminal_output"
    meta: dict[str, Any] = {}
    for event in events:
        match event:
            case Opened():
                meta["terminal_info"] = {"terminal_id": event.terminal_id, "cwd": event.cwd, "command": event.command}
            case Output():
                previous = meta.get(output_key, {}).get("data", "")
                meta[output_key] = {"terminal_id": event.terminal_id, "data": previous + event.data}
            case Exited():
                meta["terminal_exit"] = {
                    "terminal_id": event.terminal_id,
                    "exit_code": event.exit_code,
                    "signal": event.signal,
                }
    return meta or None


def v2_updates(events: list[TerminalEvent], *, replay: bool = False, cancellable: bool = False) -> list[dict[str, Any]]:
    """The same events as ACP v2 ``session/update`` payloads: ``terminal_update`` (upsert: the command and cwd when
    it opens, the exit status when it ends) and ``terminal_output_chunk`` (appended bytes, base64).

    ``replay``: what a settlement kept goes out as one ``terminal_update`` with the output as a replacement snapshot
    (``output.data``) and the exit status, never as appended chunks: a client that rejoins may hold part of it
    already. ``cancellable``: the server answers ``terminal/cancel``, so an opening terminal advertises
    ``capabilities.cancel`` and an ending one clears it."""
    updates: list[dict[str, Any]] = []
    kept: dict[str, str] = {}
    for event in events:
        match event:
            case Opened():
                opened: dict[str, Any] = {
                    "sessionUpdate": "terminal_update",
                    "terminalId": event.terminal_id,
                    "command": event.command,
                    "cwd": event.cwd,
                }
                if cancellable:
                    opened["capabilities"] = {"cancel": {}}
                updates.append(opened)
            case Output() if replay:
                kept[event.terminal_id] = kept.get(event.terminal_id, "") + event.data
            case Output():
                updates.append(
                    {
                        "sessionUpdate": "terminal_output_chunk",
                        "terminalId": event.terminal_id,
                        "data": _b64(event.data),
                    }
                )
            case Exited():
                status: dict[str, Any] = {}
                if event.exit_code is not None:
                    status["exitCode"] = event.exit_code
                if event.signal is not None:
                    status["signal"] = event.signal
                ended: dict[str, Any] = {"sessionUpdate": "terminal_update", "terminalId": event.terminal_id}
                if event.terminal_id in kept:
                    ended["output"] = {"data": _b64(kept.pop(event.terminal_id))}
                ended["exitStatus"] = status
                if cancellable:
                    ended["capabilities"] = None
                updates.append(ended)
    updates.extend(
        {"sessionUpdate": "terminal_update", "terminalId": terminal_id, "output": {"data": _b64(data)}}
        for terminal_id, data in kept.items()
    )
    return updates


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")
