"""Server-sent events: turn the bytes of an ``text/event-stream`` body into messages.

Implements the parsing rules of the HTML living standard that model APIs rely on: lines end at CR, LF or CRLF
(and nowhere else: a U+2028 or U+0085 inside a JSON string is not a line break, whatever ``str.splitlines``
thinks), ``event:`` names the message, ``data:`` lines are joined with newlines, a blank line dispatches, ``:``
starts a comment, one leading space after the colon is dropped, one byte-order mark at the very start is skipped.
``id:`` and ``retry:`` are ignored (model streams are never resumed).

Bytes arrive in chunks cut anywhere (in the middle of a line, of a CRLF, of a multi-byte character): a line is
decoded only once it is whole, so a character split across chunks is never broken. Bytes that are not UTF-8
become U+FFFD instead of failing the stream.
This module knows nothing about HTTP, JSON or any vendor's event names.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EventTooLarge", "SseMessage", "SseParser"]

_CR = 0x0D
_LF = 0x0A
_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class SseMessage:
    """One dispatched event: its name (``"message"`` when the stream gave none) and its data text."""

    event: str
    data: str


class EventTooLarge(Exception):
    """A line grew past the parser's bound without ending."""


class SseParser:
    """Feed body chunks (``feed``) or whole lines (``feed_line``); messages come back as their blank line arrives.
    A line (or a message's data) longer than ``max_bytes`` raises ``EventTooLarge`` instead of being buffered."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self._max_bytes = max_bytes
        self._data_bytes = 0
        self._event = ""
        self._data: list[str] = []
        self._buffer = bytearray()
        self._scanned = 0
        """How far ``_buffer`` is known to hold no line ending."""
        self._first_line = True

    def feed(self, chunk: bytes) -> list[SseMessage]:
        """The messages completed by ``chunk``, a piece of the body cut anywhere."""
        buffer = self._buffer
        buffer += chunk
        messages: list[SseMessage] = []
        start = 0
        while True:
            end, after = _line_end(buffer, start, max(start, self._scanned))
            if end < 0:
                break
            message = self._line(bytes(buffer[start:end]))
            if message is not None:
                messages.append(message)
            start = after
        if start:
            del buffer[:start]
        if self._max_bytes is not None and (len(buffer) > self._max_bytes or self._data_bytes > self._max_bytes):
            raise EventTooLarge(f"an event of the stream passed {self._max_bytes:,} bytes without ending")
        self._scanned = max(0, len(buffer) - 1) if buffer and buffer[-1] == _CR else len(buffer)
        return messages

    def feed_line(self, line: str) -> SseMessage | None:
        """One whole line, without its line ending."""
        if self._first_line:
            self._first_line = False
            line = line.removeprefix(_BOM)
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
            self._data_bytes += len(value)
        elif field == "event":
            self._event = value
        return None

    def flush(self) -> list[SseMessage]:
        """What the body's end completes: a last line without its ending, and a message without its blank line."""
        messages: list[SseMessage] = []
        if self._buffer:
            rest = bytes(self._buffer).removesuffix(b"\r")
            self._buffer.clear()
            self._scanned = 0
            message = self._line(rest)
            if message is not None:
                messages.append(message)
        message = self._dispatch()
        if message is not None:
            messages.append(message)
        return messages

    def _line(self, raw: bytes) -> SseMessage | None:
        return self.feed_line(raw.decode("utf-8", errors="replace"))

    def _dispatch(self) -> SseMessage | None:
        if not self._data:
            self._event = ""
            return None
        message = SseMessage(event=self._event or "message", data="\n".join(self._data))
        self._event = ""
        self._data = []
        self._data_bytes = 0
        return message


def _line_end(buffer: bytearray, start: int, scan_from: int) -> tuple[int, int]:
    """Where the line starting at ``start`` ends and where the next one begins; ``(-1, -1)`` while it is not whole.

    A CR at the very end of the buffer waits for the next chunk, which may begin with the LF of a CRLF.
    """
    lf = buffer.find(b"\n", scan_from)
    cr = buffer.find(b"\r", scan_from, lf if lf >= 0 else len(buffer))
    if cr >= 0:
        if cr + 1 == len(buffer):
            return -1, -1
        return cr, cr + 2 if buffer[cr + 1] == _LF else cr + 1
    if lf >= 0:
        return lf, lf + 1
    return -1, -1
