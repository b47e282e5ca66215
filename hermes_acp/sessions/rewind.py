"""Rewind: take a session back to just before one of its user prompts, put the agent's file changes back, and keep
what was cut as a session of its own.

``Rewind`` runs one, on an idle session; ``Rewinds`` is a session's way in (``Session.rewind`` for
``_session/rewind``; ``/rewind`` and ``/undo`` inside their command turn, through the commands' view; the prompts a
rewind can go back to; the projection built again from the log once a rewind is stored):

1. The timeline (``turns.timeline``) is read from the store; the point is a prompt of it the model got.
2. ``plan_files`` folds the file changes of the cut part (the ``FileChange`` records of each ``ToolCallRunning``,
   with how each call settled): per file, its content at that point (the first record's old content) and the
   hashes the agent may have left it with (the last write that happened; an unsettled one may or may not have).
   ``check`` compares the file now: at its old content already, nothing to do; at what the agent left, it is put
   back; anything else means someone else changed it since. The file is reached from the session directory that
   holds it (the file-system root for one the user let the agent write outside them), one component at a time,
   never through a link (``hermes_acp.anchored``, invariant 21): a file whose folder became a link, or whose kind
   changed (a folder where the file was), counts as changed by someone else.
3. Files someone else changed are not overwritten unless the user says so: one permission request lists them
   (its card is part of what the rewind cuts); nobody to ask, or a refusal, leaves them and says so. In
   ``read_only`` mode no file is written.
4. What is cut is kept first: a fork of the log as it stood, titled "<title> (before rewind)" ("… (before rewind
   2)" and on when earlier rewinds of the session kept one of that title), with provenance.
5. The files are written (atomically; a file the agent created is removed), anchored the same way: a link or a
   changed kind on the way is refused, even when the user said to overwrite, and the rewind's message says which
   component; nothing outside is ever written, renamed or deleted. Then the ``Rewound`` event is stored with what
   was restored, what was not and why, and the commands that ran after the point (a rewind cannot undo them). Files
   first: a rewind killed half-way leaves the conversation as it was, and a second one finds the files already put
   back ("nothing to do") and finishes.

It knows the session through ``RewindView``, not ACP.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

import anyio
import structlog

from hermes_acp import anchored
from hermes_acp.commands.command_set import Reply
from hermes_acp.core import (
    FileNotRestored,
    ModeId,
    Rewound,
    SessionEvent,
    TextBlock,
    TitleSet,
    ToolCallRunning,
    ToolCallSettled,
    ToolCallStarted,
)
from hermes_acp.core.ids import new_message_id, new_tool_call_id
from hermes_acp.errors import InvalidParamsError, PermissionDeniedError
from hermes_acp.storage.base import SessionRecord, SessionStore, StoredEvent
from hermes_acp.tools._disk import write_atomically
from hermes_acp.tools.context import Workspace
from hermes_acp.turns.ports import PermissionGate, PermissionQuestion
from hermes_acp.turns.recorder import Recorder
from hermes_acp.turns.timeline import RewindPoint, effective, project, user_prompts

from .records import derived_record

__all__ = ["FileRestore", "Rewind", "RewindView", "Rewinds", "check", "commands_run", "plan_files", "restore"]

_log = structlog.get_logger("hermes_acp.sessions")
ASK_TIMEOUT_S = 600.0
"""Longest a rewind waits for the answer about files someone else changed (then they are left as they are)."""
_HASH_CHUNK = 1024 * 1024
Now = Literal["unchanged", "restore", "changed"]


@dataclass
class FileRestore:
    """One file the cut part changed: what it held at the point, and what the agent may have left in it."""

    path: str
    content: bytes | None
    """Its bytes at the point; None: it did not exist then."""
    target_sha256: str | None
    left_by_agent: set[str | None] = field(default_factory=set)
    """The hashes the file may have now if nobody else touched it (None: absent)."""
    real: str | None = None
    """Where the agent's write went when ``path`` led elsewhere through a link (as its approval resolved it)."""

    @property
    def where(self) -> Path:
        """The file a check reads and a restore writes."""
        return Path(self.real or self.path)


def plan_files(cut: Sequence[SessionEvent]) -> list[FileRestore]:
    """Per file the cut part's file tools changed, in the order first changed: where to put it back to."""
    written = {e.tool_call_id: _written(e) for e in cut if isinstance(e, ToolCallSettled)}
    plans: dict[str, FileRestore] = {}
    for event in cut:
        if not isinstance(event, ToolCallRunning):
            continue
        for change in event.file_changes:
            plan = plans.get(change.path)
            if plan is None:
                before = {change.before_sha256}
                plan = FileRestore(change.path, change.before_bytes(), change.before_sha256, before, change.real_path)
                plans[change.path] = plan
            happened = written.get(event.tool_call_id)  # None: it never settled, so it may or may not have
            if happened is True:
                plan.left_by_agent = {change.after_sha256}
            elif happened is None:
                plan.left_by_agent.add(change.after_sha256)
    return list(plans.values())


def _written(settled: ToolCallSettled) -> bool | None:
    """Whether a settled call's write happened: completed, yes; failed, no, unless its outcome is unknown (the
    server or the store stopped while it ran)."""
    if settled.status == "completed":
        return True
    return None if settled.error_code == "outcome_unknown" else False


def commands_run(cut: Sequence[SessionEvent]) -> list[str]:
    """The commands of the cut part that started (a rewind cannot undo what they did)."""
    ran = {e.tool_call_id for e in cut if isinstance(e, ToolCallRunning)}
    commands = []
    for event in cut:
        if isinstance(event, ToolCallStarted) and event.name == "terminal" and event.tool_call_id in ran:
            raw = event.raw_input
            command = raw.get("command") if isinstance(raw, dict) else None
            commands.append(command if isinstance(command, str) else event.title)
    return commands


def _hash_now(anchor: Path, path: Path) -> str | None:
    """The SHA-256 of the file now; None when absent; ``anchored.Refused`` when a link or a changed kind is on the
    way (a link, a folder where the file was, a folder on its path that became a link or a file)."""
    opened = anchored.open_read(anchor, path)
    if opened is None:
        return None
    digest = hashlib.sha256()
    with opened:
        while chunk := opened.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


async def check(plan: FileRestore, roots: Sequence[Path] = ()) -> Now:
    """Where the file stands: already at its old content, as the agent left it, or changed by someone else (a link
    or a changed kind on its way included). ``roots``: the session's directories (see ``restore``)."""
    where = plan.where
    try:
        now = await anyio.to_thread.run_sync(_hash_now, anchored.anchor_for(where, roots), where)
    except OSError:
        return "changed"
    if now == plan.target_sha256:
        return "unchanged"
    return "restore" if now in plan.left_by_agent else "changed"


def _restore(plan: FileRestore, anchor: Path) -> None:
    if plan.content is None:
        anchored.remove_file(anchor, plan.where)
        return
    write_atomically(plan.where, plan.content, roots=(anchor,))


async def restore(plan: FileRestore, roots: Sequence[Path] = (), shown: Callable[[str], str] = str) -> str | None:
    """Put the file back; None, or why it could not be. The file is reached from the deepest of ``roots`` (the
    session's directories) holding it, else from the file-system root, one component at a time: a link or a changed
    kind on the way is refused (``shown`` names it in the reason)."""
    anchor = anchored.anchor_for(plan.where, roots)
    try:
        await anyio.to_thread.run_sync(_restore, plan, anchor)
    except anchored.Refused as refused:
        return f"{shown(str(refused.component))} {refused.why}, so nothing was written through it"
    except OSError as exc:
        return f"could not be written: {exc.strerror or exc}"
    return None


class RewindOptions(Protocol):
    @property
    def record(self) -> SessionRecord: ...

    @property
    def mode(self) -> ModeId: ...


class RewindServices(Protocol):
    @property
    def store(self) -> SessionStore: ...


class RewindView(Protocol):
    """What a rewind uses of its session."""

    @property
    def id(self) -> str: ...

    @property
    def options(self) -> RewindOptions:
        """The session's record (what the cut part is kept from) and mode (``read_only`` writes no file)."""
        ...

    @property
    def recorder(self) -> Recorder: ...

    @property
    def audience(self) -> PermissionGate:
        """Who is asked about files someone else changed."""
        ...

    @property
    def services(self) -> RewindServices: ...

    @property
    def workspace(self) -> Workspace: ...


@dataclass
class _Outcome:
    restored: list[str] = field(default_factory=list)
    not_restored: list[FileNotRestored] = field(default_factory=list)


class Rewinds:
    """A session's rewinds (see the module docstring)."""

    def __init__(self, view: RewindView):
        self._view = view

    async def points(self) -> list[RewindPoint]:
        """The prompts a rewind can go back to, oldest first."""
        stored = await self._view.services.store.load_events(self._view.id)
        return user_prompts([s.event for s in effective(stored, _event)])

    async def run(self, message_id: str, *, turn_id: str, field_name: str = "messageId") -> Rewound:
        """A rewind of its own (``_session/rewind``), stored in ``turn_id``; ``refold`` once it is."""
        rewound = await Rewind(self._view, turn_id=turn_id).run(message_id, field_name=field_name)
        await self._view.recorder.record(rewound)
        return rewound

    async def reply(self, message_id: str, *, turn_id: str) -> Reply:
        """``/rewind`` and ``/undo``, inside their command turn: the rewind, to be stored with the command."""
        return Reply("", events=(await Rewind(self._view, turn_id=turn_id).run(message_id, field_name="argument"),))

    async def refold(self) -> None:
        """After a rewind: the projection built again from the log's timeline (what the model and ``/status`` see)."""
        events = [stored.event for stored in await self._view.services.store.load_events(self._view.id)]
        self._view.recorder.projection = project(events)


class Rewind:
    """One rewind of ``host`` (see the module docstring)."""

    def __init__(self, host: RewindView, *, turn_id: str):
        self._host = host
        self._turn_id = turn_id

    async def run(self, message_id: str, *, field_name: str = "messageId") -> Rewound:
        host = self._host
        stored = await host.services.store.load_events(host.id)
        timeline = effective(stored, _event)
        events = [s.event for s in timeline]
        point = next((p for p in user_prompts(events) if p.message_id == message_id), None)
        if point is None:
            raise InvalidParamsError(
                f"{field_name}: {message_id!r} is not a prompt of this session that a rewind can go back to"
                " (a user message the model got, not already rewound)",
                field=field_name,
            )
        cut = events[point.index :]
        chosen, left = await self._decide(plan_files(cut))
        moved = await self._keep_cut(stored, message_id)
        outcome = await self._write(chosen, left)
        text = self._text(point, moved, outcome, commands := commands_run(cut))
        return Rewound(
            turn_id=self._turn_id,
            message_id=new_message_id(),
            to_message_id=message_id,
            moved_to=moved.id,
            restored=outcome.restored,
            not_restored=outcome.not_restored,
            commands=commands,
            text=text,
        )

    def _roots(self) -> tuple[Path, ...]:
        """The session's directories a file is reached from: as the session names them, and their real paths."""
        workspace = self._host.workspace
        return (workspace.cwd, *workspace.additional, *workspace.roots)

    async def _decide(self, plans: list[FileRestore]) -> tuple[list[FileRestore], list[FileNotRestored]]:
        """Which files to put back, and which to leave (asking about those someone else changed)."""
        roots = self._roots()
        states = [(plan, await check(plan, roots)) for plan in plans]
        left: list[FileNotRestored] = []
        if self._host.options.mode == "read_only":
            why = "the session is in read_only mode, so no file is written (switch mode and rewind again)"
            return [], [FileNotRestored(path=plan.path, reason=why) for plan, now in states if now != "unchanged"]
        changed = [plan for plan, now in states if now == "changed"]
        overwrite = await self._ask(changed) if changed else False
        if changed and not overwrite:
            why = "changed since by someone else, so it was left as it is"
            left = [FileNotRestored(path=plan.path, reason=why) for plan in changed]
        chosen = [plan for plan, now in states if now == "restore" or (now == "changed" and overwrite)]
        return chosen, left

    async def _write(self, chosen: list[FileRestore], left: list[FileNotRestored]) -> _Outcome:
        outcome = _Outcome(not_restored=list(left))
        roots = self._roots()
        for plan in chosen:
            failed = await restore(plan, roots, self._shown)
            if failed is None:
                outcome.restored.append(plan.path)
            else:
                outcome.not_restored.append(FileNotRestored(path=plan.path, reason=failed))
        return outcome

    async def _ask(self, changed: list[FileRestore]) -> bool:
        """One permission request listing the files someone else changed; True when the user lets the rewind
        overwrite them. Its card is recorded like the agent's own calls (the rewind then cuts it)."""
        host = self._host
        call_id = new_tool_call_id()
        names = [self._shown(plan.path) for plan in changed]
        title = f"Rewind: put back {len(changed)} file{'s' if len(changed) > 1 else ''} changed since by someone else"
        listing = "These files changed after the agent last wrote them; putting them back loses those changes:\n"
        listing += "\n".join(f"- {name}" for name in names)
        raw_input = {"files": [plan.path for plan in changed]}
        await host.recorder.record(
            ToolCallStarted(
                turn_id=self._turn_id,
                tool_call_id=call_id,
                name="rewind_files",
                title=title,
                tool_kind="edit",
                raw_input=raw_input,
                content=[TextBlock(text=listing)],
            )
        )
        question = PermissionQuestion(
            tool_call_id=call_id,
            title=title,
            kind="edit",
            raw_input=raw_input,
            content=[TextBlock(text=listing)],
            offer_always=False,
        )
        answer = "cancelled"
        with anyio.move_on_after(ASK_TIMEOUT_S):
            try:
                answer = await host.audience.ask(question)
            except PermissionDeniedError as exc:
                _log.info("nobody could answer the rewind's question; the changed files are kept", error=str(exc))
        allowed = answer in ("allow_once", "allow_always")
        said = "Put back as asked." if allowed else "Left as they are."
        await host.recorder.record(
            ToolCallSettled(
                turn_id=self._turn_id,
                tool_call_id=call_id,
                status="completed" if allowed else "failed",
                content=[TextBlock(text=said)],
                result=None,
                error_code=None if allowed else "permission_denied",
            )
        )
        return allowed

    async def _keep_cut(self, stored: list[StoredEvent], message_id: str) -> SessionRecord:
        """The session as it stood, kept whole as "<title> (before rewind)", or "… (before rewind N)" when an
        earlier rewind of this log already kept one with that title."""
        host = self._host
        source = host.options.record
        base = f"{host.recorder.projection.title or source.title or 'Session'} (before rewind"
        taken = await self._titles_kept_before(stored)
        title = f"{base})"
        number = 1
        while title in taken:
            number += 1
            title = f"{base} {number})"
        record = derived_record(source, kind="rewind", title=title, message_id=message_id)
        until = stored[-1].seq if stored else 0
        await host.services.store.fork_session(source.id, record, until_seq=until)
        await host.services.store.append_events(record.id, [TitleSet(title=title)])
        return record

    async def _titles_kept_before(self, stored: list[StoredEvent]) -> set[str]:
        """The titles of the sessions earlier rewinds in this log moved their cut part to (those still stored)."""
        titles: set[str] = set()
        for moved in {s.event.moved_to for s in stored if isinstance(s.event, Rewound) and s.event.moved_to}:
            record = await self._host.services.store.get_session(moved)
            if record is not None and record.title:
                titles.add(record.title)
        return titles

    def _shown(self, path: str) -> str:
        try:
            return str(Path(path).relative_to(self._host.workspace.cwd))
        except ValueError:
            return path

    def _text(self, point: RewindPoint, moved: SessionRecord, outcome: _Outcome, commands: list[str]) -> str:
        said = " ".join(point.text.split())
        said = said if len(said) <= 120 else said[:119] + "…"
        lines = [f"Rewound to before «{said}». What came after is kept as the session “{moved.title}”."]
        if outcome.restored:
            lines.append("Files put back: " + ", ".join(self._shown(p) for p in outcome.restored) + ".")
        for item in outcome.not_restored:
            lines.append(f"Not put back: {self._shown(item.path)} ({item.reason}).")
        if commands:
            shown = "; ".join(f"`{c if len(c) <= 200 else c[:199] + '…'}`" for c in commands)
            lines.append(f"Commands that ran after that point (a rewind cannot undo them): {shown}.")
        return "\n".join(lines)


def _event(stored: StoredEvent) -> SessionEvent:
    return stored.event
