"""What programs do with their arguments, as far as the hard blocks need to know.

- which program really runs behind wrappers (``sudo -u x``, ``env -i A=1``, ``nice -n 5``, ``timeout 10``,
  ``xargs`` …): ``unwrap``;
- which programs run code, and where that code comes from: shells and interpreters (``sh -c CODE``, ``python3
  SCRIPT``, ``node`` reading stdin): ``language`` and ``code_source``; builtins and tools that run their arguments
  as shell code (``eval``, ``su -c``, ``alias``, ``trap``, ``watch``): ``builtin_scripts``; ``find -exec``:
  ``find_line``;
- where a downloader writes (``curl -o f``, ``wget URL``): ``download_targets``.

Pure functions over expanded words (``words.Arg`` or their text). Nothing here decides what is refused.
"""

from __future__ import annotations

import functools
import itertools
import os
import posixpath
import re
import shlex
from dataclasses import dataclass
from typing import Literal

from .words import Arg

__all__ = [
    "CODE_BUILTINS",
    "DOWNLOADERS",
    "FindLine",
    "Language",
    "Xargs",
    "builtin_scripts",
    "code_source",
    "download_targets",
    "find_line",
    "language",
    "program",
    "split_words",
    "unwrap",
]

Language = Literal["shell", "python", "perl", "ruby", "node", "php", "lua", "osascript", "pwsh", "awk", "other"]

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "posh"})
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "lwp-download", "lwp-request", "http", "https", "xh"})
CODE_BUILTINS = frozenset({"eval", "source", ".", "su", "alias", "trap", "watch"})
"""Builtins and tools whose arguments are shell code (``source`` and ``.``: a script file)."""

_INTERPRETER = re.compile(
    r"(?:python|pypy)[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|deno|bun|php[0-9.]*|lua(?:jit|[0-9.]*)|"
    r"rscript|tclsh[0-9.]*|osascript|pwsh|[gmn]?awk"
)
_LANGUAGE_PREFIXES: tuple[tuple[str, Language], ...] = (
    ("python", "python"), ("pypy", "python"), ("perl", "perl"), ("ruby", "ruby"), ("node", "node"),
    ("deno", "node"), ("bun", "node"), ("php", "php"), ("lua", "lua"), ("osascript", "osascript"),
    ("pwsh", "pwsh"),
)  # fmt: skip
_INLINE_FLAGS: dict[Language, tuple[str, ...]] = {
    "python": ("-c",),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "node": ("-e", "--eval", "-p", "--print"),
    "php": ("-r",),
    "lua": ("-e",),
    "osascript": ("-e",),
    "pwsh": ("-c", "-command"),
}
_VALUED_INTERPRETER_OPTIONS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file", "-W", "-X"})

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
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
    "xargs": frozenset({"-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "--arg-file", "--delimiter"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "flock": frozenset({"-w", "-E", "--timeout"}),
    "firejail": frozenset(),
    "busybox": frozenset(),
    "caffeinate": frozenset(),
    "strace": frozenset({"-o", "-e", "-p"}),
}
"""Wrappers that run the rest of the line as a command, and their options that take a value."""
_WRAPPER_POSITIONALS = {"timeout": 1, "chroot": 1, "flock": 1}
"""Wrappers whose first positional arguments are theirs (``timeout 10 cmd``, ``chroot /srv cmd``)."""


@functools.lru_cache(maxsize=1024)
def program(word: str) -> str:
    """The program a command word names (``/usr/bin/rm`` is ``rm``)."""
    return os.path.basename(word.rstrip("/")) if word else ""


def split_words(text: str) -> list[str]:
    """Text split as a shell splits words (``env -S``, what ``xargs`` reads)."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


@dataclass(frozen=True, slots=True)
class Xargs:
    """How ``xargs`` hands its input to the command: as words (the default), as one argument per record (``-0``,
    ``-d``), or in place of a placeholder (``-I {}``)."""

    records: bool = False
    replace: str | None = None

    def command(self, args: list[Arg], text: str) -> list[Arg]:
        """The command line ``xargs`` runs for the input ``text``."""
        if self.replace is not None:
            return [Arg(a.text.replace(self.replace, text), a.downloaded) for a in args]
        if self.records:
            return [*args, Arg(text)]
        return [*args, *(Arg(word) for word in split_words(text))]


def unwrap(args: list[Arg]) -> tuple[list[Arg], Xargs | None]:
    """The command line without leading assignments and wrappers (``sudo -u x``, ``env -i A=1``, ``nice -n 5`` …),
    and how ``xargs`` feeds it when ``xargs`` was among them."""
    args = list(args)
    xargs: Xargs | None = None
    index = 0
    while index < len(args):
        word = args[index].text
        if _ASSIGNMENT.match(word):
            index += 1
            continue
        name = program(word)
        takes_value = _WRAPPERS.get(name)
        if takes_value is None:
            break
        if name == "xargs":
            xargs = xargs or Xargs()
        index += 1
        while index < len(args) and (args[index].text.startswith("-") or _ASSIGNMENT.match(args[index].text)):
            option = args[index].text
            value = args[index + 1].text if index + 1 < len(args) else None
            index += 1
            if name == "env" and option in ("-S", "--split-string") and value is not None:
                args[index : index + 1] = [Arg(t, args[index].downloaded) for t in split_words(value)]
                break
            if name == "xargs":
                xargs = _xargs_option(xargs or Xargs(), option, value)
            if value is not None and (option in takes_value or _value_follows(option, takes_value)):
                index += 1
        index += min(_WRAPPER_POSITIONALS.get(name, 0), len(args) - index)
    return args[index:], xargs


def _value_follows(option: str, takes_value: frozenset[str]) -> bool:
    """Whether a cluster of short options (``-iu``) ends with one that takes the next word as its value."""
    if option.startswith("--") or len(option) < 3:
        return False
    for index, letter in enumerate(option[1:], start=2):
        if f"-{letter}" in takes_value:
            return index == len(option)  # earlier, the rest of the cluster is the value (``-uroot``)
    return False


def _xargs_option(xargs: Xargs, option: str, value: str | None) -> Xargs:
    if option in ("-0", "--null") or option.startswith(("-d", "--delimiter")):
        return Xargs(records=True, replace=xargs.replace)
    if option.startswith("-I"):
        replace = option[2:] or value
    elif option.startswith("-i"):
        replace = option[2:] or "{}"
    elif option.startswith("--replace"):
        replace = option.partition("=")[2] or "{}"
    else:
        return xargs
    return Xargs(records=True, replace=replace) if replace else xargs


def language(name: str) -> Language | None:
    """The language a program reads code in, when it is a shell or an interpreter."""
    if name in SHELLS:
        return "shell"
    lowered = name.lower()
    if not _INTERPRETER.fullmatch(lowered):
        return None
    for prefix, found in _LANGUAGE_PREFIXES:
        if lowered.startswith(prefix):
            return found
    return "awk" if name.endswith("awk") else "other"


def code_source(lang: Language, args: list[Arg]) -> tuple[Arg | None, Arg | None, bool]:
    """Where a shell or interpreter takes its code from: (inline code, script operand, whether it reads stdin)."""
    if lang == "shell":
        return _shell_source(args)
    if lang == "awk":
        operands = [a for a in args if not a.text.startswith("-")]
        return (operands[0] if operands else None), None, False
    flags = _INLINE_FLAGS.get(lang, ())
    index = 0
    while index < len(args):
        text = args[index].text
        if text in flags:
            return (args[index + 1] if index + 1 < len(args) else None), None, False
        attached = next((f for f in flags if len(f) == 2 and text.startswith(f) and len(text) > 2), None)
        if attached is not None:
            return Arg(text[2:], args[index].downloaded), None, False
        if lang == "python" and text == "-m":
            return None, None, False
        if text == "-":
            return None, None, True
        if not text.startswith(("-", "+")):
            return None, args[index], False
        index += 2 if text in _VALUED_INTERPRETER_OPTIONS else 1
    return None, None, True


def _shell_source(args: list[Arg]) -> tuple[Arg | None, Arg | None, bool]:
    """A shell reads its options first, wherever ``-c`` stands among them (``bash -c -- CODE``, ``bash -ec -x
    CODE``); its first operand is then the code (``-c``), or a script file; without one, or with ``-s``, stdin."""
    inline = from_stdin = False
    index = 0
    while index < len(args):
        text = args[index].text
        if text in ("--", "-"):
            index += 1
            break
        if not text.startswith(("-", "+")) or len(text) < 2:
            break
        if text.startswith("-") and not text.startswith("--"):
            inline = inline or "c" in text
            from_stdin = from_stdin or "s" in text
        index += 2 if text in _VALUED_INTERPRETER_OPTIONS else 1
    operand = args[index] if index < len(args) else None
    if inline:
        return operand, None, False
    if from_stdin or operand is None:
        return None, None, True
    return None, operand, False


def builtin_scripts(name: str, texts: list[str]) -> list[str]:
    """The shell code a code-running builtin runs (``eval``, ``watch``, ``su -c``, ``alias``, ``trap``)."""
    if name == "eval":
        return [" ".join(texts)]
    if name == "watch":
        rest = texts
        while rest and rest[0].startswith("-"):
            rest = rest[2:] if rest[0] in ("-n", "--interval") else rest[1:]
        return [" ".join(rest)]
    if name == "su":
        return [script for flag, script in itertools.pairwise(texts) if flag in ("-c", "--command")]
    if name == "alias":
        return [value for _, equals, value in (t.partition("=") for t in texts) if equals]
    if name == "trap":
        return texts[:1]
    return []


@dataclass(frozen=True, slots=True)
class FindLine:
    """A ``find`` command line: where it starts, the commands its ``-exec`` actions run, and whether it deletes."""

    paths: list[str]
    executes: list[list[str]]
    deletes: bool


def find_line(texts: list[str]) -> FindLine:
    start = 0
    while start < len(texts) and (texts[start] in ("-H", "-L", "-P") or texts[start].startswith("-O")):
        start += 1  # find's own options come before the paths (``find -L / -delete``)
    if texts[start : start + 1] == ["-D"]:
        start += 2
    paths = list(itertools.takewhile(lambda t: not t.startswith(("-", "(", "!")), texts[start:]))
    expression = texts[start + len(paths) :]
    executes: list[list[str]] = []
    deletes = False
    index = 0
    while index < len(expression):
        word = expression[index]
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            inner = list(itertools.takewhile(lambda t: t not in (";", "+"), expression[index + 1 :]))
            if inner:
                executes.append(inner)
            index += len(inner) + 1
        elif word == "-delete":
            deletes = True
        index += 1
    return FindLine(paths, executes, deletes)


def download_targets(name: str, texts: list[str]) -> list[str]:
    """Where a download is written: curl ``-o f`` / ``-O`` (the URL's name), wget ``-O f`` or, by default, the
    URL's name."""
    urls = [t for t in texts if re.match(r"^[a-z][a-z0-9+.-]*://", t)]
    named = name == "wget"
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
            output_flag = "o" if name == "curl" else "O"
            if output_flag in flags:
                written.append(flags[flags.index(output_flag) + 1 :] or value)
                named = False
            elif name == "curl" and "O" in flags:
                named = True
    targets = [posixpath.normpath(t) for t in written if t and t != "-"]
    if named:
        for url in urls:
            base = posixpath.basename(url.split("?", 1)[0].split("#", 1)[0].rstrip("/"))
            if base and "://" not in base:
                targets.append(base)
    return targets
