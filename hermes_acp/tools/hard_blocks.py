"""Commands refused in every mode, without asking: the few that wreck a machine, run code from the network, or are
never needed in a coding session. ``check_command(command)`` reads the command as bash will and says whether it is
refused (and why), or cannot be read at all (then it is asked, never passed).

The command is parsed by tree-sitter's bash grammar, so line continuations, comments, quoting, ``;`` / ``&&`` /
``||`` / newlines, pipelines, subshells, ``{ …; }`` groups, functions, loops, ``$(…)`` and backticks are seen as
bash sees them. Each word is then expanded the way it matters here: quotes and backslashes removed, ``$'…'``
decoded, brace expansion (``/{bin,usr}``), ``~`` / ``$HOME``, variables assigned earlier in the same command
(``d=/; rm -rf $d``), ``${IFS}`` splitting, ``$(echo /)``. Wrappers (``sudo``, ``env``, ``nice``, ``timeout``,
``xargs`` …) are looked through, and code handed to an interpreter is followed: ``sh -c``, ``eval``, ``su -c``,
``alias``, ``trap``, ``find -exec``, here-strings, here-documents and literal text piped into any shell are checked
as commands themselves; in the code of other interpreters (``python* -c``, ``perl -e``, ``node -e``, ``ruby``, ``php``,
``awk``) every string literal is checked as a command (``os.system("rm -rf /")``).

Refused:

- ``rm`` recursive (any spelling: ``-rf``, ``-r -f``, ``-Rf``, ``--recursive``, ``--recur``) on ``/``, ``/*``, a
  glob or brace expansion at the root, a top-level system folder, ``~`` or ``$HOME``; ``--no-preserve-root``;
- ``find`` on those with ``-delete`` or ``-exec rm``; ``chmod`` / ``chown`` / ``chgrp`` recursive on them;
- downloads executed: ``curl … | sh`` (through any stages, into any interpreter), ``bash <(curl …)``,
  ``sh -c "$(curl …)"``, ``eval "$(wget …)"``, ``python3 <<< "$(curl …)"``, ``$(curl …)`` as a command, and
  ``curl -o x.sh …; bash x.sh`` (a downloaded file run later in the same command);
- writes onto a disk device: ``dd of=``, ``tee``, ``cp``, ``shred``, ``blkdiscard`` or any output redirection
  (``cat … > /dev/sda``) onto ``/dev/sd*``, ``/dev/nvme*``, ``/dev/disk/by-id/…`` and the like;
- ``mkfs*``, ``mke2fs``, ``mkswap``, ``wipefs``; ``shutdown``, ``reboot``, ``poweroff``, ``halt`` (also through
  ``systemctl``, ``loginctl``, ``init 0|6``);
- fork bombs: a function that starts itself twice in a pipeline or in the background (``:(){ :|:& };:`` under any
  name).

When the parser reports an error (unbalanced quotes, an unfinished here-document), the text is split as words the
way ``shlex`` does, with brace expansion, and checked again: a refusal found there stands; otherwise the command is
"in doubt" and must be asked. The same words inside quotes or file names (``echo "rm -rf /"``, ``grep reboot log``)
are not refused.

This is the first line, not the boundary: commands run in the sandbox (``sandbox``). It does no I/O and knows nothing
about modes or approval. The grammar is loaded on the first check (about 40 ms; callers may do that off the loop).
"""

from __future__ import annotations

import codecs
import functools
import itertools
import os
import posixpath
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["CommandCheck", "check_command", "hard_block_reason", "parser_loaded"]

_UNKNOWN = "\x00"
"""Stands in an expanded word for what cannot be known before the command runs (``$(date)``, ``$UNSET``)."""
_HOME = "\x01"
"""Stands for the home folder (``~``, ``$HOME``) at the start of an expanded word."""
_SPLIT = "\x02"
"""Where an unquoted expansion splits a word in two (``rm${IFS}-rf``)."""
_QUOTED = str.maketrans({"{": "\ue000", ",": "\ue001", "}": "\ue002"})
_UNQUOTED = str.maketrans({"\ue000": "{", "\ue001": ",", "\ue002": "}"})
"""Brace characters inside quotes are protected from brace expansion by these private-use stand-ins."""

_MAX_DEPTH = 4
_MAX_BRACE_WORDS = 256
_MAX_LOOP_VALUES = 16
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "posh"})
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "lwp-download", "lwp-request", "http", "https", "xh"})
_INTERPRETER = re.compile(
    r"(?:python|pypy)[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|deno|bun|php[0-9.]*|lua(?:jit|[0-9.]*)|"
    r"rscript|tclsh[0-9.]*|osascript|pwsh|[gmn]?awk"
)
_INLINE_FLAGS = {
    "python": ("-c",),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "node": ("-e", "--eval", "-p", "--print"),
    "php": ("-r",),
    "lua": ("-e",),
    "osascript": ("-e",),
    "pwsh": ("-c", "-command"),
}
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff"})
_SYSTEMCTL_POWER = frozenset({"poweroff", "reboot", "halt", "kexec", "soft-reboot"})
_FORMATTERS = frozenset({"mke2fs", "mkswap", "wipefs", "mkdosfs", "mkntfs", "mkexfatfs", "mkisofs"})
_SYSTEM_DIRS = frozenset(
    {
        "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/root",
        "/run", "/sbin", "/srv", "/sys", "/usr", "/usr/local", "/var", "/snap", "/nix",
        "/Applications", "/Library", "/System", "/Users", "/private",
    }
)  # fmt: skip
_DISK = re.compile(
    r"^/dev/(?:(?:sd|hd|vd|xvd)[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|md\d|dm-\d|sr\d|loop\d|nbd\d|zd\d|"
    r"mapper/|disk/|block/|mem$|kmem$|port$|root$)"
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Wrappers that run the rest of the line as a command, and their options that take a value.
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "--unset", "--chdir"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "--class", "--classdata"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "chroot": frozenset({"--userspec", "--groups"}),
    "setsid": frozenset(),
    "unbuffer": frozenset(),
    "xargs": frozenset({"-I", "-i", "-n", "-P", "-L", "-l", "-d", "-E", "-e", "-s", "-a", "--arg-file", "--delimiter"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "flock": frozenset({"-w", "-E", "--timeout"}),
    "firejail": frozenset(),
    "busybox": frozenset(),
    "caffeinate": frozenset(),
    "strace": frozenset({"-o", "-e", "-p"}),
}
_WRAPPER_POSITIONALS = {"timeout": 1, "chroot": 1, "flock": 1}
"""Wrappers whose first positional arguments are theirs (``timeout 10 cmd``, ``chroot /srv cmd``)."""
_OUTPUT_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})


@dataclass(frozen=True, slots=True)
class CommandCheck:
    """What the hard blocks make of a command: refused (``blocked``), unreadable (``doubt``: ask), or neither."""

    blocked: str | None = None
    doubt: str | None = None


class _Refused(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Arg:
    """One expanded word: its text (with the stand-ins above) and whether it carries downloaded content."""

    text: str
    downloaded: bool = False

    @property
    def known(self) -> bool:
        return _UNKNOWN not in self.text


@dataclass(slots=True)
class _Stdin:
    """What a command reads on its standard input, as far as the command line tells."""

    downloaded: bool = False
    literal: str | None = None


@dataclass
class _Simple:
    """One simple command after expansion: its words and what feeds its stdin."""

    args: list[_Arg]
    stdin: _Stdin = field(default_factory=_Stdin)
    via_xargs: bool = False

    @property
    def program(self) -> str:
        return _program(self.args[0].text) if self.args else ""

    @property
    def texts(self) -> list[str]:
        return [a.text for a in self.args]


# -- the parser --------------------------------------------------------------------------------------------------


@functools.cache
def _parser() -> Parser:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parser_loaded() -> bool:
    """Whether the grammar is loaded already (a caller on an event loop can load it in a worker thread first)."""
    return _parser.cache_info().currsize > 0


def check_command(command: str) -> CommandCheck:
    """Whether ``command`` is refused in every mode (and why), or cannot be read and must be asked."""
    try:
        return _Checker(0).check(command)
    except _Refused as refused:
        return CommandCheck(blocked=refused.reason)


def hard_block_reason(command: str) -> str | None:
    """Why ``command`` is refused in every mode, or None when it is not."""
    return check_command(command).blocked


# -- words -----------------------------------------------------------------------------------------------------------


def _program(word: str) -> str:
    return os.path.basename(word.rstrip("/")) if word else ""


def _unescape_bare(text: str) -> str:
    """An unquoted word as the shell reads it: ``\\x`` is ``x``, a backslash-newline disappears."""
    out: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            following = next(chars, "")
            if following != "\n":
                out.append(following.translate(_QUOTED))
        else:
            out.append(char)
    return "".join(out)


def _unescape_double(text: str) -> str:
    """The literal part of a ``"…"`` string: a backslash escapes only ``$ ` " \\`` and newline."""
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _ansi_c(text: str) -> str:
    body = text[2:-1] if text.startswith("$'") and text.endswith("'") else text
    try:
        return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return _UNKNOWN


def _brace_expand(text: str) -> list[str]:
    """Bash brace expansion of one word (``a{b,c}d`` → ``abd acd``, nested, ``{1..3}``), bounded in size."""
    match = _innermost_brace(text)
    if match is None:
        return [text]
    start, end, parts = match
    out: list[str] = []
    for part in parts:
        out.extend(_brace_expand(text[:start] + part + text[end + 1 :]))
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


def _words(args: Iterable[_Arg]) -> list[_Arg]:
    """Brace expansion and splitting at ``_SPLIT``, quoting stand-ins undone."""
    out: list[_Arg] = []
    for arg in args:
        for expanded in _brace_expand(arg.text):
            for piece in expanded.split(_SPLIT):
                if piece or _SPLIT not in expanded:
                    out.append(_Arg(piece.translate(_UNQUOTED), arg.downloaded))
    return out


# -- what a target is ------------------------------------------------------------------------------------------------


def _wiped(target: str) -> str | None:
    """What a recursive deletion (or chmod) of ``target`` reaches, when that is the root, a system folder or home."""
    if _UNKNOWN in target or not target:
        return None
    if target.startswith(_HOME):
        rest = target[1:]
        stripped = re.sub(r"(?:/+(?:\.|\*|\.\*)?)+$", "", rest)
        if stripped == "":
            return "the home folder"
        return None
    if not target.startswith("/"):
        return None
    path = "/" + target.lstrip("/")
    path = posixpath.normpath(path)
    path = "/" + path.lstrip("/")
    globbed = False
    while path != "/" and re.search(r"/(?:\*|\.\*|\.)$", path):
        path = path.rsplit("/", 1)[0] or "/"
        globbed = True
    if path == "/":
        return "everything under the root folder" if globbed else "the root folder"
    first = path.split("/")[1]
    if path.count("/") == 1 and re.search(r"[*?\[]", first):
        return f"every top-level folder matching {path}"
    if path in _SYSTEM_DIRS:
        return f"the system folder {path}"
    return None


def _device(target: str) -> str | None:
    if _UNKNOWN in target or not target.startswith("/"):
        return None
    path = posixpath.normpath("/" + target.lstrip("/"))
    return path if _DISK.match(path) else None


# -- the checker -----------------------------------------------------------------------------------------------------


class _Checker:
    def __init__(self, depth: int):
        self.depth = depth
        self.variables: dict[str, _Arg] = {}
        self.downloads: set[str] = set()
        """Files a downloader wrote earlier in the command (``curl -o x.sh``)."""

    # -- entry points --

    def check(self, source: str) -> CommandCheck:
        if not source.strip():
            return CommandCheck()
        tree = _parser().parse(source.encode("utf-8", "surrogatepass"))
        root = tree.root_node
        if root.has_error:
            self._lexical(source)
            return CommandCheck(doubt="the command could not be read as bash (unbalanced quotes or brackets?)")
        self._visit(root, None)
        return CommandCheck()

    def _nested(self, script: str) -> None:
        """Code handed to a shell: checked as a command of its own (depth-bounded)."""
        if self.depth >= _MAX_DEPTH or _UNKNOWN in script:
            return
        inner = _Checker(self.depth + 1)
        inner.variables = dict(self.variables)
        inner.downloads = set(self.downloads)
        result = inner.check(script)
        if result.blocked is not None:
            raise _Refused(result.blocked)

    def _literals(self, code: str) -> None:
        """Code of another language: each string literal in it is checked as a command."""
        for literal in re.findall(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"|`([^`]*)`", code):
            text = next((part for part in literal if part), "")
            if text.strip():
                self._nested(text)

    def _lexical(self, source: str) -> None:
        """The fallback for text the grammar rejects: shlex words, brace-expanded, split at operators."""
        text = source.replace("\\\n", "")
        try:
            lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
            lexer.whitespace_split = True
            tokens = list(lexer)
        except ValueError:
            tokens = re.findall(r"[;&|()<>]+|[^\s;&|()<>]+", text)
        current: list[_Arg] = []
        redirect = False
        for token in [*tokens, ";"]:
            if redirect and not set(token) <= set(";&|()<>\n"):
                device = _device(token)
                if device is not None:
                    raise _Refused(f"writing onto the disk device {device} destroys its data")
                redirect = False
                continue
            if token and set(token) <= set(";&|()<>\n"):
                redirect = ">" in token
                if "<" in token or ">" in token:
                    if current and re.fullmatch(r"\d+", current[-1].text):
                        current.pop()  # a file descriptor number (3>, 2>)
                    continue
                if current:
                    words = [
                        _Arg(re.sub(r"^(?:~[\w.-]*|\$HOME|\$\{HOME\})(?=/|$)", _HOME, a.text)) for a in _words(current)
                    ]
                    self._simple(_Simple(words))
                current = []
            else:
                current.append(_Arg(token))

    # -- the tree --

    def _visit(self, node: Node, stdin: _Stdin | None) -> None:
        kind = node.type
        if kind == "command":
            self._command(node, [], stdin)
        elif kind == "redirected_statement":
            body = node.child_by_field_name("body")
            redirects = node.children_by_field_name("redirect")
            if body is not None and body.type == "command":
                self._command(body, redirects, stdin)
            else:
                fed = self._redirects(redirects, None, stdin)
                if body is not None:
                    self._visit(body, fed)
        elif kind == "pipeline":
            self._pipeline(node)
        elif kind == "variable_assignment":
            self._assign(node)
        elif kind == "declaration_command":
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self._assign(child)
        elif kind == "unset_command":
            for child in node.named_children:
                self.variables.pop(_text(child), None)
        elif kind == "function_definition":
            self._function(node)
        elif kind == "for_statement":
            self._for(node)
        else:
            for child in node.named_children:
                self._visit(child, stdin if kind in ("subshell", "compound_statement") else None)

    def _pipeline(self, node: Node) -> None:
        stdin: _Stdin | None = None
        for stage in node.named_children:
            self._visit(stage, stdin)
            stdin = self._output(stage, stdin)

    def _output(self, stage: Node, stdin: _Stdin | None) -> _Stdin:
        """What a pipeline stage writes to the next one, as far as it can be told."""
        downloaded = bool(stdin and stdin.downloaded) or self._downloads_in(stage)
        command = stage if stage.type == "command" else stage.child_by_field_name("body")
        if command is None or command.type != "command":
            return _Stdin(downloaded=downloaded)
        simple = self._expand(command)
        program = simple.program
        if program in _DOWNLOADERS:
            downloaded = True
        literal: str | None = None
        if program in ("echo", "printf"):
            words = [a.text for a in simple.args[1:] if not (program == "echo" and re.fullmatch(r"-[neE]+", a.text))]
            literal = " ".join(words)
        elif program == "cat" and len(simple.args) == 1:
            fed = self._redirects(_redirects_of(stage), command, stdin)
            literal = fed.literal if fed is not None else None
            downloaded = downloaded or bool(fed and fed.downloaded)
        return _Stdin(downloaded=downloaded, literal=literal)

    def _assign(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None:
            return
        self._visit_substitutions(node)
        arg = self._value(value) if value is not None else _Arg("")
        self.variables[_text(name)] = _Arg(arg.text.replace(_SPLIT, " "), arg.downloaded)

    def _function(self, node: Node) -> None:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name_node is None or body is None:
            return
        name = _text(name_node)
        calls = [n for n in _descendants(body) if n.type == "command" and _command_name(n) == name]
        if len(calls) >= 2 and (_has_token(body, "&") or any(_in_pipeline(call, body) for call in calls)):
            raise _Refused(f"the function {name!r} starts two copies of itself: a fork bomb exhausts the machine")
        self._visit(body, None)

    def _for(self, node: Node) -> None:
        """``for d in / /usr; do rm -rf "$d"; done``: the body is checked once for each literal value."""
        variable = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        values = _words(self._value(v) for v in node.children_by_field_name("value"))
        for word in node.children_by_field_name("value"):
            self._visit_substitutions(word)
        if variable is None or body is None:
            return
        name = _text(variable)
        for value in values[:_MAX_LOOP_VALUES] or [_Arg(_UNKNOWN)]:
            self.variables[name] = value
            self._visit(body, None)
        self.variables.pop(name, None)

    # -- simple commands --

    def _command(self, node: Node, outer_redirects: list[Node], stdin: _Stdin | None) -> None:
        simple = self._expand(node)
        redirects = [*(c for c in node.children if c.type.endswith("_redirect")), *outer_redirects]
        simple.stdin = self._redirects(redirects, node, stdin) or stdin or _Stdin()
        self._visit_substitutions(node)  # what runs inside the words and redirections: $(…), <(…)
        for redirect in outer_redirects:
            self._visit_substitutions(redirect)
        name = node.child_by_field_name("name")
        if simple.args and not simple.args[0].known and name is not None and self._downloads_in(name):
            raise _Refused("running the output of a download as a command runs unreviewed code from the network")
        self._simple(simple)

    def _visit_substitutions(self, node: Node) -> None:
        for child in node.named_children:
            if child.type in ("command_substitution", "process_substitution"):
                for inner in child.named_children:
                    self._visit(inner, None)
            else:
                self._visit_substitutions(child)

    def _expand(self, node: Node) -> _Simple:
        raw: list[_Arg] = []
        for child in node.named_children:
            if child.type == "command_name":
                raw.extend(self._value(grandchild) for grandchild in child.named_children)
            elif child.type != "variable_assignment" and not child.type.endswith("_redirect"):
                raw.append(self._value(child))
        return _Simple(_words(raw))

    def _redirects(self, redirects: Iterable[Node], command: Node | None, stdin: _Stdin | None) -> _Stdin | None:
        """Checks output redirections; returns what the redirections feed to stdin (None: they feed nothing)."""
        fed: _Stdin | None = None
        downloader = command is not None and self._expand(command).program in _DOWNLOADERS
        for redirect in redirects:
            if redirect.type == "file_redirect":
                operator = next((c.type for c in redirect.children if not c.is_named), "")
                destination = redirect.child_by_field_name("destination")
                target = self._value(destination).text if destination is not None else ""
                if operator in _OUTPUT_REDIRECTS:
                    device = _device(target)
                    if device is not None:
                        raise _Refused(f"writing onto the disk device {device} destroys its data")
                    if downloader and target:
                        self.downloads.add(posixpath.normpath(target))
                elif operator == "<" and posixpath.normpath(target or ".") in self.downloads:
                    fed = _Stdin(downloaded=True)
            elif redirect.type == "herestring_redirect":
                value = self._value(redirect.named_children[-1]) if redirect.named_children else _Arg("")
                fed = _Stdin(downloaded=value.downloaded or self._downloads_in(redirect), literal=_plain(value.text))
            elif redirect.type == "heredoc_redirect":
                body = next((c for c in redirect.named_children if c.type == "heredoc_body"), None)
                literal = _text(body) if body is not None else ""
                fed = _Stdin(downloaded=self._downloads_in(redirect), literal=literal)
        return fed

    def _value(self, node: Node) -> _Arg:
        """One word node expanded to text (with the stand-ins), and whether it carries downloaded content."""
        kind = node.type
        if kind in ("word", "number"):
            text = _unescape_bare(_text(node))
            if text.startswith("~"):
                head, slash, rest = text.partition("/")
                if re.fullmatch(r"~[\w.-]*", head):
                    text = _HOME + slash + rest
            return _Arg(text)
        if kind == "raw_string":
            return _Arg(_text(node)[1:-1].translate(_QUOTED))
        if kind == "ansi_c_string":
            return _Arg(_ansi_c(_text(node)).translate(_QUOTED))
        if kind in ("string", "translated_string"):
            return self._string(node)
        if kind in ("simple_expansion", "expansion"):
            return self._expansion(node, quoted=False)
        if kind == "concatenation":
            parts = [self._value(child) for child in node.named_children]
            text = "".join(p.text for p in parts)
            return _Arg(text, any(p.downloaded for p in parts))
        if kind == "command_substitution":
            return self._substitution(node)
        return _Arg(_UNKNOWN, self._downloads_in(node))

    def _string(self, node: Node) -> _Arg:
        pieces: list[str] = []
        downloaded = False
        cursor = node.start_byte + (2 if _text(node).startswith("$") else 1)
        source = node.text or b""
        base = node.start_byte
        for child in node.named_children:
            gap = source[cursor - base : child.start_byte - base].decode("utf-8", "replace")
            pieces.append(_unescape_double(gap).translate(_QUOTED))
            if child.type == "string_content":
                pieces.append(_unescape_double(_text(child)).translate(_QUOTED))
            else:
                value = (
                    self._expansion(child, quoted=True)
                    if child.type in ("simple_expansion", "expansion")
                    else self._value(child)
                )
                pieces.append(value.text.replace(_SPLIT, " ").translate(_QUOTED))
                downloaded = downloaded or value.downloaded
            cursor = child.end_byte
        tail = source[cursor - base : len(source) - 1].decode("utf-8", "replace")
        pieces.append(_unescape_double(tail).translate(_QUOTED))
        return _Arg("".join(pieces), downloaded)

    def _expansion(self, node: Node, *, quoted: bool) -> _Arg:
        name_node = next((c for c in node.named_children if c.type in ("variable_name", "special_variable_name")), None)
        if name_node is None:
            return _Arg(_UNKNOWN, self._downloads_in(node))
        name = _text(name_node)
        operator = node.child_by_field_name("operator")
        value = self.variables.get(name)
        if value is None:
            if name == "HOME":
                value = _Arg(_HOME)
            elif name == "IFS":
                value = _Arg(" " if quoted else _SPLIT)
            elif operator is not None and _text(operator) in (":-", "-", ":=", "="):
                default = [c for c in node.named_children if c != name_node]
                parts = [self._value(c) for c in default]
                value = _Arg("".join(p.text for p in parts), any(p.downloaded for p in parts))
            else:
                return _Arg(_UNKNOWN)
        if not quoted and value.known:
            return _Arg(re.sub(r"[ \t\n]+", _SPLIT, value.text), value.downloaded)
        return value

    def _substitution(self, node: Node) -> _Arg:
        """``$(echo /)`` is ``/``; any other substitution is unknown (and maybe downloaded)."""
        commands = node.named_children
        if len(commands) == 1 and commands[0].type == "command":
            simple = self._expand(commands[0])
            if simple.program in ("echo", "printf") and all(a.known for a in simple.args):
                return _Arg(_SPLIT.join(a.text for a in simple.args[1:]))
        return _Arg(_UNKNOWN, self._downloads_in(node))

    def _downloads_in(self, node: Node) -> bool:
        """Whether a download runs anywhere inside ``node`` (a substitution, a stage, a here-string)."""
        for inner in _descendants(node):
            if inner.type == "command" and _program(_command_name(inner)) in _DOWNLOADERS:
                return True
            if inner.type in ("simple_expansion", "expansion"):
                name = next((c for c in inner.named_children if c.type == "variable_name"), None)
                value = self.variables.get(_text(name)) if name is not None else None
                if value is not None and value.downloaded:
                    return True
        return False

    # -- the rules --

    def _simple(self, simple: _Simple) -> None:
        _unwrap(simple)
        if not simple.args:
            return
        program = simple.program
        args = simple.args[1:]
        texts = [a.text for a in args]
        if program == "rm":
            _rm(texts)
        elif program == "find":
            self._find(texts)
        elif program in ("chmod", "chown", "chgrp"):
            _recursive_owner(program, texts)
        elif program.startswith("mkfs") or program in _FORMATTERS:
            raise _Refused(f"{program} formats a disk")
        elif program in ("dd", "tee", "cp", "shred", "blkdiscard", "install"):
            _device_writer(program, texts)
        elif program in _POWER:
            raise _Refused(f"{program} stops the machine")
        elif program in ("systemctl", "loginctl") and any(t in _SYSTEMCTL_POWER for t in texts):
            raise _Refused(f"{program} power actions stop the machine")
        elif program in ("init", "telinit") and texts[:1] in (["0"], ["6"]):
            raise _Refused(f"{program} {texts[0]} stops the machine")
        elif program in _DOWNLOADERS:
            self._download_target(program, texts)
        self._code(simple, program, args)

    def _code(self, simple: _Simple, program: str, args: list[_Arg]) -> None:
        """Code handed to a shell or an interpreter, and downloaded files run."""
        name = posixpath.normpath(simple.args[0].text) if simple.args[0].known else ""
        if name and name in self.downloads:
            raise _Refused(f"running {name}, downloaded earlier in this command, runs unreviewed code")
        if program in ("eval", "source", ".", "su", "alias", "trap", "watch"):
            self._builtin_code(program, args)
            return
        language = _language(program)
        if language is None:
            return
        inline, operand, reads_stdin = _code_source(language, args)
        if inline is not None:
            if inline.downloaded:
                raise _Refused(f"{program} running downloaded code runs unreviewed code from the network")
            self._run_code(language, inline.text)
        elif operand is not None and (
            operand.downloaded or (operand.known and posixpath.normpath(operand.text) in self.downloads)
        ):
            raise _Refused(f"{program} running a downloaded script runs unreviewed code from the network")
        if reads_stdin:
            if simple.stdin.downloaded:
                raise _Refused(f"piping a download into {program} runs unreviewed code from the network")
            if simple.stdin.literal is not None:
                self._run_code(language, simple.stdin.literal)

    def _run_code(self, language: str, code: str) -> None:
        if language == "shell":
            self._nested(code)
        else:
            self._literals(code)

    def _builtin_code(self, program: str, args: list[_Arg]) -> None:
        if any(a.downloaded for a in args):
            raise _Refused(f"{program} of downloaded text runs unreviewed code from the network")
        texts = [a.text for a in args]
        if program == "eval":
            self._nested(" ".join(texts))
        elif program == "watch":
            rest = texts
            while rest and rest[0].startswith("-"):
                rest = rest[2:] if rest[0] in ("-n", "--interval") else rest[1:]
            self._nested(" ".join(rest))
        elif program in ("source", "."):
            if texts and posixpath.normpath(texts[0] or ".") in self.downloads:
                raise _Refused(f"{program} of a downloaded script runs unreviewed code from the network")
        elif program == "su":
            for flag, script in itertools.pairwise(texts):
                if flag in ("-c", "--command"):
                    self._nested(script)
        elif program == "alias":
            for text in texts:
                _, equals, value = text.partition("=")
                if equals:
                    self._nested(value)
        elif program == "trap" and texts:
            self._nested(texts[0])

    def _find(self, texts: list[str]) -> None:
        paths = list(itertools.takewhile(lambda t: not t.startswith(("-", "(", "!")), texts))
        expression = texts[len(paths) :]
        reach = next((w for w in map(_wiped, paths) if w is not None), None)
        index = 0
        while index < len(expression):
            word = expression[index]
            if word in ("-exec", "-execdir", "-ok", "-okdir"):
                inner = list(itertools.takewhile(lambda t: t not in (";", "+"), expression[index + 1 :]))
                if reach is not None and inner and _program(inner[0]) in ("rm", "shred", "unlink", "rmdir"):
                    raise _Refused(f"find on {reach} with -exec {_program(inner[0])} destroys it")
                if inner:
                    self._simple(_Simple([_Arg(t) for t in inner]))
                index += len(inner) + 1
            elif word == "-delete" and reach is not None:
                raise _Refused(f"find on {reach} with -delete destroys it")
            index += 1

    def _download_target(self, program: str, texts: list[str]) -> None:
        """Remember where a download is written: curl ``-o f`` / ``-O`` (the URL's name), wget ``-O f`` or, by
        default, the URL's name."""
        urls = [t for t in texts if re.match(r"^[a-z][a-z0-9+.-]*://", t)]
        named = program == "wget"
        written: list[str] = []
        for index, text in enumerate(texts):
            value = texts[index + 1] if index + 1 < len(texts) else ""
            if text.startswith("--"):
                option, equals, attached = text[2:].partition("=")
                if option in ("output", "output-document"):
                    written.append(attached if equals else value)
                    named = False
                elif option == "remote-name":
                    named = True
            elif text.startswith("-") and len(text) > 1:
                flags = text[1:]
                output_flag = "o" if program == "curl" else "O"
                if output_flag in flags:
                    after = flags[flags.index(output_flag) + 1 :]
                    written.append(after or value)
                    named = False
                elif program == "curl" and "O" in flags:
                    named = True
        for target in written:
            if target and target != "-":
                self.downloads.add(posixpath.normpath(target))
        if named:
            for url in urls:
                name = posixpath.basename(url.split("?", 1)[0].split("#", 1)[0].rstrip("/"))
                if name and "://" not in name:
                    self.downloads.add(name)


def _unwrap(simple: _Simple) -> None:
    """Drop leading assignments and wrappers (``sudo -u x``, ``env -i A=1``, ``nice -n 5`` …) in place."""
    args = simple.args
    index = 0
    while index < len(args):
        word = args[index].text
        if _ASSIGNMENT.match(word):
            index += 1
            continue
        name = _program(word)
        takes_value = _WRAPPERS.get(name)
        if takes_value is None:
            break
        simple.via_xargs = simple.via_xargs or name == "xargs"
        index += 1
        while index < len(args) and (args[index].text.startswith("-") or _ASSIGNMENT.match(args[index].text)):
            option = args[index].text
            index += 1
            if name == "env" and option in ("-S", "--split-string") and index < len(args):
                split = _split_words(args[index].text)
                args[index : index + 1] = [_Arg(t, args[index].downloaded) for t in split]
                break
            if option in takes_value and index < len(args):
                index += 1
        index += min(_WRAPPER_POSITIONALS.get(name, 0), len(args) - index)
    del args[:index]
    if simple.via_xargs and simple.stdin.literal is not None and args:
        args.extend(_Arg(t) for t in _split_words(simple.stdin.literal))


def _split_words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _rm(texts: list[str]) -> None:
    recursive = False
    targets: list[str] = []
    options_done = False
    for word in texts:
        if options_done or not word.startswith("-") or word == "-":
            targets.append(word)
        elif word == "--":
            options_done = True
        elif word.startswith("--"):
            option = word[2:].split("=", 1)[0]
            if option and "no-preserve-root".startswith(option) and option[0] == "n":
                raise _Refused("rm with --no-preserve-root deletes the whole file system")
            if option and "recursive".startswith(option):
                recursive = True
        elif "r" in word or "R" in word:
            recursive = True
    if not recursive:
        return
    for target in targets:
        what = _wiped(target)
        if what is not None:
            raise _Refused(f"rm -r of {what} ({_shown(target)}) destroys it")


def _recursive_owner(program: str, texts: list[str]) -> None:
    flags = [t for t in texts if t.startswith("-")]
    recursive = any(t in ("--recursive", "-R") or (not t.startswith("--") and "R" in t) for t in flags)
    if not recursive:
        return
    for target in (t for t in texts if not t.startswith("-")):
        what = _wiped(target)
        if what is not None:
            raise _Refused(f"{program} -R on {what} ({_shown(target)}) breaks the system")


def _device_writer(program: str, texts: list[str]) -> None:
    if program == "dd":
        targets = [t[3:] for t in texts if t.startswith("of=")]
    elif program in ("tee", "shred", "blkdiscard"):
        targets = [t for t in texts if not t.startswith("-")]
    else:
        operands = [t for t in texts if not t.startswith("-")]
        targets = operands[-1:] if len(operands) >= 2 else []
    for target in targets:
        device = _device(target)
        if device is not None:
            raise _Refused(f"{program} onto the disk device {device} destroys its data")


Language = Literal["shell", "python", "perl", "ruby", "node", "php", "lua", "osascript", "pwsh", "awk", "other"]


def _language(program: str) -> Language | None:
    if program in _SHELLS:
        return "shell"
    if not _INTERPRETER.fullmatch(program.lower()):
        return None
    for prefix, language in (
        ("python", "python"), ("pypy", "python"), ("perl", "perl"), ("ruby", "ruby"), ("node", "node"),
        ("deno", "node"), ("bun", "node"), ("php", "php"), ("lua", "lua"), ("osascript", "osascript"),
        ("pwsh", "pwsh"),
    ):  # fmt: skip
        if program.lower().startswith(prefix):
            return language  # type: ignore[return-value]
    return "awk" if program.endswith("awk") else "other"


def _code_source(language: Language, args: list[_Arg]) -> tuple[_Arg | None, _Arg | None, bool]:
    """(inline code, script operand, whether the program reads its code from stdin)."""
    if language == "awk":
        operands = [a for a in args if not a.text.startswith("-")]
        return (operands[0] if operands else None), None, False
    flags = ("-c",) if language == "shell" else _INLINE_FLAGS.get(language, ())
    index = 0
    while index < len(args):
        text = args[index].text
        if language == "shell" and text.startswith("-") and not text.startswith("--") and "c" in text[1:]:
            return (args[index + 1] if index + 1 < len(args) else None), None, False
        if text in flags:
            return (args[index + 1] if index + 1 < len(args) else None), None, False
        attached = next((f for f in flags if len(f) == 2 and text.startswith(f) and len(text) > 2), None)
        if attached is not None:
            return _Arg(text[2:], args[index].downloaded), None, False
        if language == "python" and text == "-m":
            return None, None, False
        if text == "-":
            return None, None, True
        if language == "shell" and text in ("-s", "--"):
            return None, None, True
        if not text.startswith(("-", "+")):
            return None, args[index], False
        index += 2 if text in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file", "-W", "-X") else 1
    return None, None, True


def _plain(text: str) -> str | None:
    return None if _UNKNOWN in text else text.replace(_SPLIT, " ").translate(_UNQUOTED)


def _shown(target: str) -> str:
    return target.replace(_HOME, "~")


# -- tree helpers --------------------------------------------------------------------------------------------------


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "surrogatepass")


def _descendants(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _command_name(node: Node) -> str:
    name = node.child_by_field_name("name")
    return _unescape_bare(_text(name)).strip("'\"") if name is not None else ""


def _redirects_of(stage: Node) -> list[Node]:
    own = [c for c in stage.children if c.type.endswith("_redirect")]
    body = stage.child_by_field_name("body") if stage.type == "redirected_statement" else None
    if body is not None:
        own += [c for c in body.children if c.type.endswith("_redirect")]
    return own


def _has_token(node: Node, token: str) -> bool:
    return any(not n.is_named and n.type == token for n in _descendants(node))


def _in_pipeline(node: Node, top: Node) -> bool:
    current = node.parent
    while current is not None and current != top:
        if current.type == "pipeline":
            return True
        current = current.parent
    return False
