"""Simple commands read from text the grammar rejects (unbalanced quotes, an unfinished here-document).

The text is split into words the way ``shlex`` does (with ``; & | ( ) < >`` and newlines as operators, comments
left out; a plain split at blanks and operators when even ``shlex`` gives up) and cut into simple commands at the
operators; ``expand`` brace expands
a command's words. A word after an output redirection is where that command writes. What this finds is checked
like any command: a refusal seen here stands, even though the command as a whole is in doubt. The same reading
serves a command the walk gave up on (too intricate): it is linear in the length of the text. This module knows
nothing of the grammar or of what is refused.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from .words import HOME, Arg, words

__all__ = ["Lexed", "commands", "expand"]

_OPERATOR_CHARS = frozenset(";&|()<>\n")
_HOME_WORD = re.compile(r"^(?:~[\w.-]*|\$HOME|\$\{HOME\})(?=/|$)")


@dataclass(slots=True)
class Lexed:
    """One simple command: its words (as written, quotes removed), and the files its output redirections name."""

    words: list[Arg] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


def _tokens(text: str) -> list[str]:
    """Words and operator runs; a newline is an operator (it ends a command), comments are left out."""
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>\n")
        lexer.whitespace = " \t\r"
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError:
        tokens = re.findall(r"[;&|()<>\n]+|[^ \t\r;&|()<>\n]+", text)
    kept: list[str] = []
    in_comment = False
    for token in tokens:
        in_comment = (in_comment or token.startswith("#")) and "\n" not in token
        if not in_comment:
            kept.append(token)
    return kept


def expand(written: list[Arg]) -> list[Arg]:
    """A command's words brace expanded, a leading ``~`` or ``$HOME`` read as the home folder (``words.BraceLimit``
    when that is too much)."""
    return [Arg(_HOME_WORD.sub(HOME, arg.text)) for arg in words(written)]


def commands(source: str) -> list[Lexed]:
    """The simple commands in ``source``, in order."""
    found: list[Lexed] = []
    current = Lexed()
    redirect = False
    for token in [*_tokens(source.replace("\\\n", "")), ";"]:
        operator = bool(token) and set(token) <= _OPERATOR_CHARS
        if redirect and token and not operator:
            current.outputs.append(token)
            redirect = False
        elif not operator:
            current.words.append(Arg(token))
        elif "<" in token or ">" in token:
            redirect = ">" in token
            if current.words and re.fullmatch(r"\d+", current.words[-1].text):
                current.words.pop()  # a file descriptor number (3>, 2>)
        else:
            redirect = False
            if current.words or current.outputs:
                found.append(current)
            current = Lexed()
    return found
