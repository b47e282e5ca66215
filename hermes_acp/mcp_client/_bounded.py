"""What an MCP server sends, read within a bound: no message can take the agent's memory or its time.

- ``BoundedLines`` splits a byte stream into lines (a stdio server's messages, a response body's SSE lines) in one
  pass over each chunk; a line longer than ``MAX_MESSAGE_BYTES`` is not kept whole: its first ``KEPT_BYTES`` and
  its last bytes are, and it comes out as a ``Cut`` saying how long it was. A body read whole (a JSON response) is
  one line (``split=False``).
- ``cut_message`` turns a ``Cut`` back into one JSON-RPC message the SDK can read, so that the request it answers
  gets its answer at once (an answer, never a timeout: a call that answered is never sent again): the kept start of
  a result, closed where it was cut (strings, arrays, objects), with ``_meta[CUT_KEY]`` saying how much was read and
  how much there was; or, when the start cannot be closed into a result, an error answer saying why. A message
  without an id (a notification, a request from the server) is dropped and logged.

Pure functions over bytes; nothing here knows the SDK or a transport.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["CUT_KEY", "KEPT_BYTES", "MAX_MESSAGE_BYTES", "BoundedLines", "Cut", "cut_message"]

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""The largest message from an MCP server read whole (a screenshot or a big file fits; a runaway does not)."""
KEPT_BYTES = 4 * 1024 * 1024
"""Of a longer message, the start that is kept and turned into a cut result (the model gets at most 100,000
characters of a result anyway)."""
TAIL_BYTES = 64 * 1024
"""Of a longer message, the end that is kept (where its ``id`` is when a server writes it last)."""
CUT_KEY = "hermes-acp/cut"
"""The ``_meta`` key of a result that was cut here: ``{"read": bytes kept, "total": bytes sent}``."""
_ID_AT_END = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")\s*}\s*$')
_STRING_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
_CUT_ESCAPE = re.compile(r"(\\+)(u[0-9a-fA-F]{0,3})?$")
_LITERAL = re.compile(r"-?[0-9][0-9.eE+-]*|true|false|null")


@dataclass(frozen=True, slots=True)
class Cut:
    """A line that was too long: its start, its end, and how long it was."""

    head: bytes
    tail: bytes
    total: int


class BoundedLines:
    """Lines of a byte stream, each at most ``limit`` bytes kept whole (see the module docstring)."""

    def __init__(self, *, limit: int = MAX_MESSAGE_BYTES, keep: int = KEPT_BYTES, split: bool = True):
        self._limit = limit
        self._keep = min(keep, limit)
        self._split = split
        self._buffer = bytearray()
        self._over: list[Any] | None = None
        """[head, tail bytearray, total] while the current line is over the limit."""

    def feed(self, chunk: bytes) -> list[bytes | Cut]:
        out: list[bytes | Cut] = []
        start = 0
        while self._split:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            self._add(chunk[start:end])
            out.append(self._take())
            start = end + 1
        self._add(chunk[start:] if start else chunk)
        return out

    def flush(self) -> list[bytes | Cut]:
        """What is left at the end of the stream (a last line without its newline, a whole body)."""
        if self._over is None and not self._buffer:
            return []
        return [self._take()]

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        if self._over is None:
            if len(self._buffer) + len(piece) <= self._limit:
                self._buffer += piece
                return
            room = self._keep - len(self._buffer)
            head = bytes(self._buffer[: self._keep]) + (piece[:room] if room > 0 else b"")
            self._over = [head, bytearray(piece[-TAIL_BYTES:]), len(self._buffer) + len(piece)]
            self._buffer = bytearray()
            return
        tail: bytearray = self._over[1]
        tail += piece[-TAIL_BYTES:]
        if len(tail) > TAIL_BYTES:
            del tail[: len(tail) - TAIL_BYTES]
        self._over[2] += len(piece)

    def _take(self) -> bytes | Cut:
        if self._over is not None:
            head, tail, total = self._over
            self._over = None
            return Cut(head, bytes(tail), total)
        line = bytes(self._buffer)
        self._buffer = bytearray()
        return line


def cut_message(cut: Cut, *, limit: int = MAX_MESSAGE_BYTES) -> bytes | None:
    """One JSON-RPC message standing for ``cut`` (see the module docstring); None when it answers no request."""
    value = _closed(cut.head.decode("utf-8", errors="ignore"))
    message = value if isinstance(value, dict) else {}
    if "id" not in message:
        found = _ID_AT_END.search(cut.tail)
        if found is not None:
            message["id"] = json.loads(found.group(1))
    request_id = message.get("id")
    if not isinstance(request_id, int | str) or isinstance(request_id, bool) or "method" in message:
        return None
    result = message.get("result")
    if isinstance(result, dict):
        meta = result.get("_meta")
        result["_meta"] = {
            **(meta if isinstance(meta, dict) else {}),
            CUT_KEY: {"read": len(cut.head), "total": cut.total},
        }
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "result": result}
    else:
        text = (
            f"the server's answer was {cut.total:,} bytes, over the agent's limit of {limit:,} bytes for one message;"
            " it was not read"
        )
        answer = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": text}}
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def _closed(text: str) -> Any:
    """The JSON value ``text`` starts, closed where it breaks off; None when it is not the start of one."""
    repaired = _close(text)
    if repaired is None:
        return None
    try:
        return json.loads(repaired)
    except ValueError:
        return None


def _close(text: str) -> str | None:
    """``text`` with what it leaves open closed: the string it is in, then each container (a dangling key gets
    ``null``, a dangling comma goes); a literal cut in the middle (``tru``, ``12.``) is dropped for ``null``."""
    stack: list[str] = []
    expect_value = True
    """In an array or after a colon (or at the very start): the next token is a value."""
    position, length = 0, len(text)
    out_end = 0
    """Where the kept text ends (a literal cut at the end is dropped)."""
    in_key = False
    while position < length:
        char = text[position]
        if char in " \t\r\n":
            position += 1
            continue
        if char == '"':
            body = _STRING_BODY.match(text, position + 1)
            end = body.end() if body else position + 1
            if end >= length or text[end] != '"':  # the string is cut
                kept = text[position + 1 :]
                escape = _CUT_ESCAPE.search(kept)
                if escape is not None and len(escape.group(1)) % 2 == 1:  # an escape cut in the middle
                    kept = kept[: escape.start()] + escape.group(1)[:-1]
                prefix = text[:position] + '"' + kept + '"'
                dangling_key = bool(stack) and stack[-1] == "{" and not expect_value
                return _finish(prefix + (":null" if dangling_key else ""), stack, expect_value=False)
            in_key = bool(stack) and stack[-1] == "{" and not expect_value
            position = end + 1
            out_end = position
            expect_value = False
            continue
        if char in "{[":
            stack.append(char)
            expect_value = char == "["
            position += 1
            out_end = position
            continue
        if char in "}]":
            if not stack:
                return None
            stack.pop()
            expect_value = False
            position += 1
            out_end = position
            continue
        if char == ":":
            expect_value = True
            in_key = False
            position += 1
            out_end = position
            continue
        if char == ",":
            expect_value = bool(stack) and stack[-1] == "["
            position += 1
            out_end = position
            continue
        literal = _LITERAL.match(text, position)
        if literal is None or literal.end() >= length:
            return _finish(text[:out_end], stack, expect_value=expect_value or in_key)
        position = literal.end()
        out_end = position
        expect_value = False
    return _finish(text[:out_end], stack, expect_value=expect_value or in_key)


def _finish(prefix: str, stack: list[str], *, expect_value: bool) -> str | None:
    if not stack:
        return prefix if prefix.strip() else None
    text = prefix.rstrip()
    if text.endswith(","):
        text = text[:-1]
        expect_value = False
    elif text.endswith(":"):
        text += "null"
    elif expect_value and stack[-1] == "{" and text.endswith('"'):
        text += ":null"
    closing = "".join("}" if opener == "{" else "]" for opener in reversed(stack))
    return text + closing
