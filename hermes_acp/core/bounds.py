"""The bounds on what comes in from outside, in one place: every input that could exhaust the agent has one.

Each is enforced where that input enters (the module named beside it), with a message that says which bound and what
to do, and the session usable afterwards; README's "Limits" lists them for users. ``cut_json`` shrinks a JSON value
to a size, for payloads the agent passes on (a permission question's input).

Plain numbers and one pure function; no I/O.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_OUTPUT_TOKENS",
    "MAX_ELICITATION_ANSWER_BYTES",
    "MAX_MCP_TOOLS_PER_SERVER",
    "MAX_PERMISSION_TEXT_CHARS",
    "MAX_PROMPT_BYTES",
    "MAX_QUEUED_PROMPTS",
    "MAX_QUEUED_PROMPT_BYTES",
    "MAX_RESPONSE_BYTES",
    "MAX_SSE_EVENT_BYTES",
    "MAX_TOOL_CALLS_PER_RESPONSE",
    "MAX_WAITING_STEERING",
    "MAX_WAITING_STEERING_BYTES",
    "OUTPUT_MARGIN",
    "cut_json",
    "response_char_limit",
]

MIB = 1024 * 1024

# One model response (providers/_http.py): the agent stops reading and ends the request as ``max_tokens``.
OUTPUT_MARGIN = 4
"""How far past its output-token limit a response may stream before the agent stops reading it."""
CHARS_PER_TOKEN = 4
DEFAULT_OUTPUT_TOKENS = 32_000
"""The output limit assumed for a model that configures none (for the bound only; nothing is sent)."""
MAX_RESPONSE_BYTES = 64 * MIB
"""Bytes of one response's event stream, whatever they hold (keep-alives and empty deltas count)."""
MAX_SSE_EVENT_BYTES = 8 * MIB
"""One server-sent event (a line without an end is not buffered past this)."""

# One response's tool calls (turns/streaming.py): the rest are dropped, and the model and the user are told.
MAX_TOOL_CALLS_PER_RESPONSE = 128

# A prompt (protocol/wire.py): refused with -32602.
MAX_PROMPT_BYTES = 16 * MIB
"""Text and attachments of one prompt together (UTF-8 text, base64 data, embedded resources)."""

# What waits in a session (sessions/waiting.py): past either number of its kind, refused with -32602 (nothing stored).
MAX_WAITING_STEERING = 32
"""Steering messages waiting for the running turn's next safe point, where all of them join its next model request."""
MAX_WAITING_STEERING_BYTES = MAX_PROMPT_BYTES
"""Their text and attachments together (measured as a prompt's): steering adds no more to a request than one prompt."""
MAX_QUEUED_PROMPTS = 32
"""Prompts waiting for the turns before them to end (each runs as its own turn)."""
MAX_QUEUED_PROMPT_BYTES = 2 * MAX_PROMPT_BYTES
"""Their text and attachments together."""

# MCP (mcp_client/_bounded.py has the size of one message): tools offered per server (mcp_client/connection.py).
MAX_MCP_TOOLS_PER_SERVER = 128

# Questions to the user (turns/approvals.py; tools/ask_user.py, whose question and choices its schema bounds).
MAX_PERMISSION_TEXT_CHARS = 64 * 1024
"""Each text (and each side of a diff) a permission question shows; longer ones are cut with a note."""
MAX_ELICITATION_ANSWER_BYTES = 64 * 1024
"""The user's answer to it."""
_STRING_CUT = 2000


def response_char_limit(max_output_tokens: int | None) -> int:
    """Characters (text, reasoning and tool arguments together) one response may stream."""
    return (max_output_tokens or DEFAULT_OUTPUT_TOKENS) * CHARS_PER_TOKEN * OUTPUT_MARGIN


def cut_json(value: Any, max_bytes: int) -> Any:
    """``value`` when its JSON fits ``max_bytes``; else with its long strings cut (a note in each says how much
    was left out); else a note of its size."""
    if len(json.dumps(value, ensure_ascii=False)) <= max_bytes:
        return value
    cut = _cut_strings(value)
    size = len(json.dumps(cut, ensure_ascii=False))
    if size <= max_bytes:
        return cut
    return {"_cut": f"{len(json.dumps(value, ensure_ascii=False)):,} characters, too large to show here"}


def _cut_strings(value: Any) -> Any:
    if isinstance(value, str):
        if len(value) <= _STRING_CUT:
            return value
        return f"{value[:_STRING_CUT]}… [{len(value) - _STRING_CUT:,} more characters]"
    if isinstance(value, dict):
        return {key: _cut_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_cut_strings(item) for item in value]
    return value
