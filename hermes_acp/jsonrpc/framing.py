"""Newline-delimited JSON-RPC frames: reading lines, decoding them safely, checking envelopes, encoding replies.

Everything a client writes is untrusted, so decoding is defensive in one place:

- a line longer than ``MAX_LINE_BYTES`` is skipped whole (its reader answers -32600) instead of growing memory;
- nesting deeper than ``MAX_DEPTH`` is refused before ``json.loads`` sees it (a thousand ``[`` would exhaust the
  recursion limit): -32600, and the connection keeps serving;
- JSON may spell lone surrogates (``"\\ud800"``), which no UTF-8 writer can encode. They are made safe in method
  names and params (the one sanitizer's surrogate rule); the request id is kept exactly, so the answer matches;
- ``encode`` never fails on text: a frame holding an unencodable character is written with ASCII escapes, which
  any JSON reader decodes to the same string.

``FrameError`` carries the JSON-RPC code and message for a frame that cannot be dispatched. Pure functions plus a
line reader over an ``asyncio.StreamReader``; nothing here knows methods or sessions.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from typing import Any

from hermes_acp.errors import WireErrorCode

__all__ = [
    "MAX_DEPTH",
    "MAX_LINE_BYTES",
    "FrameError",
    "LineReader",
    "decode_frame",
    "encode_frame",
    "valid_id",
]

MAX_LINE_BYTES = 50 * 1024 * 1024
"""The longest frame accepted (a prompt with images, a large file); longer lines are skipped with -32600."""
MAX_DEPTH = 128
"""The deepest nesting of arrays and objects accepted in a frame."""

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
"""A JSON string, written as an unrolled loop: the regex engine keeps one frame per alternation it enters, so
``(?:[^"\\]|\\.)*`` over a 50 MB string took gigabytes; runs of plain characters here cost nothing."""
_SURROGATE_ESCAPE = re.compile(rb"\\[uU][dD][89a-fA-F]")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class FrameError(Exception):
    """A frame that cannot be dispatched: the JSON-RPC error to answer, and the id to answer it with."""

    def __init__(self, code: WireErrorCode, message: str, request_id: Any = None):
        super().__init__(message)
        self.code = code
        self.request_id = request_id


class LineReader:
    """Reads newline-delimited frames of at most ``MAX_LINE_BYTES``; a longer one is skipped to its end."""

    def __init__(self, reader: asyncio.StreamReader, limit: int = MAX_LINE_BYTES):
        self._reader = reader
        self._limit = limit

    async def read(self) -> bytes | FrameError | None:
        """The next line (without its newline), a ``FrameError`` for a line over the limit, or None at EOF."""
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if not exc.partial and not chunks:
                    return None
                chunk = exc.partial
                size += len(chunk)
                return self._line(chunks, chunk, size)
            except asyncio.LimitOverrunError as exc:
                chunk = await self._reader.readexactly(exc.consumed)
                size += len(chunk)
                if size <= self._limit:
                    chunks.append(chunk)
                continue
            size += len(chunk)
            return self._line(chunks, chunk, size)

    def _line(self, chunks: list[bytes], last: bytes, size: int) -> bytes | FrameError:
        if size > self._limit:
            return FrameError(-32600, f"Invalid request: message larger than {self._limit} bytes")
        return b"".join([*chunks, last]).rstrip(b"\r\n")


def decode_frame(line: bytes) -> dict[str, Any]:
    """A checked JSON-RPC message from one line, or ``FrameError`` (-32700 parse error, -32600 invalid request)."""
    depth = _depth(line)
    if depth > MAX_DEPTH:
        raise FrameError(-32600, f"Invalid request: JSON nested {depth} levels deep (at most {MAX_DEPTH})")
    try:
        message: Any = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise FrameError(-32700, f"Parse error: {exc}") from None
    problem = _envelope_problem(message)
    if problem is not None:
        request_id = message.get("id") if isinstance(message, dict) and valid_id(message.get("id")) else None
        raise FrameError(-32600, f"Invalid request: {problem}", request_id)
    checked: dict[str, Any] = message
    if _SURROGATE_ESCAPE.search(line):  # rare: the sanitizer (and pydantic, through hermes_acp.core) loads on demand
        from hermes_acp.core.sanitize import join_surrogates_json

        checked = {key: value if key == "id" else join_surrogates_json(value) for key, value in checked.items()}
    return checked


def encode_frame(message: dict[str, Any]) -> bytes:
    """One line of JSON; ASCII escapes for a frame that holds text UTF-8 cannot encode (a client's lone
    surrogate in an id we answer)."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def valid_id(value: object) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _depth(line: bytes) -> int:
    """How deeply arrays and objects nest in ``line`` (strings skipped); cheap when there are few brackets."""
    structure = _STRING.sub(b"", line).translate(None, _NOT_BRACKETS)
    if len(structure) <= MAX_DEPTH:
        return len(structure)
    steps = (1 if byte in b"[{" else -1 for byte in structure)
    return max(itertools.accumulate(steps, initial=0))


def _envelope_problem(message: object) -> str | None:
    if isinstance(message, list):
        return "batch requests are not supported"
    if not isinstance(message, dict):
        return "a JSON-RPC message must be an object"
    if message.get("jsonrpc") != "2.0":
        return 'the "jsonrpc" member must be "2.0"'
    if "id" in message and not valid_id(message["id"]):
        return '"id" must be a string, an integer or null'
    if "method" in message:
        if not isinstance(message["method"], str) or not message["method"]:
            return '"method" must be a non-empty string'
        if "params" in message and not isinstance(message["params"], dict | list | None):
            return '"params" must be an object'
        return None
    if "id" not in message:
        return 'a message needs a "method" (request or notification) or an "id" (response)'
    if "result" not in message and "error" not in message:
        return 'a response needs a "result" or an "error"'
    return None
