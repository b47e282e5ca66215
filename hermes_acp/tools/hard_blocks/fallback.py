"""Simple commands read from text the grammar rejects (unbalanced quotes, an unfinished here-document).

The text is split into words the way ``shlex`` does (with ``; & | ( ) < >`` as operators; a plain split at blanks
and operators when even ``shlex`` gives up), brace expanded, and cut into simple commands at the operators. A word
after an output redirection is where that command writes. What this finds is checked like any command: a refusal
seen here stands, even though the command as a whole is in doubt. This module knows nothing of the grammar or of
what is refused.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from .words import HOME, Arg, words

__all__ = ["Lexed", "commands"]

_OPERATOR_CHARS = frozenset(";&|()<>\n")
_HOME_WORD = re.compile(r"^(?:~[\w.-]*|\$HOME|\$\{HOME\})(?=/|$)")


@dataclass(slots=True)
class Lexed:
    """One simple command: its words, and the files its output redirections name."""

    words: list[Arg] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


def _tokens(text: str) -> list[str]:
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return re.findall(r"[;&|()<>]+|[^\s;&|()<>]+", text)


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
                current.words = [Arg(_HOME_WORD.sub(HOME, arg.text)) for arg in words(current.words)]
                found.append(current)
            current = Lexed()
    return found
