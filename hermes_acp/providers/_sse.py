"""Server-sent events: turn the lines of an ``text/event-stream`` body into messages.

Implements the parsing rules of the HTML living standard that model APIs rely on: ``event:`` names the
message, ``data:`` lines are joined with newlines, a blank line dispatches, ``:`` starts a comment, one
leading space after the colon is dropped. ``id:`` and ``retry:`` are ignored (model streams are never
resumed).
This module knows nothing about HTTP, JSON or any vendor's event names.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SseMessage", "SseParser"]


@dataclass(frozen=True, slots=True)
class SseMessage:
    """One dispatched event: its name (``"message"`` when the stream gave none) and its data text."""

    event: str
    data: str


class SseParser:
    """Feed lines (without line endings) one by one; a complete message comes back on its blank line."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []

    def feed_line(self, line: str) -> SseMessage | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        return None

    def flush(self) -> SseMessage | None:
        """The message still pending when the body ended without a final blank line, if any."""
        return self._dispatch()

    def _dispatch(self) -> SseMessage | None:
        if not self._data:
            self._event = ""
            return None
        message = SseMessage(event=self._event or "message", data="\n".join(self._data))
        self._event = ""
        self._data = []
        return message
