"""Word expansion on text: what one argument becomes before the program sees it, as far as the command line tells.

Quotes and backslashes are removed (``unescape_bare``, ``unescape_double``), ``$'…'`` is decoded (``ansi_c``),
``${x%pattern}`` and the other operations on a known value are applied (``parameter_operation``), brace expansion
makes several words of one (``braces``), and an unquoted expansion splits a word where its value had blanks
(``rm${IFS}-rf``). Three stand-ins travel inside the text of an expanded word:

- ``UNKNOWN`` for what cannot be known before the command runs (``$(date)``, an unset variable);
- ``HOME`` for the home folder (``~``, ``$HOME``) at the start of a word;
- ``SPLIT`` where an unquoted expansion splits the word.

Brace characters inside quotes are protected (``protect``) so that brace expansion leaves them alone. ``Arg`` is one
expanded word and whether it carries downloaded content. Pure functions over strings: this module knows nothing of
the grammar, of programs or of what is refused.
"""

from __future__ import annotations

import codecs
import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

from .braces import brace_expand

__all__ = [
    "HOME",
    "SPLIT",
    "UNKNOWN",
    "Arg",
    "ansi_c",
    "home_at_start",
    "parameter_operation",
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


_MAX_OPERATED_CHARS = 4096
_GLOB = re.compile(r"[*?\[]")


def parameter_operation(value: str, operator: str, operands: list[str]) -> str:
    """``${x<operator>…}`` applied to the known value of ``x``: pattern removal (``%``, ``%%``, ``#``, ``##``),
    substring (``:``), replacement of literal text (``/``, ``//``, ``/#``, ``/%``), case (``^^``, ``,,``, ``^``,
    ``,``). ``UNKNOWN`` for any other
    operation, or when part of it is unknown. The home folder stays itself (``${HOME%/*}`` is taken as home: its
    real path is not known here, and its parent is no safer)."""
    if any(UNKNOWN in t or HOME in t or "\\" in t for t in operands) or UNKNOWN in value:
        return UNKNOWN
    if HOME in value:
        return value
    if len(value) > _MAX_OPERATED_CHARS:
        return UNKNOWN
    if operator in ("#", "##", "%", "%%"):
        return _removed(value, operator, operands[0] if operands else "")
    if operator == ":":
        return _substring(value, operands)
    if operator in ("^^", ",,", "^", ",") and not operands:
        changed = value.upper() if operator.startswith("^") else value.lower()
        return changed if len(operator) == 2 else changed[:1] + value[1:]
    if operator in ("/", "//", "/#", "/%"):
        pattern, replacement = [*operands, "", ""][:2]
        if _GLOB.search(pattern):
            return UNKNOWN
        if operator == "/#":
            return replacement + value[len(pattern) :] if value.startswith(pattern) else value
        if operator == "/%":
            return value[: len(value) - len(pattern)] + replacement if value.endswith(pattern) else value
        return value.replace(pattern, replacement, -1 if operator == "//" else 1) if pattern else value
    return UNKNOWN


def _removed(value: str, operator: str, pattern: str) -> str:
    """``${x#p}`` (shortest matching prefix removed), ``##`` (longest), ``%`` / ``%%`` (suffix)."""
    cuts = range(len(value) + 1)
    if operator in ("##", "%"):
        cuts = cuts[::-1]
    for cut in cuts:
        part = value[:cut] if operator.startswith("#") else value[cut:]
        if fnmatch.fnmatchcase(part, pattern):
            return value[cut:] if operator.startswith("#") else value[:cut]
    return value


def _substring(value: str, operands: list[str]) -> str:
    """``${x:offset}`` / ``${x:offset:length}`` with literal numbers (negative ones count from the end)."""
    try:
        offset, *rest = (int(operand) for operand in operands)
    except ValueError:
        return UNKNOWN
    start = offset if offset >= 0 else len(value) + offset
    if start < 0 or len(rest) > 1:
        return "" if start < 0 else UNKNOWN
    if not rest:
        return value[start:]
    end = start + rest[0] if rest[0] >= 0 else len(value) + rest[0]
    return value[start:end] if end >= start else UNKNOWN


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
