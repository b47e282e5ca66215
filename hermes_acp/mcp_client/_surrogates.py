"""Lone surrogates in what a server sends, made safe before the SDK decodes it.

JSON may escape a surrogate code point that is not half of a pair (``"\\ud800"``). Python's decoder accepts it;
the SDK's (pydantic's) does not, and drops the whole message, so the request it answered waits for its timeout.
Such JSON is decoded here with Python's decoder, cleaned by the one sanitizer (``core.sanitize``: a pair becomes
its character, a lone surrogate U+FFFD, hidden characters go) and encoded again:

- ``mend_json(raw)``: one JSON text, or None when it needs nothing (no lone surrogate, or not JSON at all);
- ``mend_body(chunks, events=...)``: an HTTP response body as it streams: server-sent events line by line (each
  ``data:`` line is one JSON text), a JSON body whole, each within the one bound on a message (``_bounded``: a
  longer one is cut into the answer it stands for, in one pass, whatever its size).

Nothing here knows the SDK or HTTP; ``_wire`` applies it where the SDK would otherwise see the message.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterable, AsyncIterator

from hermes_acp.core.sanitize import sanitize_json

from ._bounded import BoundedLines, Cut, cut_message

__all__ = ["mend_body", "mend_json"]

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""Any escaped surrogate, paired or not: the cheap test before decoding (false hits cost a decode, nothing more)."""
_DATA = b"data:"


def mend_json(raw: str | bytes) -> str | None:
    """``raw`` with its strings cleaned, when it is JSON holding a lone surrogate; else None."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if _SURROGATE_ESCAPE.search(data) is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    clean, removals = sanitize_json(value)
    if not removals.counts.get("surrogate"):
        return None
    return json.dumps(clean, ensure_ascii=False, separators=(",", ":"))


def _mend_line(line: bytes) -> bytes:
    body = line.rstrip(b"\r")
    if not body.startswith(_DATA):
        return line
    payload = body[len(_DATA) :].removeprefix(b" ")
    mended = mend_json(payload)
    if mended is None:
        return line
    return _DATA + b" " + mended.encode("utf-8") + line[len(body) :]


async def mend_body(chunks: AsyncIterable[bytes], *, events: bool) -> AsyncIterator[bytes]:
    """The body ``chunks`` make up, bounded and mended: event lines as soon as each is whole, a JSON body at its end."""
    lines = BoundedLines(split=events)
    async for chunk in chunks:
        done = lines.feed(chunk)
        if done:
            yield b"".join(_event_line(line) + b"\n" for line in done)
    for rest in lines.flush():
        yield _event_line(rest) if events else _json_body(rest)


def _event_line(line: bytes | Cut) -> bytes:
    if not isinstance(line, Cut):
        return _mend_line(line)
    head = line.head.removeprefix(_DATA).removeprefix(b" ")
    if not line.head.startswith(_DATA):
        return b":"  # an over-long line that is not data: a comment, which the parser skips
    message = cut_message(Cut(head, line.tail, line.total))
    return b":" if message is None else _DATA + b" " + message


def _json_body(body: bytes | Cut) -> bytes:
    if isinstance(body, Cut):
        return cut_message(body) or b""
    mended = mend_json(body)
    return body if mended is None else mended.encode("utf-8")
