"""Word nodes of the syntax tree expanded as bash will expand them, in the context of the command line: the grammar's
nodes read with ``words``' text functions, the variables assigned earlier in the command (``d=/; rm -rf $d``), the
operations on them (``${x:-default}``, ``${x%/*}`` …), ``$HOME``, ``${IFS}``, ``$(echo /)``; and whether a word
carries downloaded content (``$(curl …)``, a variable that holds one).

An ``Expander`` reads; it runs nothing and refuses nothing (the walk does), and what it cannot know is ``UNKNOWN``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import syntax
from .budget import Budget
from .programs import DOWNLOADERS, program
from .words import (
    HOME,
    SPLIT,
    UNKNOWN,
    Arg,
    ansi_c,
    home_at_start,
    parameter_operation,
    protect,
    unescape_bare,
    unescape_double,
    words,
)

if TYPE_CHECKING:
    from .syntax import Node

__all__ = ["Expander", "command_name"]


class Expander:
    """Expands word nodes with ``variables`` (shared with the walk, which assigns them), spending ``budget``."""

    def __init__(self, variables: dict[str, Arg], budget: Budget):
        self.variables = variables
        self.budget = budget

    def command_words(self, node: Node, more_words: Sequence[Node] = ()) -> list[Arg]:
        """The words of a ``command`` node (its assignments and redirections left out), and ``more_words``."""
        raw: list[Arg] = []
        for child in node.named_children:
            if child.type == "command_name":
                raw.extend(self.value(grandchild) for grandchild in child.named_children)
            elif child.type != "variable_assignment" and not child.type.endswith("_redirect"):
                raw.append(self.value(child))
        raw.extend(self.value(word) for word in more_words)
        expanded = words(raw)
        self.budget.spend(len(expanded))
        return expanded

    def value(self, node: Node) -> Arg:
        """One word node expanded to text (with the stand-ins), and whether it carries downloaded content."""
        self.budget.spend()
        kind = node.type
        if kind in ("word", "number"):
            return Arg(home_at_start(unescape_bare(syntax.text(node))))
        if kind == "brace_expression":  # {1..3}: expanded with the word it is part of
            return Arg(syntax.text(node))
        if kind == "raw_string":
            return Arg(protect(syntax.text(node)[1:-1]))
        if kind == "ansi_c_string":
            return Arg(protect(ansi_c(syntax.text(node))))
        if kind in ("string", "translated_string"):
            return self._string(node)
        if kind in ("simple_expansion", "expansion"):
            return self._expansion(node, quoted=False)
        if kind == "concatenation":
            parts = [self.value(child) for child in node.named_children]
            return Arg("".join(p.text for p in parts), any(p.downloaded for p in parts))
        if kind == "command_substitution":
            return self._substitution(node)
        return Arg(UNKNOWN, self.downloads_in(node))

    def _string(self, node: Node) -> Arg:
        """A ``"…"`` string: its literal text between the expansions it holds."""
        pieces: list[str] = []
        downloaded = False
        source = node.text or b""
        base = node.start_byte
        cursor = base + (2 if source.startswith(b"$") else 1)
        for child in node.named_children:
            gap = source[cursor - base : child.start_byte - base].decode("utf-8", "replace")
            pieces.append(protect(unescape_double(gap)))
            if child.type == "string_content":
                pieces.append(protect(unescape_double(syntax.text(child))))
            else:
                quoted = child.type in ("simple_expansion", "expansion")
                value = self._expansion(child, quoted=True) if quoted else self.value(child)
                pieces.append(protect(value.text.replace(SPLIT, " ")))
                downloaded = downloaded or value.downloaded
            cursor = child.end_byte
        tail = source[cursor - base : len(source) - 1].decode("utf-8", "replace")
        pieces.append(protect(unescape_double(tail)))
        return Arg("".join(pieces), downloaded)

    def _expansion(self, node: Node, *, quoted: bool) -> Arg:
        """``$x`` / ``${x…}``: a variable assigned earlier in the command, ``$HOME``, ``${IFS}``, and the operations
        on them (``${x:-default}``, ``${x:+alternative}``, ``${x%pattern}``, ``${x:0:1}`` …); unknown otherwise."""
        children = node.children
        fields = [node.field_name_for_child(index) for index in range(len(children))]
        at = next((i for i, c in enumerate(children) if c.type in ("variable_name", "special_variable_name")), None)
        if at is None or "operator" in fields[:at]:  # ${#x}, ${!x}, ${a[0]}
            return Arg(UNKNOWN, self.downloads_in(node))
        name = syntax.text(children[at])
        value = self.variables.get(name) or {"HOME": Arg(HOME), "IFS": Arg(" " if quoted else SPLIT)}.get(name)
        operator = next((syntax.text(c) for c, f in zip(children, fields, strict=True) if f == "operator"), None)
        if operator is not None:
            operands = [c for c, f in zip(children[at + 1 :], fields[at + 1 :], strict=True) if c.is_named and not f]
            value = self._operated(value, operator, operands)
        if value is None:
            return Arg(UNKNOWN)
        if not quoted and value.known:
            return Arg(re.sub(r"[ \t\n]+", SPLIT, value.text), value.downloaded)
        return value

    def _operated(self, value: Arg | None, operator: str, operands: list[Node]) -> Arg | None:
        """``${x<operator>operands}`` for the value of ``x`` (None: not assigned in the command)."""
        if operator in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            given = value is not None and (not operator.startswith(":") or value.text != "")
            if operator.endswith(("-", "=")):
                return value if given else self._joined(operands)
            if operator.endswith("+"):
                return (self._joined(operands) if given else Arg("")) if value is not None else None
            return value
        if value is None:
            return None
        patterns = [self._pattern(operand) for operand in operands]
        return Arg(parameter_operation(value.text, operator, patterns), value.downloaded)

    def _joined(self, nodes: list[Node]) -> Arg:
        parts = [self.value(node) for node in nodes]
        return Arg("".join(p.text for p in parts), any(p.downloaded for p in parts))

    def _pattern(self, node: Node) -> str:
        """An operand of ``${x%pattern}``, ``${x/pattern/text}``: the grammar leaves a pattern as written."""
        if node.type != "regex":
            return self.value(node).text
        written = syntax.text(node)
        return UNKNOWN if any(char in written for char in "$`\"'\\") else written

    def _substitution(self, node: Node) -> Arg:
        """``$(echo /)`` is ``/``; any other substitution is unknown (and maybe downloaded)."""
        commands = node.named_children
        if len(commands) == 1 and commands[0].type == "command":
            said = self.command_words(commands[0])
            if said and program(said[0].text) in ("echo", "printf") and all(a.known for a in said):
                return Arg(SPLIT.join(a.text for a in said[1:]))
        return Arg(UNKNOWN, self.downloads_in(node))

    def downloads_in(self, node: Node) -> bool:
        """Whether a download runs anywhere inside ``node`` (a substitution, a stage, a here-string)."""
        for inner in syntax.descendants(node):
            self.budget.spend()
            if inner.type == "command" and program(command_name(inner)) in DOWNLOADERS:
                return True
            if inner.type in ("simple_expansion", "expansion"):
                name = next((c for c in inner.named_children if c.type == "variable_name"), None)
                value = self.variables.get(syntax.text(name)) if name is not None else None
                if value is not None and value.downloaded:
                    return True
        return False


def command_name(node: Node) -> str:
    """The program a ``command`` node names, as written (quotes and backslashes removed)."""
    name = node.child_by_field_name("name")
    return unescape_bare(syntax.text(name)).strip("'\"") if name is not None else ""
