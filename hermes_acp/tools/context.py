"""What a running tool may use: ``ToolEnvironment``, what every call of one turn shares (built once per turn by the
session's turn wiring: the session's workspace, cache, image gate and sandbox, who runs its subagents, and the
editor whose prompt the turn serves), and ``ToolContext``, one call's own (its identity, the session's mode, a
progress channel for live output and one for its agent-owned terminal, the editor's file system and terminals when
the client offers them and is still there); and ``ApprovalRequest``, the question a call's ``Approval``
(``approval``) puts to the policy: what the call will do, in the editor's terms.

These are ports (Protocols) and plain data; the turn loop and the protocol layer supply the implementations.
Nothing here knows ACP.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio

from hermes_acp.core import DisplayBlock, ModeId

if TYPE_CHECKING:
    from hermes_acp.exec.sandbox import Sandbox
    from hermes_acp.images.gate import ImageGate

    from .delegation import Subagents

__all__ = [
    "ApprovalRequest",
    "CommandStop",
    "EditorFiles",
    "EditorTerminals",
    "ElicitationAnswer",
    "Elicitor",
    "TerminalExit",
    "ToolContext",
    "ToolEnvironment",
    "Workspace",
]


@dataclass(frozen=True, slots=True)
class Workspace:
    """The session's directories: its cwd plus the editor's additional directories (all absolute); and folders
    outside them the session may read but not change (its skills from ``$HERMES_ACP_HOME/skills``)."""

    cwd: Path
    additional: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()

    @property
    def roots(self) -> tuple[Path, ...]:
        return tuple(Path(os.path.realpath(p)) for p in (self.cwd, *self.additional))

    def resolve(self, path: str) -> Path:
        """An absolute, normalised path (``..`` collapsed); relative paths are taken from the cwd."""
        candidate = Path(os.path.expanduser(path))
        if not candidate.is_absolute():
            candidate = self.cwd / candidate
        return Path(os.path.normpath(candidate))

    def contains(self, path: Path) -> bool:
        """True when ``path`` (after resolving symlinks) lies inside one of the roots."""
        return _inside(path, self.roots)

    def can_read(self, path: Path) -> bool:
        """True when ``path`` (after resolving symlinks) lies inside a root or a readable folder."""
        return _inside(path, (*self.roots, *(Path(os.path.realpath(p)) for p in self.readable)))


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    real = Path(os.path.realpath(path))
    return any(real == root or root in real.parents for root in roots)


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A question for the approval flow: what the call will do, in the editor's terms."""

    scope: str
    """The rule key "always" decisions are remembered under (e.g. ``edit``, ``execute``, ``read@outside``)."""
    title: str
    mutating: bool
    paths: tuple[Path, ...] = ()
    content: list[DisplayBlock] = field(default_factory=list)
    raw_input: Any = None
    always_allowed: bool = True
    """False when "allow always" must not be offered (sensitive paths always ask)."""
    reason: str | None = None
    """Why the question is asked (e.g. "outside the session's directories")."""
    ask_always: bool = False
    """Ask in every mode, without offering "always" (``read_only`` still refuses): a command that would run without
    the sandbox, or that could not be read."""


@dataclass(frozen=True, slots=True)
class TerminalExit:
    exit_code: int | None
    signal: str | None


class EditorFiles(Protocol):
    """The client's ``fs/*`` methods (unsaved buffers, review view)."""

    async def read_text(self, path: Path, *, line: int | None = None, limit: int | None = None) -> str: ...

    async def write_text(self, path: Path, content: str, *, real: Path | None = None) -> None:
        """Write ``content`` to ``path``; ``real``: where the approval resolved it to (the local disk writes there,
        without resolving links again)."""
        ...


class EditorTerminals(Protocol):
    """The client's ``terminal/*`` methods."""

    async def create(
        self, command: str, args: list[str], *, cwd: Path, env: dict[str, str], output_byte_limit: int
    ) -> str: ...

    async def output(self, terminal_id: str) -> tuple[str, bool, TerminalExit | None]:
        """(output so far, truncated, exit status when it has exited)."""
        ...

    async def wait_for_exit(self, terminal_id: str) -> TerminalExit: ...

    async def kill(self, terminal_id: str) -> None: ...

    async def release(self, terminal_id: str) -> None: ...


@dataclass(frozen=True, slots=True)
class ElicitationAnswer:
    """The user's answer to a question: ``accept`` with the form's ``content``, ``decline`` or ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class Elicitor(Protocol):
    """Questions to the user through the editor (ACP ``elicitation/create``, form mode)."""

    async def ask(self, message: str, schema: dict[str, Any], *, tool_call_id: str | None) -> ElicitationAnswer:
        """Ask ``message`` with a form of primitive fields (``schema``); raises ``ToolError`` when it cannot."""
        ...


@dataclass(frozen=True, slots=True)
class ToolEnvironment:
    """What every tool call of one turn shares, built once per turn."""

    session_id: str
    workspace: Workspace
    cache_dir: Path
    images: ImageGate | None = None
    """The session's image gate; every image a tool hands the model should pass through it."""
    sandbox: Sandbox | None = None
    """How commands are contained (``[sandbox]``); None: the defaults (``Sandbox.default()``)."""
    subagents: Subagents | None = None
    """Runs the children of ``delegate`` calls; None where the session may not delegate."""
    editor_files: EditorFiles | None = None
    """The file system of the editor whose prompt the turn serves, when it offers one."""
    editor_terminals: EditorTerminals | None = None
    client_present: Callable[[], bool] | None = None
    """Whether that editor's client is still there; once it is not, each call uses this machine's disk and
    terminal instead (None: the client never goes away during the turn)."""


class CommandStop:
    """A client's stop of one call's command, from the call's announcement until the command can no longer be
    stopped: ``request`` sets ``requested`` (the tool ends the command, or does not start it) while the stop is open;
    the tool ``close``s it once the command has ended or runs where it cannot be stopped (the editor's terminal)."""

    def __init__(self) -> None:
        self.requested = anyio.Event()
        self._open = True

    def request(self) -> bool:
        """Stop the command (again: the same answer); False once it can no longer be stopped."""
        if not self._open:
            return False
        self.requested.set()
        return True

    def close(self) -> None:
        """The command has ended, or runs where it cannot be stopped: later requests are refused."""
        self._open = False

    @property
    def is_open(self) -> bool:
        """A request would still be taken (the command may still run, or has not started)."""
        return self._open


@dataclass(slots=True)
class ToolContext:
    """One tool call's own, with its turn's ``env``. Built by the turn loop for each call."""

    env: ToolEnvironment
    turn_id: str
    tool_call_id: str
    mode: ModeId
    progress: Callable[[list[DisplayBlock]], Awaitable[None]]
    """Replace the call's live content while it runs (transient: not stored, the final result is)."""
    terminal_output: Callable[[str, list[DisplayBlock]], Awaitable[None]] | None = None
    """Append text to the call's agent-owned terminal (its ``AgentTerminalBlock``, the id the call's), with the live
    content a client without such terminals shows instead (transient, like ``progress``). None: only ``progress``."""
    files: EditorFiles | None = None
    """The editor's file system, when its client offers one and was there when the call started."""
    terminals: EditorTerminals | None = None
    """The editor's terminals, likewise."""
    stop: CommandStop | None = None
    """Where a client stops the call's command on its own (ACP v2's ``terminal/cancel`` of its agent-owned
    terminal): the command is ended, or not started, and the call settles with what it printed. None: the command
    stops only with its call or its turn."""
