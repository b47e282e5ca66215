"""Slash commands: ``/help``, ``/mode``, ``/model``, ``/title``, ``/compact``, ``/status``, run by the session.

A prompt whose only content is ``/<name> [argument]`` for a known command is a command; anything else goes to the
model (an unknown ``/x`` too). The command and its answer are stored like a turn (the user's line, a notice, the
turn's end, and what the command itself stored, such as a compaction) so a replay shows them, but the model never
sees them.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes_acp.core import DisplayBlock, SessionEvent, StopReason, TextBlock
from hermes_acp.core.modes import MODES

__all__ = ["COMMANDS", "Command", "CommandOutcome", "parse_command"]


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    description: str
    hint: str | None = None


COMMANDS: tuple[Command, ...] = (
    Command("help", "List the slash commands."),
    Command("mode", "Show or switch the session mode.", "default | accept_edits | dont_ask | read_only"),
    Command("model", "Show or switch the model.", "<provider>:<model>"),
    Command("title", "Rename this session.", "<new title>"),
    Command("compact", "Compact the conversation now: summarise it to free context.", "[what the summary should keep]"),
    Command("status", "Show the model, mode, context use, cost, MCP servers and directories."),
)
_NAMES = {c.name for c in COMMANDS}


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    text: str
    mode_changed: bool = False
    model_changed: bool = False
    stop_reason: StopReason = "end_turn"
    """``cancelled`` when a cancel came while the command waited its turn (it did not run)."""
    events: tuple[SessionEvent, ...] = ()
    """What the command did that the log keeps (a compaction), stored with the command in one write."""


def parse_command(display: list[DisplayBlock]) -> tuple[str, str] | None:
    """``(name, argument)`` when the prompt is exactly one known command."""
    if len(display) != 1 or not isinstance(display[0], TextBlock):
        return None
    text = display[0].text.strip()
    if not text.startswith("/"):
        return None
    name, _, argument = text[1:].partition(" ")
    return (name, argument.strip()) if name in _NAMES else None


def help_text() -> str:
    lines = ["Commands:"]
    for command in COMMANDS:
        usage = f"/{command.name}" + (f" {command.hint}" if command.hint else "")
        lines.append(f"- `{usage}`: {command.description}")
    lines.append("Modes: " + ", ".join(f"{m.id} ({m.description})" for m in MODES))
    return "\n".join(lines)
