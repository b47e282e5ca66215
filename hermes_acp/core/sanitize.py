"""The one sanitizer for text from outside: hidden-instruction characters out, unencodable surrogates made safe.

Everything the agent did not write itself (MCP servers' names, descriptions, schemas, results and errors; model
streams; file names; fetched attachments; frames) can carry characters a reader never sees but a model reads:

- **TAG characters** (U+E0000–U+E007F) spell invisible ASCII. They are removed, except inside a valid emoji tag
  sequence: U+1F3F4 (black flag), a subdivision code in TAG letters/digits (``gbeng``, ``gbsct``, ``usca``: two
  letters, then one to four letters or digits), then CANCEL TAG (U+E007F). Those are flags such as England's.
- **Bidi embedding, override and isolate controls** (U+202A–U+202E, U+2066–U+2069) reorder what is shown
  ("Trojan Source"). The plain marks (LRM, RLM, ALM) reorder nothing and stay.
- **Variation selectors** of the supplement (U+E0100–U+E01EF) select nothing in real text and encode bytes when
  strung together; of the basic block (U+FE00–U+FE0F) only one directly after another character is kept (an
  emoji's presentation selector), never a run.
- **Zero-width characters** (U+200B–U+200D, U+2060–U+2064, U+FEFF, U+180E) encode bits between visible letters.
  A ZERO WIDTH JOINER between two emoji is part of the emoji (a family, a profession) and stays.
- **Lone surrogates** (U+D800–U+DFFF outside a pair) cannot be encoded as UTF-8: a frame, a log line or a stored
  event holding one fails to write. A pair of surrogates becomes the character it encodes; a lone one becomes
  U+FFFD.

``join_surrogates`` (a string) and ``join_surrogates_json`` (JSON data, at any depth) apply only the surrogate
rule, for text that must otherwise stay exactly as it came: signed model reasoning that goes back byte for byte, a
file's content read through the editor and written back, where removing a character would corrupt it.

``clean_text`` is the hot path: ASCII and ordinary text come back as the same object after one regex search.
``sanitize_text`` / ``sanitize_json`` also say what was removed (``Removals``), for the caller to log: this module
logs nothing and knows nothing of where the text came from. ``escape_hidden`` is for names that must stay
recognisable (file names): instead of removing, it shows what would be removed as escapes (``\\xNN`` for a byte that
was not UTF-8, kept by Python as a surrogate escape; ``\\uNNNN`` for the rest).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "RemovalKind",
    "Removals",
    "clean_json",
    "clean_text",
    "escape_hidden",
    "join_surrogates",
    "join_surrogates_json",
    "sanitize_json",
    "sanitize_text",
]

RemovalKind = Literal["tag", "bidi", "variation_selector", "zero_width", "surrogate"]

_SUSPECT = re.compile(
    "[\ud800-\udfff\U000e0000-\U000e007f\u202a-\u202e\u2066-\u2069\U000e0100-\U000e01ef"
    "\u200b-\u200d\u2060-\u2064\ufeff\u180e\ufe00-\ufe0f]"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_FLAG_TAGS = re.compile("[\U000e0061-\U000e007a]{2}[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,4}\U000e007f")
_BLACK_FLAG = "\U0001f3f4"
_ZWJ = "\u200d"


@dataclass
class Removals:
    """What a sanitizing pass removed or replaced, by kind (empty: the text was clean)."""

    counts: Counter[RemovalKind] = field(default_factory=Counter)

    def __bool__(self) -> bool:
        return bool(self.counts)

    def add(self, other: Removals) -> None:
        self.counts.update(other.counts)

    def as_log(self) -> dict[str, int]:
        """The counts as log fields, e.g. ``{"tag": 12, "zero_width": 3}``."""
        return dict(sorted(self.counts.items()))


def clean_text(text: str) -> str:
    """``text`` with hidden characters removed and lone surrogates replaced (the same object when clean)."""
    return sanitize_text(text)[0]


def clean_json(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings, numbers) with every string and key cleaned."""
    return sanitize_json(value)[0]


def sanitize_text(text: str) -> tuple[str, Removals]:
    """``text`` cleaned, and what was removed."""
    removals = Removals()
    if text.isascii() or _SUSPECT.search(text) is None:
        return text, removals
    if _SURROGATE.search(text) is not None:
        text = _join_surrogates(text, removals)
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        kind = _kind(ch)
        if kind is None:
            out.append(ch)
            i += 1
            continue
        if kind == "tag":
            end = i
            while end < n and "\U000e0000" <= text[end] <= "\U000e007f":
                end += 1
            flag = _FLAG_TAGS.match(text, i, end) if i > 0 and text[i - 1] == _BLACK_FLAG else None
            kept = flag.group(0) if flag is not None else ""
            out.append(kept)
            if end - i > len(kept):
                removals.counts["tag"] += end - i - len(kept)
            i = end
            continue
        if kind == "basic_selector":
            end = i
            while end < n and _kind(text[end]) in ("basic_selector", "variation_selector"):
                end += 1
            if end == i + 1 and i > 0 and _kind(text[i - 1]) is None:
                out.append(ch)  # one presentation selector after a visible character: part of what is shown
            else:
                removals.counts["variation_selector"] += end - i
            i = end
            continue
        if ch == _ZWJ and _between_emoji(text, i):
            out.append(ch)
            i += 1
            continue
        removals.counts[kind] += 1
        i += 1
    return "".join(out), removals


def join_surrogates(text: str) -> str:
    """``text`` with surrogate pairs joined and lone surrogates made U+FFFD, and nothing else changed: for text that
    must otherwise stay exactly as received (signed model reasoning goes back to the model byte for byte)."""
    return _join_surrogates(text, Removals()) if _SURROGATE.search(text) is not None else text


def join_surrogates_json(value: Any) -> Any:
    """``value`` (JSON data) with ``join_surrogates`` applied to every string and key, at any depth."""
    if isinstance(value, str):
        return join_surrogates(value)
    if isinstance(value, dict):
        return {join_surrogates(k) if isinstance(k, str) else k: join_surrogates_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [join_surrogates_json(v) for v in value]
    return value


def sanitize_json(value: Any) -> tuple[Any, Removals]:
    """``value`` with every string (keys included) cleaned, at any depth, and what was removed."""
    removals = Removals()

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            cleaned, found = sanitize_text(item)
            if found:
                removals.add(found)
            return cleaned
        if isinstance(item, dict):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(v) for v in item]
        return item

    return walk(value), removals


def escape_hidden(text: str) -> str:
    """``text`` unchanged when the sanitizer would remove nothing; else every suspect character as an escape:
    ``\\xNN`` for a surrogate escape of a byte (U+DC80–U+DCFF, how ``os.listdir`` keeps bytes that are not UTF-8),
    ``\\uNNNN`` / ``\\UNNNNNNNN`` for hidden characters and other lone surrogates. Lossless, printable, encodable."""
    if not sanitize_text(text)[1]:
        return text
    out: list[str] = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF or _kind(ch) is not None:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)


def _kind(ch: str) -> RemovalKind | Literal["basic_selector"] | None:
    code = ord(ch)
    if 0xE0000 <= code <= 0xE007F:
        return "tag"
    if 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        return "bidi"
    if 0xE0100 <= code <= 0xE01EF:
        return "variation_selector"
    if 0xFE00 <= code <= 0xFE0F:
        return "basic_selector"
    if 0x200B <= code <= 0x200D or 0x2060 <= code <= 0x2064 or code in (0xFEFF, 0x180E):
        return "zero_width"
    return None


def _join_surrogates(text: str, removals: Removals) -> str:
    """Pairs of surrogate code points become the character they encode; lone ones become U+FFFD."""
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    lone = joined.count("\ufffd") - text.count("\ufffd")
    if lone:
        removals.counts["surrogate"] += lone
    return joined


def _is_emoji(ch: str) -> bool:
    """Extended pictographic, approximately: the blocks emoji live in (enough to keep a ZWJ sequence whole)."""
    code = ord(ch)
    return (
        0x1F000 <= code <= 0x1FAFF
        or 0x2600 <= code <= 0x27BF
        or 0x2300 <= code <= 0x23FF
        or 0x2B00 <= code <= 0x2BFF
        or code in (0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D, 0x3297, 0x3299)
    )


def _between_emoji(text: str, i: int) -> bool:
    """A ZWJ at ``i`` joins two emoji (skipping a presentation selector or skin-tone modifier before it)."""
    j = i - 1
    while j >= 0 and ("\ufe00" <= text[j] <= "\ufe0f" or "\U0001f3fb" <= text[j] <= "\U0001f3ff"):
        j -= 1
    return j >= 0 and i + 1 < len(text) and _is_emoji(text[j]) and _is_emoji(text[i + 1])
