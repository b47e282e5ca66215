"""Split answer text that carries reasoning between ``<think>`` and ``</think>`` into reasoning and text.

R1-style models served without a reasoning parser (vLLM, Ollama, Hugging Face endpoints) write their reasoning
into ``content``, wrapped in these tags. ``ThinkTagSplitter.feed`` takes the content fragments as they stream
and returns runs of ``("thinking", …)`` and ``("text", …)``: the tags themselves are dropped, and so is the
whitespace right after each tag (the blank line a model puts between its reasoning and its answer). A tag
split across fragments (``"<thi"`` + ``"nk>"``) is recognised: a fragment's tail that could be the start of
the awaited tag is held back until the next fragment, or until ``flush``. Tags may appear anywhere, any number
of times. This module knows no wire format.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["CLOSE_TAG", "OPEN_TAG", "ThinkTagSplitter"]

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"
Run = tuple[Literal["text", "thinking"], str]


class ThinkTagSplitter:
    """Content fragments in, reasoning and text runs out (see the module docstring)."""

    def __init__(self) -> None:
        self._inside = False
        self._pending = ""
        self._skip_space = False

    def feed(self, fragment: str) -> list[Run]:
        text = self._pending + fragment
        self._pending = ""
        runs: list[Run] = []
        while text:
            tag = CLOSE_TAG if self._inside else OPEN_TAG
            at = text.find(tag)
            if at >= 0:
                self._emit(runs, text[:at])
                text = text[at + len(tag) :]
                self._inside = not self._inside
                self._skip_space = True
                continue
            keep = _tag_prefix_length(text, tag)
            self._emit(runs, text[: len(text) - keep])
            self._pending = text[len(text) - keep :]
            break
        return runs

    def flush(self) -> list[Run]:
        """The content ended: what was held back, as it was."""
        pending, self._pending = self._pending, ""
        runs: list[Run] = []
        self._emit(runs, pending)
        return runs

    def _emit(self, runs: list[Run], text: str) -> None:
        if self._skip_space:
            text = text.lstrip()
            if not text:
                return
            self._skip_space = False
        if text:
            runs.append(("thinking" if self._inside else "text", text))


def _tag_prefix_length(text: str, tag: str) -> int:
    """The length of the longest end of ``text`` that is a beginning of ``tag`` (0 when none)."""
    if "<" not in text[-(len(tag) - 1) :]:
        return 0
    for length in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-length:]):
            return length
    return 0
