"""Context accounting: how many tokens the next model request takes, and how many the model can take.

No tokenizer (nothing to download, nothing model-specific). The provider's reported usage of the previous request
is the truth; what was added to the history since is estimated, cheaply and on purpose a little generously:

- text (message text, tool-call arguments, the system prompt): characters / ``CHARS_PER_TOKEN`` (4), rounded up;
- an image sent as pixels: ``IMAGE_TOKENS`` (about what a screenshot with a 1568-pixel long edge costs at the big
  providers); an image the request replaces with a placeholder counts as that placeholder's text;
- every message: ``MESSAGE_TOKENS`` more for its role and framing;
- tool schemas: their JSON text / 4.

``Anchor`` is the reported point: the input and output tokens of the last response, where the history stood
after it, and the estimated size of the system prompt and tool schemas of its request (the tool surface may change
between requests: the difference is estimated). After a compaction there is no anchor until the next response
reports usage, so the whole request is estimated. The window a request may fill is the model's ``context_window``
minus its ``max_output_tokens`` (the answer's reserve; none when unset). Pure; no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from hermes_acp.core import (
    AssistantMessage,
    ImagePart,
    Message,
    ServerToolCallPart,
    ServerToolResultPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
)
from hermes_acp.providers.base import ProviderRequest, ToolSpec
from hermes_acp.providers.catalog import CatalogModel, Cost

from .projection import Anchor

__all__ = [
    "CHARS_PER_TOKEN",
    "IMAGE_TOKENS",
    "MESSAGE_TOKENS",
    "Breakdown",
    "Measurement",
    "breakdown",
    "fixed_tokens",
    "measure",
    "message_tokens",
    "messages_tokens",
    "session_cost",
    "text_tokens",
    "tools_tokens",
    "window_tokens",
]

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 1_600
MESSAGE_TOKENS = 4


def text_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def message_tokens(message: Message) -> tuple[int, int]:
    """``(text tokens, image tokens)`` of one message as a request carries it."""
    chars = 0
    images = 0
    for part in message.parts:
        if isinstance(part, ImagePart):
            images += IMAGE_TOKENS
        elif isinstance(part, TextPart | ThinkingPart):
            chars += len(part.text)
        elif isinstance(part, ToolCallPart):
            chars += len(part.id) + len(part.name) + len(part.arguments)
        elif isinstance(part, ServerToolCallPart | ServerToolResultPart):  # the provider's own block goes back whole
            if part.block is not None:
                chars += len(json.dumps(part.block))
            else:
                chars += len(part.name) + (
                    len(part.arguments) if isinstance(part, ServerToolCallPart) else len(part.text)
                )
    if isinstance(message, AssistantMessage) and message.echo:
        chars += len(json.dumps(message.echo))
    return MESSAGE_TOKENS + -(-chars // CHARS_PER_TOKEN), images


def messages_tokens(messages: Sequence[Message]) -> tuple[int, int]:
    """``(text tokens, image tokens)`` of ``messages``."""
    text = images = 0
    for message in messages:
        t, i = message_tokens(message)
        text += t
        images += i
    return text, images


def tools_tokens(tools: Sequence[ToolSpec]) -> int:
    """The tool schemas as their JSON text would take them."""
    chars = sum(
        len(tool.name) + len(tool.description) + len(json.dumps(tool.input_schema, separators=(",", ":")))
        for tool in tools
    )
    return -(-chars // CHARS_PER_TOKEN)


def window_tokens(model: CatalogModel) -> int:
    """What one request may fill: the context window less the answer's reserve (``max_output_tokens``)."""
    return max(1, model.context_window - (model.max_output_tokens or 0))


@dataclass(frozen=True, slots=True)
class Breakdown:
    """The estimated parts of one request, in tokens."""

    system: int
    tools: int
    history: int
    """Message text, tool calls and results, and framing."""
    images: int

    @property
    def fixed(self) -> int:
        """The part a compaction cannot change: the system prompt and the tool schemas."""
        return self.system + self.tools

    @property
    def total(self) -> int:
        return self.system + self.tools + self.history + self.images


def fixed_tokens(request: ProviderRequest) -> int:
    """The estimated system prompt and tool schemas of ``request``."""
    return text_tokens(request.system) + tools_tokens(request.tools)


def breakdown(request: ProviderRequest) -> Breakdown:
    history, images = messages_tokens(request.messages)
    return Breakdown(text_tokens(request.system), tools_tokens(request.tools), history, images)


@dataclass(frozen=True, slots=True)
class Measurement:
    used: int
    """The tokens the request takes: the anchor plus the estimate of what came after it, or the whole estimate."""
    parts: Breakdown


def measure(request: ProviderRequest, anchor: Anchor | None) -> Measurement:
    """How many tokens ``request`` takes (its messages must be the history the anchor counts, in order)."""
    parts = breakdown(request)
    if anchor is None or anchor.messages > len(request.messages):
        return Measurement(parts.total, parts)
    text, images = messages_tokens(request.messages[anchor.messages :])
    drift = parts.fixed - anchor.fixed if anchor.fixed is not None else 0
    return Measurement(max(0, anchor.tokens + drift + text + images), parts)


def session_cost(usage_by_model: Mapping[str, Usage], model: Callable[[str], CatalogModel | None]) -> Cost | None:
    """What the session's model calls cost, summed over the models that have prices; None when none has."""
    total: float | None = None
    for model_id, usage in usage_by_model.items():
        entry = model(model_id)
        cost = entry.cost(usage) if entry is not None else None
        if cost is not None:
            total = (total or 0.0) + cost.amount
    return Cost(amount=total) if total is not None else None
