"""Session titles: taken from the first prompt, or written by a configured model (``agent.title_model``).

The derived title costs nothing; the model-written one is one small, bounded request made in the session's owner
task after the prompt was answered, never on the prompt's path. What that request cost comes back with its title
(``ModelTitle``), for the budget and the log; the caller decides whether it may be made.
"""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from hermes_acp.core import TextPart, Usage, UserMessage
from hermes_acp.errors import ProviderError

if TYPE_CHECKING:
    from hermes_acp.providers.base import ModelProvider

__all__ = ["MAX_TITLE_CHARS", "ModelTitle", "title_from_prompt", "title_with_model"]

MAX_TITLE_CHARS = 60
TITLE_TIMEOUT_S = 20.0
_TITLE_SYSTEM = (
    "Write a title of at most six words for the conversation that starts with the user's message."
    " Answer with the title only, no quotes."
)


@dataclass(frozen=True, slots=True)
class ModelTitle:
    """What the title model answered: its title (None when the answer held none) and what the request cost (None
    when the provider did not say)."""

    title: str | None
    usage: Usage | None


def title_from_prompt(prompt: str) -> str | None:
    """The first non-empty line, whitespace collapsed, cut at a word boundary to ``MAX_TITLE_CHARS``."""
    for line in prompt.splitlines():
        words = line.split()
        if not words:
            continue
        title = " ".join(words)
        if len(title) <= MAX_TITLE_CHARS:
            return title
        cut = title[: MAX_TITLE_CHARS - 1].rsplit(" ", 1)[0]
        return (cut or title[: MAX_TITLE_CHARS - 1]) + "…"
    return None


async def title_with_model(provider: ModelProvider, model: str, prompt: str) -> ModelTitle | None:
    """The title ``model`` writes for ``prompt``; None when it gave no answer in time or failed (nothing is known
    of what that cost)."""
    from hermes_acp.providers.base import ProviderRequest, ResponseDone  # the provider seam loads with the first turn

    request = ProviderRequest(
        model=model,
        system=_TITLE_SYSTEM,
        messages=[UserMessage(parts=[TextPart(text=prompt[:2000])])],
        max_output_tokens=32,
    )
    with anyio.move_on_after(TITLE_TIMEOUT_S):
        try:
            async with aclosing(provider.stream(request)) as events:
                async for event in events:
                    if isinstance(event, ResponseDone):
                        title = title_from_prompt(event.message.text.strip().strip("\"'"))
                        return ModelTitle(title, event.usage)
        except ProviderError:
            return None
    return None
