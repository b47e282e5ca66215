"""What ``hermes-acp exec`` answers to a permission request when nobody is there to ask: ``--approve`` or a policy file.

The session's mode decides what is asked (``tools.policy``, the same as in an editor); this decides the answer, at
once, from what the request shows: the tool's kind, the paths it names (``locations``) and, for a command, its text
(``rawInput.command``). The levels:

========  ==================================================================================================
``none``  nothing that would ask an editor's user
``reads`` reading and searching files
``edits`` reads, and edits (``edit``, ``delete``, ``move``) of files inside the session's directories
``all``   everything the session asks about (hard blocks are refused before anything is asked)
========  ==================================================================================================

A path that looks like a secret or a repository's internals (``tools.policy.is_sensitive``: ``.git/``, ``.env*``,
keys) is refused at every level. A policy file (TOML) starts from a level and adds or refuses kinds and commands::

    approve = "reads"                               # the level it starts from (default "none")
    allow_kinds = ["edit"]                          # tool kinds allowed on top of the level
    refuse_kinds = ["fetch"]                        # tool kinds refused whatever the level says
    allow_commands = ["pytest*", "git diff*"]       # commands allowed (shell-style patterns on the whole command)
    refuse_commands = ["git push*", "*--force*"]    # commands refused (they win over every allow)

A refusal wins over an allow; a command that no pattern names follows the level (``all`` allows it). Anything the
policy does not allow is refused: the caller ends the turn (docs/ci.md, exit code 4). Pure: no I/O but reading the
file, no ACP beyond the request's fields.
"""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, get_args

from hermes_acp.core import ToolKind
from hermes_acp.tools.policy import is_sensitive

__all__ = ["LEVELS", "ApprovalPolicy", "Level", "PolicyError", "Verdict"]

Level = Literal["none", "reads", "edits", "all"]
LEVELS: Final[tuple[Level, ...]] = get_args(Level)
_READS: Final[frozenset[str]] = frozenset({"read", "search"})
_EDITS: Final[frozenset[str]] = frozenset({"edit", "delete", "move"})
_KINDS: Final[frozenset[str]] = frozenset(get_args(ToolKind))
_KEYS: Final[frozenset[str]] = frozenset(
    {"approve", "allow_kinds", "refuse_kinds", "allow_commands", "refuse_commands"}
)


class PolicyError(ValueError):
    """The policy file cannot be used: the message names the file and what is wrong."""


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    reason: str


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    level: Level = "none"
    allow_kinds: frozenset[str] = frozenset()
    refuse_kinds: frozenset[str] = frozenset()
    allow_commands: tuple[str, ...] = ()
    refuse_commands: tuple[str, ...] = ()
    roots: tuple[Path, ...] = field(default=())
    """The session's directories (its cwd and ``--add-dir``s), resolved: where ``edits`` may change files."""

    @classmethod
    def load(cls, path: Path, roots: Sequence[Path]) -> ApprovalPolicy:
        """The policy in the TOML file at ``path`` (``PolicyError`` naming what is wrong)."""
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise PolicyError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise PolicyError(f"{path}: not a TOML file: {exc}") from exc
        unknown = sorted(set(data) - _KEYS)
        if unknown:
            raise PolicyError(f"{path}: unknown keys {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})")
        level = data.get("approve", "none")
        if level not in LEVELS:
            raise PolicyError(f"{path}: approve must be one of {', '.join(LEVELS)} (got {level!r})")
        return cls(
            level=level,
            allow_kinds=_kinds(path, data, "allow_kinds"),
            refuse_kinds=_kinds(path, data, "refuse_kinds"),
            allow_commands=_strings(path, data, "allow_commands"),
            refuse_commands=_strings(path, data, "refuse_commands"),
            roots=tuple(roots),
        )

    def decide(self, tool_call: Mapping[str, Any]) -> Verdict:
        """Allow or refuse the ``toolCall`` of a ``session/request_permission``, and why."""
        kind = tool_call.get("kind")
        kind = kind if isinstance(kind, str) else "other"
        paths = _paths(tool_call)
        sensitive = next((p for p in paths if is_sensitive(Path(p))), None)
        if sensitive is not None:
            return Verdict(False, f"{sensitive} is a sensitive path (refused at every level)")
        if kind in self.refuse_kinds:
            return Verdict(False, f"the policy refuses {kind} calls")
        command = _command(tool_call)
        if command is not None:
            refused = next((p for p in self.refuse_commands if fnmatch.fnmatchcase(command, p)), None)
            if refused is not None:
                return Verdict(False, f"the policy refuses commands matching {refused!r}")
            allowed = next((p for p in self.allow_commands if fnmatch.fnmatchcase(command, p)), None)
            if allowed is not None:
                return Verdict(True, f"the policy allows commands matching {allowed!r}")
        if self.level == "all":
            return Verdict(True, "--approve all")
        if kind in self.allow_kinds:
            return Verdict(True, f"the policy allows {kind} calls")
        if kind in _READS and self.level in ("reads", "edits"):
            return Verdict(True, f"--approve {self.level} allows {kind} calls")
        if kind in _EDITS and self.level == "edits":
            outside = next((p for p in paths if not self._inside(Path(p))), None)
            if outside is None and paths:
                return Verdict(True, "--approve edits allows edits inside the session's directories")
            where = f"{outside} is outside the session's directories" if outside else "it names no file"
            return Verdict(False, f"--approve edits allows edits inside the session's directories only; {where}")
        what = f"the command {command!r}" if command is not None else f"a {kind} call"
        return Verdict(False, f"--approve {self.level} does not allow {what}")

    def _inside(self, path: Path) -> bool:
        resolved = path.resolve(strict=False)
        return any(resolved == root or resolved.is_relative_to(root) for root in self.roots)


def _kinds(path: Path, data: Mapping[str, Any], key: str) -> frozenset[str]:
    kinds = _strings(path, data, key)
    unknown = sorted(set(kinds) - _KINDS)
    if unknown:
        raise PolicyError(f"{path}: {key}: unknown kinds {', '.join(unknown)} (kinds: {', '.join(sorted(_KINDS))})")
    return frozenset(kinds)


def _strings(path: Path, data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise PolicyError(f"{path}: {key} must be a list of strings")
    return tuple(value)


def _paths(tool_call: Mapping[str, Any]) -> list[str]:
    locations = tool_call.get("locations")
    if not isinstance(locations, list):
        return []
    return [loc["path"] for loc in locations if isinstance(loc, dict) and isinstance(loc.get("path"), str)]


def _command(tool_call: Mapping[str, Any]) -> str | None:
    """The command a call would run (an ``execute`` call's ``rawInput.command``), stripped."""
    raw = tool_call.get("rawInput")
    command = raw.get("command") if isinstance(raw, dict) else None
    return command.strip() if isinstance(command, str) and tool_call.get("kind") == "execute" else None
