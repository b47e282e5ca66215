"""Commands refused in every mode, without asking: the few that wreck a machine and are never needed in a coding
session. ``hard_block_reason(command)`` says why a command is refused, or None.

Blocked: ``rm`` recursive on ``/``, ``/*``, a top-level system folder, ``~`` or ``$HOME`` (any flag spelling, and
``--no-preserve-root`` anywhere); a download piped into a shell (``curl … | sh``, ``wget … | sudo bash``,
``bash <(curl …)``, ``sh -c "$(curl …)"``); fork bombs; ``mkfs*``; ``dd`` or a redirection onto a disk device;
shutdown, reboot, halt, poweroff (also through ``systemctl`` and ``init``). The command is split into simple
commands the way a shell would (quotes, ``;``, ``&&``, ``|``, newlines), wrappers such as ``sudo``, ``env``,
``nohup`` are looked through, and ``sh -c`` / ``eval`` strings are checked too, so that the same words inside
quotes, file names or commit messages (``echo "rm -rf /"``, ``grep reboot log``) are not refused.

This is a guard against accidents and sloppy model output, not a sandbox: a determined command can always hide
its intent. It does no I/O and knows nothing about modes or approval.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

__all__ = ["hard_block_reason"]

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"})
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "lwp-download", "http", "https", "xh"})
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff"})
_SYSTEMCTL_POWER = frozenset({"poweroff", "reboot", "halt", "kexec", "soft-reboot"})
_SYSTEM_DIRS = frozenset(
    {
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/proc",
        "/root",
        "/sbin",
        "/sys",
        "/usr",
        "/var",
    }
)
_DISK = re.compile(r"^/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|md\d|dm-\d|mapper/|sr\d)")
_HOME = re.compile(r"^(?:~[\w.-]*|\$HOME|\$\{HOME\})$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Wrappers that run the rest of the line as a command, and their options that take a value.
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "--class", "--classdata"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "chroot": frozenset(),
    "setsid": frozenset(),
    "unbuffer": frozenset(),
    "xargs": frozenset({"-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
}
_WRAPPER_POSITIONALS = {"timeout": 1}
"""Wrappers whose first positional arguments are theirs (``timeout 10 cmd``)."""
_FORK_BOMB = (
    re.compile(r"([\w:.-]+)\s*\(\s*\)\s*\{[^}]*?(?<![\w:.-])\1\s*\|\s*&?\s*\1\s*&"),
    re.compile(r"\bfunction\s+([\w:.-]+)\s*(?:\(\s*\))?\s*\{[^}]*?(?<![\w:.-])\1\s*\|\s*&?\s*\1\s*&"),
)
_SHELL_NAMES = "|".join(sorted(_SHELLS - {"busybox"}, key=len, reverse=True))
_SUBSTITUTED_DOWNLOAD = re.compile(
    rf"(?:^|[\s;&|(`])(?:(?:{_SHELL_NAMES})|eval|source|\.)\b[^;&|\n]*?(?:<\(|\$\(|`)\s*"
    r"(?:sudo\s+)?(?:curl|wget|fetch)\b"
)
_OPERATORS = frozenset({";", "&&", "||", "&", "|", "|&", "(", ")", ";;", ";&", "<(", ">(", "{", "}"})
_MAX_DEPTH = 3


@dataclass(frozen=True, slots=True)
class _Simple:
    """One simple command: its words (wrappers stripped) and its output redirection targets."""

    words: tuple[str, ...]
    redirects: tuple[str, ...]

    @property
    def program(self) -> str:
        return os.path.basename(self.words[0]) if self.words else ""


def _without_comments(command: str) -> str:
    """Drop shell comments: an unquoted ``#`` that starts a word, up to the end of its line."""
    out: list[str] = []
    quote = ""
    index = 0
    while index < len(command):
        char = command[index]
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"' and index + 1 < len(command):
                out.append(char)
                index += 1
                char = command[index]
        elif char in "'\"":
            quote = char
        elif char == "\\" and index + 1 < len(command):
            out.append(char)
            index += 1
            char = command[index]
        elif char == "#" and (index == 0 or command[index - 1] in " \t\n;&|()"):
            end = command.find("\n", index)
            if end == -1:
                break
            index = end
            continue
        out.append(char)
        index += 1
    return "".join(out)


def _tokens(command: str) -> list[str]:
    # Newlines separate commands; shlex would treat them as spaces.
    text = _without_comments(command.replace("\r", "")).replace("\n", " ; ")
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = ""
        return list(lexer)
    except ValueError:
        return re.findall(r"[;&|()<>]+|[^\s;&|()<>]+", text)


def _unwrap(words: list[str]) -> list[str]:
    """Drop leading assignments and wrappers (``sudo -u x``, ``env -i A=1``, ``nice -n 5`` …)."""
    index = 0
    while index < len(words):
        word = words[index]
        if _ASSIGNMENT.match(word):
            index += 1
            continue
        name = os.path.basename(word)
        if name == "busybox" and index + 1 < len(words):
            index += 1
            continue
        takes_value = _WRAPPERS.get(name)
        if takes_value is None:
            break
        index += 1
        while index < len(words) and (words[index].startswith("-") or _ASSIGNMENT.match(words[index])):
            option = words[index]
            index += 1
            if option in takes_value and index < len(words):
                index += 1
        index += min(_WRAPPER_POSITIONALS.get(name, 0), len(words) - index)
    return words[index:]


def _pipelines(tokens: list[str]) -> list[list[_Simple]]:
    """Pipelines of simple commands; every operator other than a pipe ends a pipeline."""
    pipelines: list[list[_Simple]] = []
    current: list[_Simple] = []
    words: list[str] = []
    redirects: list[str] = []
    expect_target = False

    def close_command() -> None:
        nonlocal words, redirects
        if words or redirects:
            current.append(_Simple(tuple(_unwrap(words)), tuple(redirects)))
        words, redirects = [], []

    for token in tokens:
        if expect_target:
            expect_target = False
            if not set(token) <= set(";&|()<>"):
                redirects.append(token)
                continue
        if token in ("|", "|&"):
            close_command()
            continue
        if token in _OPERATORS:
            close_command()
            if current:
                pipelines.append(current)
            current = []
            continue
        if set(token) <= set(";&|()<>") and ("<" in token or ">" in token):
            expect_target = ">" in token
            continue
        words.append(token)
    close_command()
    if current:
        pipelines.append(current)
    return pipelines


def _home_or_root(target: str) -> str | None:
    """What a deletion target wipes out, when it is the root, a system folder or the home folder."""
    cleaned = target
    while cleaned.endswith(("/", "/*", "/.")):
        cleaned = cleaned[:-1] if cleaned.endswith("/") else cleaned[:-2]
    if cleaned in ("", "*") and target.startswith("/"):
        return "the root folder"
    if cleaned in _SYSTEM_DIRS:
        return f"the system folder {cleaned}"
    if _HOME.match(cleaned):
        return "the home folder"
    return None


def _rm_reason(words: tuple[str, ...]) -> str | None:
    recursive = False
    targets: list[str] = []
    options_done = False
    for word in words[1:]:
        if options_done or not word.startswith("-") or word == "-":
            targets.append(word)
        elif word == "--":
            options_done = True
        elif word == "--no-preserve-root":
            return "rm with --no-preserve-root deletes the whole file system"
        elif word == "--recursive" or (not word.startswith("--") and ("r" in word or "R" in word)):
            recursive = True
    if not recursive:
        return None
    for target in targets:
        what = _home_or_root(target)
        if what is not None:
            return f"rm -r of {what} ({target}) destroys it"
    return None


def _simple_reason(command: _Simple, depth: int) -> str | None:
    words, program = command.words, command.program
    for target in command.redirects:
        if _DISK.match(target):
            return f"writing onto the disk device {target} destroys its data"
    if not words:
        return None
    if program == "rm":
        return _rm_reason(words)
    if program.startswith("mkfs") or program in ("mke2fs", "mkswap", "wipefs"):
        return f"{program} formats a disk"
    if program == "dd":
        for word in words[1:]:
            if word.startswith("of=") and _DISK.match(word[3:]):
                return f"dd onto the disk device {word[3:]} destroys its data"
        return None
    if program in _POWER:
        return f"{program} stops the machine"
    if program == "systemctl" and any(w in _SYSTEMCTL_POWER for w in words[1:]):
        return "systemctl power actions stop the machine"
    if program in ("init", "telinit") and len(words) > 1 and words[1] in ("0", "6"):
        return f"{program} {words[1]} stops the machine"
    if depth < _MAX_DEPTH:
        if program in _SHELLS:
            script = _dash_c(words)
            if script is not None:
                return _reason(script, depth + 1)
        if program == "eval":
            return _reason(" ".join(words[1:]), depth + 1)
    return None


def _dash_c(words: tuple[str, ...]) -> str | None:
    """The script of ``sh -c SCRIPT`` (also ``bash -lc``, ``sh -ec``)."""
    for index, word in enumerate(words[1:], start=1):
        if word.startswith("-") and not word.startswith("--") and "c" in word:
            return words[index + 1] if index + 1 < len(words) else None
        if not word.startswith("-"):
            return None
    return None


def _pipe_reason(pipeline: list[_Simple]) -> str | None:
    downloaded = False
    for command in pipeline:
        if downloaded and command.program in _SHELLS:
            return f"piping a download into {command.program} runs unreviewed code from the network"
        if command.program in _DOWNLOADERS:
            downloaded = True
    return None


def _reason(command: str, depth: int) -> str | None:
    flat = " ".join(command.split())
    for pattern in _FORK_BOMB:
        if pattern.search(flat):
            return "a fork bomb exhausts the machine's processes"
    if _SUBSTITUTED_DOWNLOAD.search(flat):
        return "running a download with a shell runs unreviewed code from the network"
    for pipeline in _pipelines(_tokens(command)):
        reason = _pipe_reason(pipeline)
        if reason is not None:
            return reason
        for simple in pipeline:
            reason = _simple_reason(simple, depth)
            if reason is not None:
                return reason
    return None


def hard_block_reason(command: str) -> str | None:
    """Why ``command`` is refused in every mode, or None when it is not."""
    return _reason(command, 0)
