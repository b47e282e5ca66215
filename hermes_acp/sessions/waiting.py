"""The limits on what waits in a session: steering messages for the running turn, and prompts queued behind it.

Each kind has a ``WaitLimit``: a number of inputs and their size together (``core/bounds.py`` has the numbers).
``WaitLimit.check`` is asked before an input is stored as queued; one that would take what waits past either number is
refused with an ``InvalidParamsError`` (-32602, as a prompt over its own size is) that names the limit and what to do,
and nothing of it is kept: a refused steering message is never merged into the others, so what one safe point adds
to a model request stays within the steering limit. ``input_size`` measures an input as ``protocol/wire.py`` measures
a prompt: the characters of its text and attachments.

It holds nothing and knows no session: the steering queue (``sessions.steering``) and the session's prompt queue pass
what waits, each on the event loop, between the same two awaits as the input they admit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hermes_acp.core import AudioBlock, DisplayBlock, ImageBlock, ResourceBlock, TextBlock
from hermes_acp.core.bounds import (
    MAX_QUEUED_PROMPT_BYTES,
    MAX_QUEUED_PROMPTS,
    MAX_WAITING_STEERING,
    MAX_WAITING_STEERING_BYTES,
    MIB,
)
from hermes_acp.errors import InvalidParamsError

__all__ = ["QUEUED_PROMPTS", "WAITING_STEERING", "WaitLimit", "input_size"]


@dataclass(frozen=True, slots=True)
class WaitLimit:
    """How many inputs of one kind may wait, and how large they may be together."""

    kind: str
    """What waits, as the refusal names it (``steering messages``)."""
    waits_for: str
    """What they wait for (``the running turn's next safe point``)."""
    count: int
    total_bytes: int
    advice: str
    """What the sender can do instead."""

    def check(self, waiting: Iterable[Sequence[DisplayBlock]], incoming: Sequence[DisplayBlock]) -> None:
        """Refuse ``incoming`` when, beside ``waiting``, it would take them past the count or the size."""
        sizes = [input_size(blocks) for blocks in waiting]
        size = input_size(incoming)
        if len(sizes) < self.count and sum(sizes) + size <= self.total_bytes:
            return
        waits = "waits" if len(sizes) == 1 else "wait"
        raise InvalidParamsError(
            f"too many {self.kind} waiting for {self.waits_for}: the limit is {self.count}, {_mib(self.total_bytes)}"
            f" together, and {len(sizes)} already {waits} ({_mib(sum(sizes))}) beside this one ({_mib(size)});"
            f" {self.advice}",
            field="prompt",
            data={"limit": {"kind": self.kind, "count": self.count, "bytes": self.total_bytes}},
        )


WAITING_STEERING = WaitLimit(
    kind="steering messages",
    waits_for="the running turn's next safe point",
    count=MAX_WAITING_STEERING,
    total_bytes=MAX_WAITING_STEERING_BYTES,
    advice="send it once the turn has taken them (its next update), or cancel the turn",
)
QUEUED_PROMPTS = WaitLimit(
    kind="queued prompts",
    waits_for="the turns before them",
    count=MAX_QUEUED_PROMPTS,
    total_bytes=MAX_QUEUED_PROMPT_BYTES,
    advice="send it once one of them has run, or cancel the session's work (session/cancel)",
)


def input_size(blocks: Iterable[DisplayBlock]) -> int:
    """The characters of a prompt's text and attachments (base64 data is ASCII; text is never copied to be
    measured)."""
    total = 0
    for block in blocks:
        match block:
            case TextBlock():
                total += len(block.text)
            case ImageBlock() | AudioBlock():
                total += len(block.data)
            case ResourceBlock():
                total += len(block.text or "") + len(block.blob or "")
            case _:
                pass
    return total


def _mib(size: int) -> str:
    return f"{size / MIB:.1f}".removesuffix(".0") + " MiB" if size >= MIB // 10 else f"{size:,} bytes"
