"""The bash grammar: a command line parsed by tree-sitter's bash grammar, and a few questions asked of the tree.

The only module that imports ``tree_sitter``. The grammar is loaded on the first ``parse`` (a few ms to some tens of
ms, a shared library read from disk), so callers on an event loop check commands in a worker thread; parses are
serialised by a lock. This module knows nothing of words, programs or what is refused.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = [
    "Node",
    "Redirections",
    "descendants",
    "parse",
    "redirections",
    "redirects",
    "target",
    "text",
]


_lock = threading.Lock()
"""One parse at a time: checks run in worker threads, and a parser is not made to be shared between them."""


@functools.cache
def _parser() -> Parser:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parse(source: str) -> Node:
    """The root of ``source``'s syntax tree (``has_error`` when bash would not read it either)."""
    data = source.encode("utf-8", "surrogatepass")
    with _lock:
        return _parser().parse(data).root_node


def text(node: Node | None) -> str:
    """The source text of ``node``, as written."""
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "surrogatepass")


def descendants(node: Node) -> Iterator[Node]:
    """``node`` and every node below it, in source order (iterative: deep trees do not recurse)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def redirects(node: Node) -> list[Node]:
    """The redirections written directly on ``node`` (``> f``, ``<<< s``, ``<<EOF``)."""
    return [child for child in node.children if child.type.endswith("_redirect")]


@dataclass(slots=True)
class Redirections:
    """A statement's redirections as bash reads them.

    The grammar puts what follows a redirection on the line inside the redirection's node: more words of the
    command (``rm > /dev/null -rf /``: every word after the target; ``rm <<EOF -rf /``), more redirections, and
    after a here-document's start the rest of a pipeline (``cat <<EOF | sh``) or of a list (``cat <<EOF && rm …``).
    They are taken back out here.
    """

    redirects: list[Node] = field(default_factory=list)
    """Every redirection, those found inside others included (``target`` names a file redirection's file)."""
    words: list[Node] = field(default_factory=list)
    """More words of the command."""
    piped: list[Node] = field(default_factory=list)
    """Pipelines the statement's output goes into (their first stage reads it)."""
    after: list[Node] = field(default_factory=list)
    """Statements that follow (after ``&&`` or ``||``)."""


def redirections(nodes: Iterable[Node]) -> Redirections:
    """The redirections ``nodes`` and what the grammar put inside them (see ``Redirections``)."""
    found = Redirections()
    pending = deque(nodes)
    while pending:
        node = pending.popleft()
        found.redirects.append(node)
        if node.type == "file_redirect":
            found.words.extend(node.children_by_field_name("destination")[1:])
        elif node.type == "heredoc_redirect":
            found.words.extend(node.children_by_field_name("argument"))
            pending.extend(node.children_by_field_name("redirect"))
            found.after.extend(node.children_by_field_name("right"))
            found.piped.extend(
                child
                for index, child in enumerate(node.children)
                if child.type == "pipeline" and node.field_name_for_child(index) is None
            )
    return found


def target(redirect: Node) -> Node | None:
    """The file a file redirection reads or writes (``> f`` is ``f``)."""
    return redirect.child_by_field_name("destination")
