"""Skills: ``SKILL.md`` folders in the Agent Skills format, offered as ``/name`` commands and to the model.

Where: ``$HERMES_ACP_HOME/skills/<name>/SKILL.md`` (the user's own), then in each of the session's directories
(the additional ones, then the cwd) ``.claude/skills/<name>/SKILL.md`` and ``.agents/skills/<name>/SKILL.md``; on
a name found twice the later one wins (the cwd's ``.agents`` last), and the shadowed one is logged. A skill is a
folder whose ``SKILL.md`` starts with YAML front matter: ``name`` (1–64 lowercase letters, digits and single
hyphens, the folder's own name) and ``description`` (1–1024 characters; what the skill does and when to use it);
``argument-hint`` is the command's input hint. Other fields are ignored, ``allowed-tools`` included: a skill is
text, like ``AGENTS.md``, that may instruct the model but grants no permission.

A repository's skills are untrusted, so: a skills folder must stay inside the directory it was found in and each
``SKILL.md`` inside its skills folder (links out are not followed, ``contained``); at most ``MAX_SKILLS`` folders
are looked at and ``MAX_SKILL_BYTES`` of a file read; every text passes the one sanitizer. A skill that breaks a
rule becomes a ``SkillProblem`` (where and why), reported to the user once (``SkillShelf.new_problems``) and
skipped; nothing about a skill can fail a session.

``SkillShelf`` is a session's skills: the first scan runs once, in a worker thread, off ``session/new``'s path
(the manager starts it in the background; the first prompt and the first command listing wait for it); a rescan
(around every prompt, as for prompt files) re-reads only the files whose size or time changed. PyYAML is imported
by the first scan that finds a ``SKILL.md``. ``skill_text`` is what the model gets when a skill is used: where
it lives, what its folder holds, its instructions. No ACP here.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
import anyio.to_thread
import structlog

from hermes_acp.core.sanitize import sanitize_text
from hermes_acp.tools.context import Workspace

from .contained import NotContained, contained, read_capped
from .front_matter import FrontMatterError, read_yaml_fields, split_front_matter

__all__ = [
    "MAX_SKILLS",
    "MAX_SKILL_BYTES",
    "PROJECT_FOLDERS",
    "Skill",
    "SkillProblem",
    "SkillRoot",
    "SkillShelf",
    "skill_roots",
    "skill_text",
]

MAX_SKILLS = 500
"""Skill folders looked at in all (a repository with more gets the first ones, by name, and a problem saying so)."""
MAX_SKILL_BYTES = 64 * 1024
MAX_DESCRIPTION_CHARS = 1024
MAX_LISTED_FILES = 50
PROJECT_FOLDERS = (Path(".claude") / "skills", Path(".agents") / "skills")
"""In each session directory, in this order (the later wins a name found in both)."""
SKILL_FILE = "SKILL.md"
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_FIELDS = frozenset({"name", "description", "argument-hint"})
_log = structlog.get_logger("hermes_acp.sessions")

Origin = Literal["project", "global"]


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    """One line (whitespace runs made single spaces), sanitized."""
    hint: str | None
    body: str
    """The instructions: the file after its front matter, sanitized."""
    path: Path
    """``SKILL.md``, resolved."""
    origin: Origin

    @property
    def folder(self) -> Path:
        return self.path.parent


@dataclass(frozen=True, slots=True)
class SkillProblem:
    path: Path
    reason: str

    def text(self) -> str:
        return f"Skill {self.path} was skipped: {self.reason}."


@dataclass(frozen=True, slots=True)
class SkillRoot:
    """A skills folder and the directory it must stay inside."""

    folder: Path
    within: Path
    origin: Origin


def skill_roots(workspace: Workspace, home: Path) -> list[SkillRoot]:
    """Where a session's skills are looked for, lowest precedence first."""
    roots = [SkillRoot(home / "skills", home, "global")]
    for directory in (*reversed(workspace.additional), workspace.cwd):
        roots.extend(SkillRoot(directory / folder, directory, "project") for folder in PROJECT_FOLDERS)
    return roots


_Signature = tuple[int, int, int]
"""(inode, size, modification time in ns) of a ``SKILL.md``: a rescan re-reads it only when this changed."""


@dataclass
class _Scan:
    skills: dict[str, Skill] = field(default_factory=dict)
    problems: list[SkillProblem] = field(default_factory=list)


class SkillShelf:
    """One session's skills (see the module docstring)."""

    def __init__(self, roots: Sequence[SkillRoot]):
        self._roots = tuple(roots)
        self._lock = anyio.Lock()
        self._scanned = False
        self._cache: dict[str, tuple[_Signature, Skill | SkillProblem]] = {}
        self._current = _Scan()
        self._reported: set[SkillProblem] = set()
        self._logged: set[SkillProblem] = set()

    @property
    def skills(self) -> tuple[Skill, ...]:
        """Every skill, by name."""
        return tuple(self._current.skills[name] for name in sorted(self._current.skills))

    @property
    def problems(self) -> tuple[SkillProblem, ...]:
        return tuple(self._current.problems)

    @property
    def scanned(self) -> bool:
        return self._scanned

    @property
    def folders(self) -> tuple[Path, ...]:
        """The skills folders looked in, lowest precedence first."""
        return tuple(root.folder for root in self._roots)

    def find(self, name: str) -> Skill | None:
        return self._current.skills.get(name)

    def names(self) -> list[str]:
        return sorted(self._current.skills)

    def path(self, name: str) -> Path | None:
        skill = self.find(name)
        return skill.path if skill is not None else None

    async def text(self, name: str) -> str:
        skill = self.find(name)
        if skill is None:
            raise KeyError(name)
        return await anyio.to_thread.run_sync(skill_text, skill)

    def global_folders(self) -> tuple[Path, ...]:
        """The folders of the user's own skills (``$HERMES_ACP_HOME/skills``), which the file tools may read too."""
        return tuple(s.folder for s in self.skills if s.origin == "global")

    async def ensure(self) -> None:
        """The first scan, once (callers that come while it runs wait for it)."""
        async with self._lock:
            if not self._scanned:
                await self._scan()
                self._scanned = True

    async def rescan(self) -> None:
        """Look again (after the first scan; before it, that scan)."""
        async with self._lock:
            await self._scan()
            self._scanned = True

    def new_problems(self) -> list[SkillProblem]:
        """The problems not reported yet (each is reported once)."""
        fresh = [problem for problem in self._current.problems if problem not in self._reported]
        self._reported.update(fresh)
        return fresh

    async def _scan(self) -> None:
        self._current = await anyio.to_thread.run_sync(self._scan_blocking)

    def _scan_blocking(self) -> _Scan:
        scan = _Scan()
        seen: dict[str, tuple[_Signature, Skill | SkillProblem]] = {}
        budget = MAX_SKILLS
        for root in self._roots:
            entries = _entries(root, scan)
            if len(entries) > budget:
                more = len(entries) - budget
                scan.problems.append(SkillProblem(root.folder, f"{more} more skill folders than {MAX_SKILLS} in all"))
                entries = entries[:budget]
            budget -= len(entries)
            for entry in entries:
                found = self._skill(entry, root, seen)
                if isinstance(found, SkillProblem):
                    scan.problems.append(found)
                    continue
                if found is None:
                    continue
                shadowed = scan.skills.get(found.name)
                if shadowed is not None:
                    _log.info("a skill shadows another of the same name", name=found.name, path=str(found.path))
                scan.skills[found.name] = found
        for problem in scan.problems:
            if problem not in self._logged:
                self._logged.add(problem)
                _log.warning("skill skipped", path=str(problem.path), reason=problem.reason)
        self._cache = seen
        return scan

    def _skill(
        self, entry: _Entry, root: SkillRoot, seen: dict[str, tuple[_Signature, Skill | SkillProblem]]
    ) -> Skill | SkillProblem | None:
        candidate = os.path.join(entry.found, SKILL_FILE)
        try:
            found = os.lstat(candidate)
        except OSError:
            return None  # a folder without a SKILL.md is not a skill
        if entry.linked or stat.S_ISLNK(found.st_mode):  # a link on the way: where it leads must be checked
            try:
                path = contained(Path(candidate), root.folder)
                found = os.stat(path)
            except NotContained as exc:
                return SkillProblem(Path(candidate), f"{exc}, so it is not read")
            except OSError as exc:
                return SkillProblem(Path(candidate), f"it cannot be read ({exc.strerror or exc})")
            key = str(path)
        elif stat.S_ISREG(found.st_mode):  # no link: a regular file inside the (resolved) skills folder
            key = os.path.join(entry.real, SKILL_FILE)
        else:
            return SkillProblem(Path(candidate), "it is not a regular file")
        signature = (found.st_ino, found.st_size, found.st_mtime_ns)
        cached = self._cache.get(key)
        if cached is not None and cached[0] == signature:
            seen[key] = cached
            return cached[1]
        skill = _read_skill(Path(key), entry.name, root.origin, size=found.st_size)
        seen[key] = (signature, skill)
        return skill


@dataclass(frozen=True, slots=True)
class _Entry:
    """A folder in a skills folder."""

    name: str
    found: str
    """Where it was found (the skills folder as configured, then its name)."""
    real: str
    """The same with the skills folder resolved (right when ``linked`` is False)."""
    linked: bool
    """The entry is a symbolic link."""


def _entries(root: SkillRoot, scan: _Scan) -> list[_Entry]:
    """The skill folders of ``root``, by name; none when the folder is missing or leads out of its directory."""
    try:
        folder = root.folder.resolve(strict=True)
        within = root.within.resolve(strict=True)
    except OSError:
        return []
    if not folder.is_relative_to(within):
        scan.problems.append(SkillProblem(root.folder, f"it points outside {root.within}, so it is not read"))
        return []
    try:
        with os.scandir(folder) as listing:
            found = [(item.name, item.is_symlink()) for item in listing if not item.name.startswith(".")]
    except OSError:
        return []
    given, real = str(root.folder), str(folder)
    return [_Entry(name, os.path.join(given, name), os.path.join(real, name), linked) for name, linked in sorted(found)]


def _read_skill(path: Path, folder_name: str, origin: Origin, *, size: int) -> Skill | SkillProblem:
    if size > MAX_SKILL_BYTES:
        return SkillProblem(path, f"it is {size:,} bytes; skills are read up to {MAX_SKILL_BYTES:,}")
    try:
        data, _ = read_capped(path, MAX_SKILL_BYTES + 1)
    except OSError as exc:
        return SkillProblem(path, f"it cannot be read ({exc.strerror or exc})")
    if len(data) > MAX_SKILL_BYTES:
        return SkillProblem(path, f"it grew past {MAX_SKILL_BYTES:,} bytes while it was read")
    text, removals = sanitize_text(data.decode("utf-8", errors="replace"))
    if removals:
        _log.warning("hidden characters removed from a skill", path=str(path), **removals.as_log())
    front, body = split_front_matter(text)
    if front is None:
        return SkillProblem(path, "it has no front matter (a --- block with name and description)")
    try:
        fields = read_yaml_fields(front, _FIELDS)
    except FrontMatterError as exc:
        return SkillProblem(path, str(exc))
    name, description, hint = fields.get("name"), fields.get("description"), fields.get("argument-hint")
    if not isinstance(name, str) or not name:
        return SkillProblem(path, "its front matter has no name")
    if len(name) > 64 or not _NAME.fullmatch(name):
        return SkillProblem(path, f"its name {name[:80]!r} is not 1-64 lowercase letters, digits and single hyphens")
    if name != folder_name:
        return SkillProblem(path, f"its name {name!r} is not its folder's name {folder_name!r}")
    if not isinstance(description, str) or not description.strip():
        return SkillProblem(path, "its front matter has no description")
    if len(description) > MAX_DESCRIPTION_CHARS:
        return SkillProblem(path, f"its description is {len(description):,} characters (at most 1,024)")
    hint_text = " ".join(hint.split())[:200] if isinstance(hint, str) else ""
    return Skill(
        name=name,
        description=" ".join(description.split()),
        hint=hint_text or None,
        body=body.strip(),
        path=path,
        origin=origin,
    )


def skill_text(skill: Skill) -> str:
    """What the model gets when it uses ``skill``: where it lives, what its folder holds, its instructions (blocking:
    it lists the folder)."""
    files = _folder_files(skill.folder)
    lines = [
        f'Skill "{skill.name}" ({skill.path}). Paths in it are relative to {skill.folder}; read the files it names'
        " with read_file when its instructions call for them. A skill instructs; it grants no permission.",
    ]
    if files:
        lines.append("Its folder holds: " + ", ".join(files))
    return "\n".join(lines) + f"\n\n{skill.body}"


def _folder_files(folder: Path) -> list[str]:
    """Up to ``MAX_LISTED_FILES`` files of a skill's folder (two levels down, hidden ones and links left out)."""
    found: list[str] = []
    for current, directories, files in os.walk(folder):
        depth = Path(current).relative_to(folder).parts
        directories[:] = sorted(d for d in directories if not d.startswith(".") and len(depth) < 1)
        for name in sorted(files):
            path = Path(current) / name
            if name.startswith(".") or path.is_symlink() or (not depth and name == SKILL_FILE):
                continue
            found.append(path.relative_to(folder).as_posix())
            if len(found) >= MAX_LISTED_FILES:
                return [*found, "…"]
    return found
