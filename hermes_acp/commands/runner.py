"""``CommandRunner``: one session's slash commands — the set it offers, the one a prompt names, and running it.

The set (``set``) is the built-in commands (``builtins.BUILT_INS``), the session's prompt files, its skills
(``skills``, found in the background when the session opens) and its MCP servers' prompts. They are looked at again
when each prompt starts and when it ends (``refresh``): a stamp of their folders (``stamps``, in a worker thread) and
the servers' ``prompts_version`` say whether anything changed, and only then are the prompt files read and the skills
rescanned; the editors are told (bounded) when the list changed. ``follow_servers`` looks again each time the
servers' prompts change between prompts (a server that became ready, or signed in). ``listing`` is what an editor is
first told, once the first scan of the skills is done.

``run`` runs the command a prompt names, inside the session's prompt queue: a prompt file's text (its arguments in)
or a skill's instructions come back as an ``Ask`` (a model turn the session runs); a built-in command or an MCP
prompt (``mcp_prompts``: its text as an ``Ask``, or a ``Reply`` saying why not) runs in a
command turn of its own (``turn_id``), and a ``Reply`` is stored like a turn the model never sees, in one write (the
user's line, the answer through the sanitizer, what the command did that the log keeps, the turn's end). While the
session works, ``/status`` is answered at once and ``/rewind`` / ``/undo`` are refused at once (``at_once``,
``answer_at_once``), without waiting in the queue.

It reaches the session through ``CommandView`` only; it knows neither the prompt queue nor the turn loop nor ACP.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import anyio.to_thread
import structlog

from hermes_acp.core import (
    DisplayBlock,
    NoticeAdded,
    Rewound,
    TextBlock,
    TextPart,
    TurnEnded,
    UserMessage,
    UserPrompted,
)
from hermes_acp.core.ids import new_message_id, new_turn_id
from hermes_acp.core.sanitize import clean_text

from .builtins import BUILT_INS
from .command_set import Ask, Command, CommandSet, Invocation, Outcome, Reply, parse_command
from .mcp_prompts import run_prompt
from .prompt_files import MAX_FILES, PromptFile, expand, load_prompt_files, prompt_folders
from .skills import MAX_SKILLS, SKILL_FILE, SkillShelf, skill_text
from .stamps import Stamp, stamp
from .status import session_status
from .view import CommandView

__all__ = ["AT_ONCE", "BUSY_REWIND", "CommandRunner"]

_HANDLERS = {built_in.command.name: built_in.run for built_in in BUILT_INS}
_log = structlog.get_logger("hermes_acp.sessions")
AT_ONCE = frozenset({"status", "rewind", "undo"})
"""Commands answered without waiting for the running turn (a rewind needs an idle session: refused at once)."""
BUSY_REWIND = (
    "Cannot rewind while a turn runs or prompts wait: wait for the turn to end, or cancel it first, then rewind."
)


class CommandRunner:
    """One session's slash commands (see the module docstring)."""

    def __init__(self, view: CommandView, files: Sequence[PromptFile], skills: SkillShelf):
        self._view = view
        self.skills = skills
        """The session's skills: found in the background when it opens, looked at again around every prompt."""
        self.set = CommandSet([built_in.command for built_in in BUILT_INS], files)
        """The commands: the built-in ones, the prompt files, the skills."""
        self.turn_id: str | None = None
        """The built-in command running now (what its own events are stored in)."""
        self._stamp: Stamp | None = None

    def find(self, display: Sequence[DisplayBlock]) -> Invocation | None:
        """The command the prompt names, if it is exactly one of the set's."""
        return self.set.find(display)

    def at_once(self, display: Sequence[DisplayBlock]) -> Invocation | None:
        """The prompt names a command answered without waiting for the running turn (built-in: no rescan needed)."""
        parsed = parse_command(display)
        if parsed is None or parsed[0] not in AT_ONCE:
            return None
        return self.set.find(display)

    async def listing(self) -> Sequence[Command]:
        """The commands once the first scan of the skills is done (what an editor is first told)."""
        await self.ensure()
        return self.set.listing

    async def ensure(self) -> None:
        """Wait for the first scan of the skills (the system prompt lists them); the set takes them."""
        await self.skills.ensure()
        self.set = self.set.with_files(self.set.files, self.skills.skills, self._view.mcp.prompts())

    async def refresh(self) -> None:
        """Read the prompt files and the skills again when a stamp of their folders changed, and take the MCP
        servers' prompts when they did; tell the editors (bounded) when the list of commands changed."""
        mcp = self._view.mcp
        now = (self.skills.scanned, mcp.prompts_version, *await anyio.to_thread.run_sync(self._stamp_now))
        if now == self._stamp:
            return
        self._stamp = now
        workspace, home = self._view.workspace, self._view.services.settings.home
        files = await load_prompt_files(workspace.cwd, home)
        if self.skills.scanned:
            await self.skills.rescan()
        before = self.set.listing
        self.set = self.set.with_files(files, self.skills.skills, mcp.prompts())
        if self.set.listing != before:
            await self._view.audience.commands_changed(self.set.listing)

    async def follow_servers(self) -> None:
        """Until cancelled: look at the commands again each time the MCP servers' prompts changed (a server that
        became ready or signed in; a list the servers said changed, taken at a turn's start)."""
        mcp = self._view.mcp
        seen = mcp.prompts_version
        while True:
            await mcp.changed()
            if mcp.prompts_version == seen:
                continue
            seen = mcp.prompts_version
            try:
                await self.refresh()
            except Exception:  # a folder that cannot be read: the next prompt's refresh says so
                _log.warning("the commands could not be looked at again after the MCP prompts changed", exc_info=True)

    def _stamp_now(self) -> Stamp:
        workspace, home = self._view.workspace, self._view.services.settings.home
        files = stamp(prompt_folders(workspace.cwd, home), limit=MAX_FILES)
        return (*files, *stamp(self.skills.folders, member=SKILL_FILE, limit=MAX_SKILLS))

    async def run(
        self,
        invocation: Invocation,
        display: list[DisplayBlock],
        input_id: str | None,
        message_id: str | None = None,
    ) -> Outcome:
        """Run the command ``invocation`` names: an ``Ask`` for a model turn (a prompt file's text or a skill's
        instructions, its arguments in; or a built-in's), else the built-in's ``Reply``, stored already (the user's
        line under ``message_id``, when given)."""
        if invocation.file is not None:
            return Ask(expand(invocation.file.template, invocation.argument))
        if invocation.skill is not None:
            text = await anyio.to_thread.run_sync(skill_text, invocation.skill)
            return Ask(expand(f"Use this skill for the request.\n\n{text}", invocation.argument))
        turn_id = self.turn_id = new_turn_id()
        try:
            if invocation.prompt is not None:
                name = invocation.command.name
                outcome = await run_prompt(self._view.mcp, name, invocation.prompt, invocation.argument)
            else:
                outcome = await _HANDLERS[invocation.command.name](self._view, invocation.argument)
            if isinstance(outcome, Reply):
                await self._reply(display, outcome, turn_id, input_id, message_id)
                if any(isinstance(event, Rewound) for event in outcome.events):
                    await self._view.rewinds.refold()
        finally:
            self.turn_id = None
        return outcome

    async def answer_at_once(
        self, invocation: Invocation, display: list[DisplayBlock], message_id: str | None = None
    ) -> None:
        """``/status`` while the session works, or the refusal of a rewind: answered and stored now."""
        text = session_status(self._view) if invocation.command.name == "status" else BUSY_REWIND
        await self._reply(display, Reply(text), new_turn_id(), None, message_id)

    async def _reply(
        self,
        display: list[DisplayBlock],
        reply: Reply,
        turn_id: str,
        input_id: str | None,
        message_id: str | None = None,
    ) -> None:
        """Store a command the session answered itself like a turn the model never sees, in one write: the user's
        line, the answer (which may quote servers' and files' words: it passes the sanitizer), what the command
        itself did that the log keeps (a compaction), the turn's end."""
        typed = "".join(b.text for b in display if isinstance(b, TextBlock))
        answer = [NoticeAdded(turn_id=turn_id, message_id=new_message_id(), text=clean_text(reply.text))]
        await self._view.recorder.record(
            UserPrompted(
                turn_id=turn_id,
                message_id=message_id or new_message_id(),
                display=display,
                message=UserMessage(parts=[TextPart(text=typed)]),
                for_model=False,
                input_id=input_id,
            ),
            *(answer if reply.text else []),
            *reply.events,
            TurnEnded(turn_id=turn_id, stop_reason="end_turn"),
        )
