"""Text shaping shared by the file and terminal tools: binary/encoding sniffing, line splitting, caps that say what
they cut, Markdown fences that survive backticks in the content, and short one-line previews for titles.

Pure functions (``sniff`` reads a file's first bytes, nothing more). Nothing here knows tools, the editor or ACP.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

__all__ = [
    "Encoding",
    "cap_middle",
    "fence",
    "one_line",
    "plural",
    "sniff",
    "split_lines",
]

Encoding = Literal["text", "binary", "not_utf8"]
_SNIFF_BYTES = 64 * 1024


def sniff(path: Path) -> Encoding:
    """``binary`` when the first 64 KiB hold a NUL byte; ``not_utf8`` when they are not valid UTF-8; else ``text``.

    Raises ``OSError`` when the file cannot be opened.
    """
    with path.open("rb") as handle:
        head = handle.read(_SNIFF_BYTES)
    if b"\0" in head:
        return "binary"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the sniff window is not an encoding problem.
        if not (len(head) == _SNIFF_BYTES and exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"):
            return "not_utf8"
    return "text"


def split_lines(text: str) -> list[str]:
    """Lines the way editors number them: split on ``\\n`` only, a final newline ends the last line, ``\\r`` dropped."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def cap_middle(text: str, max_chars: int, *, head_share: float = 0.25) -> tuple[str, bool]:
    """``(text, cut)``: the text itself when it fits, else its start (``head_share`` of ``max_chars``) and its end,
    with a marker between them saying how much was left out."""
    if len(text) <= max_chars:
        return text, False
    head = int(max_chars * head_share)
    tail = max_chars - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[… {omitted:,} of {len(text):,} characters omitted …]\n{text[-tail:]}", True


def fence(text: str, info: str = "") -> str:
    """``text`` in a Markdown code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{marks}{info}\n{body}{marks}"


def one_line(text: str, max_chars: int) -> str:
    """The first line of ``text``, shortened to ``max_chars`` with an ellipsis when anything was cut."""
    stripped = text.strip()
    first = stripped.split("\n", 1)[0].rstrip()
    cut = first != stripped
    if len(first) > max_chars:
        first = first[: max_chars - 1].rstrip()
        cut = True
    return f"{first}…" if cut else first


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"
