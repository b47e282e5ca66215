"""The walk over a command's syntax tree: every simple command bash would run, its words expanded, checked against
the rules, and the code it hands to other programs followed.

What the walk sees through:

- lists, pipelines, subshells, ``{ …; }`` groups, conditions and loops, ``$(…)``, backticks and ``<(…)``: the
  commands inside are checked where they stand;
- variables assigned earlier in the command (``d=/; rm -rf $d``), the operations on them (``${x:-default}``,
  ``${x%/*}``, ``${x:0:1}`` …), ``$(echo /)``, ``for`` loops over literal values (the body is checked once per
  distinct value), ``cd`` to a folder the command line names (relative targets are then taken from there; a
  subshell's ``cd`` ends with it);
- what a pipeline stage writes to the next one: a download (through any stages), or literal text (``echo``,
  ``printf``, ``cat`` of a here-document);
- redirections: onto a disk device (refused), here-strings and here-documents (they feed stdin);
- code handed to a shell (``sh -c``, ``eval``, ``su -c``, ``alias``, ``trap``, ``watch``, ``find -exec``, text fed
  to its stdin) is checked as a command of its own, a few levels deep; in the code of other interpreters
  (``python3 -c``, ``perl -e`` …), every string literal is;
- downloads that reach a shell or an interpreter, as code, as a script file written earlier in the command, or as
  the command itself, are refused; so is a function that starts itself twice (a fork bomb).

It raises ``rules.Refused``. What it cannot know (an unset variable, ``$(date)``) stays unknown and is never refused:
the sandbox is the boundary, this is the first line. The work is bounded (``budget``; brace expansion by
``braces.MAX_BRACE_WORDS``; nesting by Python's recursion limit): a walk that gives up leaves the command in doubt.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import fallback, rules, syntax
from .braces import BraceLimit
from .budget import Budget, OutOfSteps
from .expand import Expander, command_name
from .programs import (
    CODE_BUILTINS,
    DOWNLOADERS,
    Language,
    builtin_scripts,
    code_source,
    download_targets,
    find_line,
    language,
    program,
    unwrap,
)
from .rules import Refused, runs_download
from .words import HOME, SPLIT, UNKNOWN, Arg, plain, words

if TYPE_CHECKING:
    from .syntax import Node

__all__ = ["DOUBT", "TOO_COMPLEX", "check"]

DOUBT = "the command could not be read as bash (unbalanced quotes or brackets?)"
TOO_COMPLEX = "the command is too long or too intricate to check before it runs"
_MAX_DEPTH = 4
"""How deep code handed to a shell is followed (``sh -c "eval 'bash -c …'"``)."""
_OUTPUT_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_LITERAL_IN_CODE = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"|`([^`]*)`")


@dataclass(frozen=True, slots=True)
class _Stdin:
    """What a command reads on its standard input, as far as the command line tells."""

    downloaded: bool = False
    literal: str | None = None


@dataclass(frozen=True, slots=True)
class _Ran:
    """A simple command as it runs: its words (wrappers looked through) and its stdin."""

    args: list[Arg]
    stdin: _Stdin


_TOO_MUCH = (OutOfSteps, BraceLimit, RecursionError)
"""How a walk gives up on a command built to be expensive: loops in loops, huge brace expansions, deep nesting."""


def check(source: str) -> str | None:
    """Checks ``source``: raises ``Refused``, or returns why it is in doubt (it could not be read), or None.

    A walk that gives up (``_TOO_MUCH``) leaves the command in doubt after the fallback, which is linear, has read
    it: a refusal found there still stands.
    """
    try:
        return _Walk(0, {}, set(), Budget()).check(source)
    except _TOO_MUCH:
        pass
    with contextlib.suppress(*_TOO_MUCH):
        _Walk(0, {}, set(), Budget()).fallback(source)
    return TOO_COMPLEX


class _Walk:
    def __init__(
        self, depth: int, variables: dict[str, Arg], downloads: set[str], budget: Budget, cwd: str | None = None
    ):
        self.depth = depth
        self.variables = variables
        self.downloads = downloads
        """Files a downloader wrote earlier in the command (``curl -o x.sh``)."""
        self.budget = budget
        self.words = Expander(variables, budget)
        self.cwd = cwd
        """Where the command went (``cd /``), when the command line tells; None: the session's folder, or unknown."""

    def check(self, source: str) -> str | None:
        if not source.strip():
            return None
        self.budget.spend(len(source) // 64 + 1)
        root = syntax.parse(source)
        if not root.has_error:
            self._visit(root, None)
            return None
        self.fallback(source)
        return DOUBT

    def fallback(self, source: str) -> None:
        """Checks the simple commands the fallback reads in ``source`` (text the grammar rejects)."""
        for lexed in fallback.commands(source):
            for target in lexed.outputs:
                reason = rules.written(target)
                if reason is not None:
                    raise Refused(reason)
            try:
                expanded = fallback.expand(lexed.words)
            except BraceLimit:
                continue  # this command cannot be checked; the others still can
            self._simple(expanded, _Stdin())

    def _nested(self, script: str) -> None:
        """Code handed to a shell: checked as a command of its own (depth-bounded)."""
        if self.depth < _MAX_DEPTH and UNKNOWN not in script:
            _Walk(self.depth + 1, dict(self.variables), set(self.downloads), self.budget, self.cwd).check(script)

    def _run_code(self, lang: Language, code: str) -> None:
        """Code in ``lang``: a shell's is checked as a command; in another language, each string literal is."""
        if lang == "shell":
            self._nested(code)
            return
        for match in _LITERAL_IN_CODE.finditer(code):
            literal = next((part for part in match.groups() if part), "")
            if literal.strip():
                self._nested(literal)

    # -- the tree --

    def _visit(self, node: Node, stdin: _Stdin | None) -> _Ran | None:
        """Checks what ``node`` runs; returns the simple command when ``node`` is one (for the next pipeline stage)."""
        self.budget.spend()
        kind = node.type
        if kind == "command":
            return self._statement(node, [], stdin)
        if kind == "redirected_statement":
            return self._statement(node.child_by_field_name("body"), node.children_by_field_name("redirect"), stdin)
        if kind == "pipeline":
            self._pipeline(node, stdin)
        elif kind == "variable_assignment":
            self._assign(node)
        elif kind == "declaration_command":
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self._assign(child)
        elif kind == "unset_command":
            for child in node.named_children:
                self.variables.pop(syntax.text(child), None)
        elif kind == "function_definition":
            self._function(node)
        elif kind == "for_statement":
            self._for(node)
        elif kind == "subshell":
            cwd = self.cwd
            for child in node.named_children:
                self._visit(child, stdin)
            self.cwd = cwd
        else:
            passed = stdin if kind == "compound_statement" else None
            for child in node.named_children:
                self._visit(child, passed)
        return None

    def _apart(self, node: Node, stdin: _Stdin | None) -> _Ran | None:
        """``node`` run in a subshell (a pipeline stage, ``$(…)``, a function's body): a ``cd`` there does not
        outlast it."""
        cwd = self.cwd
        try:
            return self._visit(node, stdin)
        finally:
            self.cwd = cwd

    def _statement(self, body: Node | None, outer: list[Node], stdin: _Stdin | None) -> _Ran | None:
        """A command or another statement, with its redirections (and what the grammar put inside them)."""
        command = body if body is not None and body.type == "command" else None
        parts = syntax.redirections([*(syntax.redirects(command) if command else []), *outer])
        fed, outputs = self._redirects(parts.redirects)
        for word in parts.words:
            self._substitutions(word)
        ran: _Ran | None = None
        if command is not None:
            for child in command.named_children:
                if not child.type.endswith("_redirect"):
                    self._substitutions(child)  # what runs inside the words: $(…), <(…)
            ran = self._command(command, parts.words, fed or stdin or _Stdin(), outputs)
        elif body is not None:
            self._visit(body, fed or stdin)
        if not parts.piped and not parts.after:
            return ran
        if command is not None:
            output = self._output(command, ran, stdin)
        else:  # ``ls && cat <<EOF | sh``: the here-document is taken to be passed on, as ``cat`` does
            downloaded = (fed is not None and fed.downloaded) or (body is not None and self.words.downloads_in(body))
            output = _Stdin(downloaded, fed.literal if fed is not None else None)
        for pipeline in parts.piped:
            self._pipeline(pipeline, output)
        for statement in parts.after:
            self._visit(statement, None)
        return None

    def _pipeline(self, node: Node, stdin: _Stdin | None) -> None:
        for stage in node.named_children:
            ran = self._apart(stage, stdin)
            stdin = self._output(stage, ran, stdin)

    def _output(self, stage: Node, ran: _Ran | None, stdin: _Stdin | None) -> _Stdin:
        """What a pipeline stage writes to the next one, as far as it can be told."""
        downloaded = (stdin is not None and stdin.downloaded) or self.words.downloads_in(stage)
        if ran is None or not ran.args:
            return _Stdin(downloaded)
        name = program(ran.args[0].text)
        literal: str | None = None
        if name in ("echo", "printf"):
            said = [a.text for a in ran.args[1:] if not (name == "echo" and re.fullmatch(r"-[neE]+", a.text))]
            literal = " ".join(said)
        elif name == "cat" and len(ran.args) == 1:
            literal = ran.stdin.literal
            downloaded = downloaded or ran.stdin.downloaded
        return _Stdin(downloaded or name in DOWNLOADERS, literal)

    def _assign(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None:
            return
        self._substitutions(node)
        arg = self.words.value(value) if value is not None else Arg("")
        self.variables[syntax.text(name)] = Arg(arg.text.replace(SPLIT, " "), arg.downloaded)

    def _function(self, node: Node) -> None:
        """A function definition: refused when the body starts the function twice, in a pipeline or in the
        background (a fork bomb); otherwise its body is checked where it is defined."""
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name_node is None or body is None:
            return
        name = syntax.text(name_node)
        calls = 0
        spawned = False
        pending = [(child, False) for child in body.children]  # each node, and whether it is inside a pipeline
        while pending:
            current, piped = pending.pop()
            self.budget.spend()
            if current.type == "&" and not current.is_named:
                spawned = True
            elif current.type == "command" and command_name(current) == name:
                calls += 1
                spawned = spawned or piped
            pending.extend((child, piped or current.type == "pipeline") for child in current.children)
        if calls >= 2 and spawned:
            raise rules.fork_bomb(name)
        self._apart(body, None)

    def _for(self, node: Node) -> None:
        """``for d in / /usr; do rm -rf "$d"; done``: the body is checked once for each distinct value."""
        variable = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        value_nodes = node.children_by_field_name("value")
        values = words(self.words.value(v) for v in value_nodes)
        for value_node in value_nodes:
            self._substitutions(value_node)
        if variable is None or body is None:
            return
        name = syntax.text(variable)
        for value in dict.fromkeys(values) or [Arg(UNKNOWN)]:
            self.variables[name] = value
            self._visit(body, None)
        self.variables.pop(name, None)

    # -- simple commands --

    def _command(self, node: Node, more_words: list[Node], stdin: _Stdin, outputs: list[str]) -> _Ran:
        args = self._simple(self.words.command_words(node, more_words), stdin)
        if args and program(args[0].text) in DOWNLOADERS:
            self.downloads.update(posixpath.normpath(target) for target in outputs if target)
        return _Ran(args, stdin)

    def _substitutions(self, node: Node) -> None:
        """Checks the commands that run inside a word or redirection: ``$(…)``, backticks, ``<(…)``."""
        pending = [node]
        while pending:
            current = pending.pop()
            self.budget.spend()
            if current.type in ("command_substitution", "process_substitution"):
                for inner in current.named_children:
                    self._apart(inner, None)
            else:
                pending.extend(reversed(current.named_children))

    def _redirects(self, redirects: list[Node]) -> tuple[_Stdin | None, list[str]]:
        """Refuses writes onto a disk device; returns what the redirections feed to stdin (None: nothing) and the
        files they write."""
        fed: _Stdin | None = None
        outputs: list[str] = []
        for redirect in redirects:
            if redirect.type == "file_redirect":
                operator = next((c.type for c in redirect.children if not c.is_named), "")
                destination = syntax.target(redirect)
                if destination is None:
                    continue
                self._substitutions(destination)
                targets = [arg.text for arg in words([self.words.value(destination)])]  # bash: one word, or an error
                if operator in _OUTPUT_REDIRECTS:
                    reason = next(filter(None, map(rules.written, targets)), None)
                    if reason is not None:
                        raise Refused(reason)
                    outputs.extend(targets)
                elif operator == "<" and any(posixpath.normpath(t or ".") in self.downloads for t in targets):
                    fed = _Stdin(downloaded=True)
            elif redirect.type == "herestring_redirect":
                value = self.words.value(redirect.named_children[-1]) if redirect.named_children else Arg("")
                fed = _Stdin(value.downloaded or self.words.downloads_in(redirect), plain(value.text))
                self._substitutions(redirect)
            elif redirect.type == "heredoc_redirect":
                body = next((c for c in redirect.named_children if c.type == "heredoc_body"), None)
                fed = _Stdin(body is not None and self.words.downloads_in(body), syntax.text(body))
                if body is not None:
                    self._substitutions(body)
        return fed, outputs

    # -- what a simple command runs --

    def _simple(self, expanded: list[Arg], stdin: _Stdin) -> list[Arg]:
        """Checks one simple command (wrappers looked through); returns its words as they run."""
        args, xargs = unwrap(expanded)
        if not args:
            return args
        if xargs is not None and stdin.literal is not None:
            args = xargs.command(args, stdin.literal)
        name = program(args[0].text)
        texts = [a.text for a in args[1:]]
        reason = rules.simple_command(name, texts, self.cwd)
        if reason is not None:
            raise Refused(reason)
        if name in ("cd", "pushd"):
            self.cwd = self._went_to(texts)
        if name == "find":
            for inner in find_line(texts).executes:
                self._simple([Arg(t) for t in inner], _Stdin())
        elif name in DOWNLOADERS:
            self.downloads.update(download_targets(name, texts))
        self._code(name, args, stdin)
        return args

    def _went_to(self, texts: list[str]) -> str | None:
        """Where ``cd`` goes, when the command line tells."""
        operands = [text for text in texts if not (text.startswith("-") and len(text) > 1)]
        target = operands[0] if operands else HOME
        if UNKNOWN in target or target == "-":
            return None
        if target.startswith(HOME):
            return target
        if target.startswith("/"):
            return posixpath.normpath(target)
        return posixpath.join(self.cwd, target) if self.cwd is not None else None

    def _code(self, name: str, args: list[Arg], stdin: _Stdin) -> None:
        """Code handed to a shell or an interpreter, and downloads run."""
        first, rest = args[0], args[1:]
        if first.downloaded and not first.known:
            raise runs_download("running the output of a download as a command")
        path = posixpath.normpath(first.text) if first.known else ""
        if path and path in self.downloads:
            raise runs_download(f"running {path}, downloaded earlier in this command,")
        if name in CODE_BUILTINS:
            if any(a.downloaded for a in rest):
                raise runs_download(f"{name} of downloaded text")
            texts = [a.text for a in rest]
            if name in ("source", ".") and texts and posixpath.normpath(texts[0] or ".") in self.downloads:
                raise runs_download(f"{name} of a downloaded script")
            for script in builtin_scripts(name, texts):
                self._nested(script)
            return
        lang = language(name)
        if lang is None:
            return
        inline, operand, reads_stdin = code_source(lang, rest)
        if inline is not None:
            if inline.downloaded:
                raise runs_download(f"{name} running downloaded code")
            self._run_code(lang, inline.text)
        elif operand is not None and (
            operand.downloaded or (operand.known and posixpath.normpath(operand.text) in self.downloads)
        ):
            raise runs_download(f"{name} running a downloaded script")
        if reads_stdin:
            if stdin.downloaded:
                raise runs_download(f"piping a download into {name}")
            if stdin.literal is not None:
                self._run_code(lang, stdin.literal)
