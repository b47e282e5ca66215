"""Word expansion on text: what one argument becomes before the program sees it, as far as the command line tells.

Quotes and backslashes are removed (``unescape_bare``, ``unescape_double``), ``$'…'`` is decoded (``ansi_c``), brace
expansion makes several words of one (``/{bin,usr}``, ``{1..3}``), and an unquoted expansion splits a word where
its value had blanks (``rm${IFS}-rf``). Three stand-ins travel inside the text of an expanded word:

- ``UNKNOWN`` for what cannot be known before the command runs (``$(date)``, an unset variable);
- ``HOME`` for the home folder (``~``, ``$HOME``) at the start of a word;
- ``SPLIT`` where an unquoted expansion splits the word.

Brace characters inside quotes are protected (``protect``) so that brace expansion leaves them alone. ``Arg`` is one
expanded word and whether it carries downloaded content. Pure functions over strings: this module knows nothing of
the grammar, of programs or of what is refused.
"""

from __future__ import annotations

import codecs
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "HOME",
    "SPLIT",
    "UNKNOWN",
    "Arg",
    "ansi_c",
    "brace_expand",
    "home_at_start",
    "plain",
    "protect",
    "shown",
    "unescape_bare",
    "unescape_double",
    "words",
]

UNKNOWN = "\x00"
HOME = "\x01"
SPLIT = "\x02"
_PROTECTED = str.maketrans({"{": "\ue000", ",": "\ue001", "}": "\ue002"})
_UNPROTECTED = str.maketrans({"\ue000": "{", "\ue001": ",", "\ue002": "}"})
_MAX_BRACE_WORDS = 256
_TILDE = re.compile(r"~[\w.-]*")


@dataclass(frozen=True, slots=True)
class Arg:
    """One expanded word: its text (with the stand-ins) and whether it carries downloaded content."""

    text: str
    downloaded: bool = False

    @property
    def known(self) -> bool:
        return UNKNOWN not in self.text


def protect(text: str) -> str:
    """Quoted text: its brace characters are not brace expansion."""
    return text.translate(_PROTECTED)


def unescape_bare(text: str) -> str:
    """An unquoted word as the shell reads it: ``\\x`` is ``x``, a backslash-newline disappears."""
    out: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            following = next(chars, "")
            if following != "\n":
                out.append(protect(following))
        else:
            out.append(char)
    return "".join(out)


def unescape_double(text: str) -> str:
    """The literal part of a ``"…"`` string: a backslash escapes only ``$ ` " \\`` and newline."""
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def ansi_c(text: str) -> str:
    """A ``$'…'`` string decoded (``$'\\x72m'`` is ``rm``); ``UNKNOWN`` when it does not decode."""
    body = text[2:-1] if text.startswith("$'") and text.endswith("'") else text
    try:
        return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return UNKNOWN


def home_at_start(word: str) -> str:
    """An unquoted word with a leading ``~`` or ``~user`` as the ``HOME`` stand-in."""
    head, slash, rest = word.partition("/")
    return HOME + slash + rest if _TILDE.fullmatch(head) else word


def brace_expand(text: str) -> list[str]:
    """Bash brace expansion of one word (``a{b,c}d`` → ``abd acd``, nested, ``{1..3}``), bounded in size."""
    match = _innermost_brace(text)
    if match is None:
        return [text]
    start, end, parts = match
    out: list[str] = []
    for part in parts:
        out.extend(brace_expand(text[:start] + part + text[end + 1 :]))
        if len(out) > _MAX_BRACE_WORDS:
            break
    return out[:_MAX_BRACE_WORDS]


def _innermost_brace(text: str) -> tuple[int, int, list[str]] | None:
    """The first ``{…}`` (from the left, balanced) that expands: a comma list or a ``{a..b}`` sequence."""
    for start, char in enumerate(text):
        if char != "{" or (start > 0 and text[start - 1] == "$"):
            continue
        depth = 0
        commas: list[int] = []
        for end in range(start, len(text)):
            if text[end] == "{":
                depth += 1
            elif text[end] == "}":
                depth -= 1
                if depth == 0:
                    body = text[start + 1 : end]
                    if commas:
                        edges = [start, *commas, end]
                        return start, end, [text[a + 1 : b] for a, b in itertools.pairwise(edges)]
                    sequence = re.fullmatch(r"(-?\d+)\.\.(-?\d+)", body)
                    if sequence:
                        low, high = int(sequence.group(1)), int(sequence.group(2))
                        step = 1 if high >= low else -1
                        values = range(low, high + step, step)
                        return start, end, [str(v) for v in itertools.islice(values, _MAX_BRACE_WORDS)]
                    break
            elif text[end] == "," and depth == 1:
                commas.append(end)
    return None


def words(args: Iterable[Arg]) -> list[Arg]:
    """The words the program gets: brace expansion and splitting at ``SPLIT``, quoting stand-ins undone."""
    out: list[Arg] = []
    for arg in args:
        for expanded in brace_expand(arg.text):
            for piece in expanded.split(SPLIT):
                if piece or SPLIT not in expanded:
                    out.append(Arg(piece.translate(_UNPROTECTED), arg.downloaded))
    return out


def plain(text: str) -> str | None:
    """Expanded text as code to read again (a here-string fed to a shell), or None when part of it is unknown."""
    return None if UNKNOWN in text else text.replace(SPLIT, " ").translate(_UNPROTECTED)


def shown(target: str) -> str:
    """An expanded word as the model should read it in a reason."""
    return target.replace(HOME, "~")
