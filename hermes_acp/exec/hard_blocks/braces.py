"""Bash brace expansion of one word: ``a{b,c}d`` → ``abd acd``, nested braces, sequences (``{1..3}``, ``{a..e..2}``,
``{01..10}``).

One pass over the word builds a tree (literal text, and the alternatives of each ``{…}``); the number of words is
counted before any is made, and a word that would make more than ``MAX_BRACE_WORDS`` (or holds more than
``MAX_BRACES`` braces) raises ``BraceLimit``, because a truncated list could hide the one word that matters. Bash's
reading is followed for the cases that make real words, checked against bash itself: a ``}`` before the first comma
of the outermost brace is text (``{a},/usr}`` is ``a} /usr``), ``{}`` at the start of a word and ``${`` are text.
In brace soup that bash reads differently still, the words missed keep a literal brace. Pure functions over strings.
"""

from __future__ import annotations

import re

__all__ = ["MAX_BRACES", "MAX_BRACE_WORDS", "BraceLimit", "brace_expand"]

MAX_BRACE_WORDS = 4096
MAX_BRACES = 256


class BraceLimit(Exception):
    """A word whose brace expansion is past what a check looks at: more than ``MAX_BRACE_WORDS`` words, or more than
    ``MAX_BRACES`` braces to read."""


_Part = str | list["_Seq"]
"""Literal text, or the alternatives of one ``{…}`` (each a sequence of parts)."""
_Seq = list[_Part]


def brace_expand(text: str) -> list[str]:
    """Bash brace expansion of one word: ``a{b,c}d`` → ``abd acd``, nested, sequences (``{1..3}``, ``{a..e..2}``,
    ``{01..10}``). Raises ``BraceLimit`` past ``MAX_BRACE_WORDS`` words (a truncated list could hide one) or
    ``MAX_BRACES`` braces."""
    if "{" not in text:
        return [text]
    if text.count("{") > MAX_BRACES:
        raise BraceLimit(f"a word with more than {MAX_BRACES} braces")
    tree = _brace_tree(text)
    if _count(tree) > MAX_BRACE_WORDS:
        raise BraceLimit(f"brace expansion makes more than {MAX_BRACE_WORDS} words")
    return _expand(tree)


def _brace_tree(text: str) -> _Seq:
    """One pass over ``text``: each balanced ``{…}`` with a comma or a sequence becomes alternatives; any other
    brace (unbalanced, ``${``, ``{a}``) stays literal text. As in bash, the outermost open brace is not closed by a
    ``}`` before its first comma (unless it holds a sequence): that ``}`` is text."""
    root: _Seq = []
    opened: list[tuple[int, bool, list[_Seq]]] = []  # where each open brace starts, whether it follows "$", options

    def current() -> _Seq:
        return opened[-1][2][-1] if opened else root

    literal_from = 0
    pair_at = -1  # as in bash, `{}` at the start of a word is text (find's placeholder): its `}` closes nothing
    for index, char in enumerate(text):
        if char == "{" and text.startswith("}", index + 1) and (index == 0 or text[index - 1] in " \t\n"):
            pair_at = index + 1
            continue
        if index == pair_at or (char != "{" and not (opened and char in ",}")):
            continue
        current().append(text[literal_from:index])
        literal_from = index + 1
        if char == "{":
            opened.append((index, index > 0 and text[index - 1] == "$", [[]]))
        elif char == ",":
            opened[-1][2].append([])
        else:
            start, after_dollar, options = opened[-1]
            sequence = None if after_dollar or len(options) > 1 else _sequence(text[start + 1 : index])
            if len(opened) == 1 and len(options) == 1 and sequence is None and not after_dollar:
                current().append("}")  # bash reads on: in `{a},/usr}` the first `}` is text, the braces hold `a},/usr`
                continue
            opened.pop()
            if sequence is not None:
                current().append([[value] for value in sequence])
            elif len(options) > 1 and not after_dollar:
                current().append(options)
            else:
                current().extend(_as_literal(options, closed=True))
    current().append(text[literal_from:])
    while opened:
        options = opened.pop()[2]
        current().extend(_as_literal(options, closed=False))
    return root


def _as_literal(options: list[_Seq], *, closed: bool) -> _Seq:
    parts: _Seq = ["{"]
    for index, option in enumerate(options):
        if index:
            parts.append(",")
        parts.extend(option)
    return [*parts, "}"] if closed else parts


_SEQUENCE = re.compile(r"(?:(-?\d{1,18})\.\.(-?\d{1,18})|([A-Za-z])\.\.([A-Za-z]))(?:\.\.(-?\d{1,18}))?")
"""Bash's sequence expressions; longer numbers overflow bash's integers, and it leaves them as text."""


def _sequence(body: str) -> list[str] | None:
    """The words of a sequence expression (``1..3``, ``a..e..2``, ``01..10``); None when ``body`` is not one."""
    match = _SEQUENCE.fullmatch(body)
    if match is None:
        return None
    first, last, first_char, last_char, step_text = match.groups()
    step = abs(int(step_text)) if step_text else 1
    low, high = (int(first), int(last)) if first is not None else (ord(first_char), ord(last_char))
    values = range(low, high + 1, step or 1) if high >= low else range(low, high - 1, -(step or 1))
    if len(values) > MAX_BRACE_WORDS:
        raise BraceLimit(f"{{{body}}} makes more than {MAX_BRACE_WORDS} words")
    if first is None:
        return [chr(value) for value in values]
    padded = any(len(end.lstrip("-")) > 1 and end.lstrip("-").startswith("0") for end in (first, last))
    width = max(len(first), len(last)) if padded else 0
    return [f"{value:0{width}d}" for value in values]


def _count(seq: _Seq) -> int:
    """How many words ``seq`` makes (counted past ``MAX_BRACE_WORDS`` only as far as needed)."""
    total = 1
    for part in seq:
        if not isinstance(part, str):
            total *= sum(_count(option) for option in part)
            if total > MAX_BRACE_WORDS:
                return total
    return total


def _expand(seq: _Seq) -> list[str]:
    out = [""]
    for part in seq:
        if isinstance(part, str):
            out = [prefix + part for prefix in out]
        else:
            options = [word for option in part for word in _expand(option)]
            out = [prefix + word for prefix in out for word in options]
    return out
