"""Prompt files as slash commands: ``.hermes/commands/NAME.md`` in the session's cwd and
``$HERMES_ACP_HOME/commands/NAME.md`` are the commands ``/NAME``.

A file's description is its front matter's ``description`` (and ``argument-hint`` its input hint), else its first
non-empty line (a leading ``#`` dropped). Its text (the front matter left out) is what the model gets, with
``$ARGUMENTS`` replaced by what follows the command. A project file wins over a global one of the same name.

What a repository ships is untrusted: names must be plain (letters, digits, ``-``, ``_``, ``.``; at most 64
characters), a file must resolve inside its commands folder (no link out of it), at most ``MAX_FILES`` files and
``MAX_FILE_BYTES`` each are read, and every text passes the one sanitizer. Scanning is blocking I/O:
``load_prompt_files`` runs it in a worker thread. Nothing here knows which commands are built in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
import structlog

from hermes_acp.core.sanitize import sanitize_text

from .contained import NotContained, contained, read_capped
from .front_matter import split_front_matter

__all__ = ["MAX_FILES", "MAX_FILE_BYTES", "PromptFile", "expand", "load_prompt_files", "prompt_folders"]

MAX_FILES = 200
MAX_FILE_BYTES = 64 * 1024
PROJECT_FOLDER = Path(".hermes") / "commands"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_log = structlog.get_logger("hermes_acp.sessions")


@dataclass(frozen=True, slots=True)
class PromptFile:
    name: str
    description: str
    hint: str | None
    template: str
    path: Path


def expand(template: str, arguments: str) -> str:
    """The prompt a command sends: ``$ARGUMENTS`` replaced; the arguments appended when the file does not use them."""
    if "$ARGUMENTS" in template:
        return template.replace("$ARGUMENTS", arguments)
    return f"{template.rstrip()}\n\n{arguments}" if arguments else template


def prompt_folders(cwd: Path, home: Path) -> tuple[Path, Path]:
    """Where a session's prompt files are read from: the global folder, then the project's (which wins)."""
    return home / "commands", cwd / PROJECT_FOLDER


async def load_prompt_files(cwd: Path, home: Path) -> list[PromptFile]:
    """The prompt-file commands of a session, by name (the project's over the global ones); a worker thread."""
    return await anyio.to_thread.run_sync(_load, *prompt_folders(cwd, home))


def _load(global_: Path, project: Path) -> list[PromptFile]:
    found: dict[str, PromptFile] = {}
    for folder in (global_, project):  # the project's, read last, win
        for command in _scan(folder):
            found[command.name] = command
    return sorted(found.values(), key=lambda c: c.name)


def _scan(folder: Path) -> list[PromptFile]:
    try:
        root = folder.resolve(strict=True)
        entries = sorted(p for p in root.iterdir() if p.suffix == ".md")[:MAX_FILES]
    except OSError:
        return []
    commands = []
    for path in entries:
        name = path.stem
        if not _NAME.fullmatch(name):
            _log.warning("a prompt file's name is not a command name; skipped", path=str(path))
            continue
        try:
            data, _ = read_capped(contained(path, root), MAX_FILE_BYTES)
        except NotContained as exc:
            _log.warning("a prompt file was skipped", path=str(path), reason=str(exc))
            continue
        except OSError as exc:
            _log.warning("a prompt file could not be read", path=str(path), error=str(exc))
            continue
        text, removals = sanitize_text(data.decode("utf-8", errors="replace"))
        if removals:
            _log.warning("hidden characters removed from a prompt file", path=str(path), **removals.as_log())
        commands.append(_command(name, text, path))
    return commands


def _command(name: str, text: str, path: Path) -> PromptFile:
    fields: dict[str, str] = {}
    front, body = split_front_matter(text)
    if front is not None:
        for line in front.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip().lower()] = value.strip().strip("\"'")
    description = fields.get("description") or _first_line(body) or f"Runs the prompt in {path.name}."
    hint = fields.get("argument-hint") or None
    return PromptFile(name=name, description=description[:200], hint=hint, template=body.strip(), path=path)


def _first_line(body: str) -> str:
    for line in body.splitlines():
        if line.strip():
            return line.strip().lstrip("#").strip()
    return ""
