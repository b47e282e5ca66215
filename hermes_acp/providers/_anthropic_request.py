"""Neutral messages → an Anthropic Messages API request body (``stream: true``).

* ``system`` is one text block with a ``cache_control`` breakpoint (omitted when the prompt is empty); the
  last tool carries a breakpoint too, and so does the last block of the final user message, so each request
  of a turn reads the previous request's prefix from the prompt cache (three of the four breakpoints allowed);
* consecutive messages of the same role are merged into one (the API wants every tool result answering an
  assistant message in the single user message that follows it); empty text is left out (the API rejects
  empty text blocks), and so is a message left with no blocks;
* user text and images become ``text`` and ``image`` (``source.type: base64``) blocks; a tool result becomes
  a ``tool_result`` block whose ``content`` holds its text and image blocks, with ``is_error`` when it failed;
* assistant reasoning goes back only when Anthropic can verify it: a ``ThinkingPart`` with a signature
  becomes a ``thinking`` block with the reasoning exactly as it was sent (``verbatim`` when display cleaning
  changed it), a redacted one a ``redacted_thinking`` block (its data is kept in ``signature``); reasoning
  without a signature (from another provider) is dropped. Tool calls become ``tool_use`` blocks with the
  provider's ids; arguments that are not a JSON object are sent as ``{}``. The steps of tools Anthropic ran
  itself (``server_tool_use``, ``web_search_tool_result``, …) go back as the blocks they came as, in place,
  which the API requires (and which continuing a paused response needs); those of other providers are dropped;
* ``max_tokens`` is required: the request's ``max_output_tokens``, else the configured model's, else
  ``DEFAULT_MAX_TOKENS``;
* an ``effort`` (other than ``none``) turns on extended thinking with the budget ``THINKING_BUDGETS`` gives it.
  ``max_tokens`` counts the thinking too and must exceed the budget: with a known output limit the budget
  shrinks to leave ``MIN_ANSWER_TOKENS`` for the answer (no thinking when that leaves less than
  ``MIN_THINKING_BUDGET``); without one, ``max_tokens`` grows to the budget plus ``DEFAULT_MAX_TOKENS``.

This module is pure: no HTTP, no streaming.
"""

from __future__ import annotations

from typing import Any

from hermes_acp.config import Effort
from hermes_acp.core import (
    AssistantMessage,
    ImagePart,
    Message,
    ServerToolCallPart,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

from .base import ProviderRequest, ToolSpec

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "MIN_ANSWER_TOKENS",
    "MIN_THINKING_BUDGET",
    "THINKING_BUDGETS",
    "build_messages_request",
]

DEFAULT_MAX_TOKENS = 8192
MIN_THINKING_BUDGET = 1024
"""Anthropic's smallest ``budget_tokens``."""
MIN_ANSWER_TOKENS = 1024
"""What a known output limit keeps for the answer when thinking shares it."""
THINKING_BUDGETS: dict[Effort, int] = {"minimal": 1024, "low": 4096, "medium": 8192, "high": 16384, "xhigh": 32000}
"""Thinking budget per effort, in tokens (``none`` turns thinking off)."""
_CACHE = {"type": "ephemeral"}


def build_messages_request(request: ProviderRequest, *, default_max_tokens: int | None = None) -> dict[str, Any]:
    """The JSON body of ``POST {base_url}/v1/messages`` for ``request``."""
    limit = request.max_output_tokens or default_max_tokens
    max_tokens, thinking = _thinking(request.effort, limit)
    body: dict[str, Any] = {"model": request.model, "max_tokens": max_tokens, "stream": True}
    if thinking is not None:
        body["thinking"] = thinking
    if request.system:
        body["system"] = [{"type": "text", "text": request.system, "cache_control": dict(_CACHE)}]
    body["messages"] = _messages(request.messages)
    if request.tools:
        tools = [_tool(spec) for spec in request.tools]
        tools[-1]["cache_control"] = dict(_CACHE)
        body["tools"] = tools
    return body


def _thinking(effort: Effort | None, limit: int | None) -> tuple[int, dict[str, Any] | None]:
    """``max_tokens`` and the ``thinking`` parameter for ``effort`` under the known output ``limit``, if any."""
    budget = THINKING_BUDGETS.get(effort) if effort is not None else None
    if budget is None:
        return limit or DEFAULT_MAX_TOKENS, None
    if limit is None:
        return budget + DEFAULT_MAX_TOKENS, {"type": "enabled", "budget_tokens": budget}
    budget = min(budget, limit - MIN_ANSWER_TOKENS)
    if budget < MIN_THINKING_BUDGET:
        return limit, None
    return limit, {"type": "enabled", "budget_tokens": budget}


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}


def _messages(history: list[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for message in history:
        if isinstance(message, UserMessage):
            role, blocks = "user", [_user_block(part) for part in message.parts if _keep(part)]
        elif isinstance(message, AssistantMessage):
            role, blocks = "assistant", _assistant_blocks(message)
        else:
            role, blocks = "user", [_tool_result(message)]
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    if wire and wire[-1]["role"] == "user":
        wire[-1]["content"][-1]["cache_control"] = dict(_CACHE)
    return wire


def _keep(part: TextPart | ImagePart) -> bool:
    return not isinstance(part, TextPart) or bool(part.text)


def _user_block(part: TextPart | ImagePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    return {"type": "image", "source": {"type": "base64", "media_type": part.media_type, "data": part.data}}


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ThinkingPart):
            if part.redacted and part.signature:
                blocks.append({"type": "redacted_thinking", "data": part.signature})
            elif part.signature:
                thinking = part.verbatim if part.verbatim is not None else part.text
                blocks.append({"type": "thinking", "thinking": thinking, "signature": part.signature})
        elif isinstance(part, ToolCallPart):
            blocks.append({"type": "tool_use", "id": part.id, "name": part.name, "input": _tool_input(part)})
        elif isinstance(part, ServerToolCallPart | ServerToolResultPart) and part.block is not None:
            blocks.append(dict(part.block))
    return blocks


def _tool_input(call: ToolCallPart) -> dict[str, Any]:
    return call.parsed_arguments() or {}


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
    content = [_user_block(part) for part in message.parts if _keep(part)]
    if content:
        block["content"] = content
    if message.is_error:
        block["is_error"] = True
    return block
