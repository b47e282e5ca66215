"""One streamed text, made safe fragment by fragment: the single place where model-stream text is cleaned.

A model's prose, its reasoning and each tool call's arguments arrive as fragments cut wherever the provider
chose, and a JSON string escape can even split one character in two: ``"\\ud83d"`` ends one delta and
``"\\ude00"`` starts the next. ``TextStream.feed`` joins such pairs and passes everything through
``hermes_acp.core.sanitize.clean_text``, so no fragment that reaches the editor, the log or the next request
holds a lone surrogate or a hidden-instruction character. What is released is never taken back:

* a character whose meaning depends on what follows (a high surrogate, a ZERO WIDTH JOINER, the black flag and
  TAG letters of a subdivision flag still missing its CANCEL TAG) is held back until the next fragment, or
  until ``flush`` at the end of the response, where a lone surrogate becomes U+FFFD;
* a character whose meaning depends on what came before (a variation selector, the joiner's emoji) is judged
  with the last characters already released as context.

This module knows no wire format.
"""

from __future__ import annotations

from hermes_acp.core.sanitize import clean_text

__all__ = ["TextStream"]

_CONTEXT_CHARS = 8
_ZWJ = "\u200d"
_BLACK_FLAG = "\U0001f3f4"
_CANCEL_TAG = "\U000e007f"


class TextStream:
    """Fragments of one text in, safe fragments out (see the module docstring)."""

    def __init__(self) -> None:
        self._held = ""
        self._context = ""

    def feed(self, fragment: str) -> str:
        """The safe text ``fragment`` releases (possibly "", possibly including what an earlier one held back)."""
        if not self._held and fragment.isascii():
            if fragment:
                self._context = (self._context + fragment)[-_CONTEXT_CHARS:]
            return fragment
        text = self._held + fragment
        cut = _release_point(text)
        self._held = text[cut:]
        return self._release(text[:cut])

    def flush(self) -> str:
        """What was held back, made safe: the end of the text has come."""
        held, self._held = self._held, ""
        return self._release(held)

    def _release(self, text: str) -> str:
        if not text:
            return ""
        context = self._context
        cleaned = clean_text(context + text)
        cleaned = cleaned[len(context) :] if context and cleaned.startswith(context) else clean_text(text)
        if cleaned:
            self._context = (context + cleaned)[-_CONTEXT_CHARS:]
        return cleaned


def _release_point(text: str) -> int:
    """How much of ``text`` can be judged now; the rest waits for the next fragment."""
    end = len(text)
    if end and "\ud800" <= text[end - 1] <= "\udbff":
        return end - 1
    if end and text[end - 1] == _ZWJ:
        return end - 1
    start = end
    while start > 0 and "\U000e0000" <= text[start - 1] < _CANCEL_TAG:
        start -= 1
    if start > 0 and text[start - 1] == _BLACK_FLAG:
        return start - 1
    return end
