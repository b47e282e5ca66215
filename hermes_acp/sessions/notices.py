"""``SessionNotices``: the warnings a session tells its user about itself, outside what the turn loop tells.

Each one is shown live where the attached clients take notices, else kept as a line of agent text, stored so that a
replay shows it too: ``Recorder.show`` is the one place that decides.

- At a model turn's start (``at_turn``): once per session, commands not sandboxed although ``[sandbox]`` wants them
  to be and a configured cua-driver that cannot be found; every time, MCP servers that could not start (bounded:
  servers still starting are reported, not awaited) and skills skipped (each once). Their texts are stored with the
  turn's prompt. A child's parent was told all this: a child tells nothing.
- Once the session is open (``report_servers``): its MCP servers that could not start (or be used), told between
  turns once they settled (bounded), so a slow server holds up no command; as a turn of their own.
- During a turn (``notify``: an image downgraded to text): in the running turn.
- At any time (``tell``: an MCP server's sign-in page, a sign-in's end): live, else stored as a turn of its own between
  turns (bounded: a turn that runs longer keeps it from being stored; the next turn's notices say what still waits).
- For the model, at a model turn's start (``model_notes``): which MCP servers wait for the user to sign in, each time
  that set changes (so the model knows why their tools are missing and can say so).

It sees the session through ``NoticesView``; it knows neither the prompt queue's work nor ACP.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import anyio

from hermes_acp.commands.skills import SkillShelf
from hermes_acp.core import NoticeAdded, TurnEnded
from hermes_acp.core.ids import new_message_id, new_turn_id
from hermes_acp.core.notice import Notice
from hermes_acp.mcp_client import McpServers
from hermes_acp.subagents.lineage import Inherited, Lineage
from hermes_acp.turns.recorder import Recorder

__all__ = ["NoticesView", "SessionNotices"]


class _Skills(Protocol):
    @property
    def skills(self) -> SkillShelf: ...


class _Locked(Protocol):
    @property
    def lock(self) -> anyio.Lock:
        """Held while a prompt runs: a report between turns takes it."""
        ...


class NoticesView(Protocol):
    @property
    def recorder(self) -> Recorder: ...

    @property
    def mcp(self) -> McpServers: ...

    @property
    def lineage(self) -> Lineage: ...

    @property
    def commands(self) -> _Skills: ...

    @property
    def wiring(self) -> Inherited:
        """The session's sandbox and ``computer_use`` (what the once-per-session notices are about)."""
        ...

    @property
    def queue(self) -> _Locked: ...

    @property
    def turn_id(self) -> str | None:
        """The turn or command running now."""
        ...


class SessionNotices:
    """One session's own warnings (see the module docstring)."""

    def __init__(self, view: NoticesView):
        self._view = view
        self._told_once = False
        self._waiting_told: tuple[str, ...] = ()

    async def at_turn(self) -> list[str]:
        """Before a model turn: the notices of its start shown live; the texts of the others, to store with it."""
        view = self._view
        if view.lineage.link is not None:
            return []
        mcp = [Notice("warning", text.removeprefix("⚠ ")) for text in await view.mcp.prepare_turn()]
        skills = [Notice("warning", problem.text()) for problem in view.commands.skills.new_problems()]
        return await self._show([*await self._once(), *mcp, *skills])

    async def report_servers(self) -> None:
        """Once the session is open: its MCP servers that could not start (or be used), told at once instead of
        with the first prompt. Waits (bounded) for them to settle, then tells in the prompt queue (a turn that ran
        meanwhile told them itself; nothing is told twice)."""
        view = self._view
        if not view.mcp:
            return
        await view.mcp.settled()
        async with view.queue.lock:  # between turns: never inside another turn's text
            notices = [Notice("warning", text.removeprefix("⚠ ")) for text in await view.mcp.prepare_turn(0)]
            texts = await self._show(notices)
            if texts:  # a client without notices: agent text, stored like a command's answer (a replay shows it)
                turn_id = new_turn_id()
                added = [NoticeAdded(turn_id=turn_id, message_id=new_message_id(), text=text) for text in texts]
                await view.recorder.record(*added, TurnEnded(turn_id=turn_id, stop_reason="end_turn"))

    async def notify(self, notice: Notice) -> None:
        """A warning that arises during a turn (an image downgraded to text): live, or stored in the turn."""
        if (turn_id := self._view.turn_id) is not None:
            await self._view.recorder.notice(notice, turn_id=turn_id)

    async def tell(self, notice: Notice) -> None:
        """A notice that arises outside the turns (an MCP sign-in): live, else stored as a turn of its own."""
        view = self._view
        if await view.recorder.show(notice):
            return
        async with view.queue.lock:  # between turns: never inside another turn's text
            turn_id = new_turn_id()
            added = NoticeAdded(turn_id=turn_id, message_id=new_message_id(), text=notice.as_text())
            await view.recorder.record(added, TurnEnded(turn_id=turn_id, stop_reason="end_turn"))

    def model_notes(self) -> list[str]:
        """What the model is told with the prompt of a model turn: the MCP servers that wait for the user to sign in,
        when they are not the ones it was told of last (a child's parent was told)."""
        view = self._view
        if view.lineage.link is not None:
            return []
        waiting = tuple(view.mcp.waiting_for_sign_in())
        if waiting == self._waiting_told:
            return []
        self._waiting_told = waiting
        if not waiting:
            return []
        names = ", ".join(f"'{name}'" for name in waiting)
        login = " or ".join(f"/mcp login {name}" for name in waiting)
        which = f"MCP servers {names} wait" if len(waiting) > 1 else f"MCP server {names} waits"
        return [
            f"[Note from hermes-acp: {which} for the user to sign in ({login}); the tools are offered once the user"
            " has.]"
        ]

    async def _show(self, notices: Sequence[Notice]) -> list[str]:
        recorder = self._view.recorder
        return [notice.as_text() for notice in notices if not await recorder.show(notice)]

    async def _once(self) -> list[Notice]:
        """Once per session, at its first turn: commands not sandboxed although ``[sandbox]`` wants them to be, and
        a configured cua-driver that cannot be found."""
        if self._told_once:
            return []
        self._told_once = True
        sandbox = self._view.wiring.sandbox
        found = [sandbox.notice(await sandbox.availability()), self._view.wiring.computer_use.notice()]
        return [notice for notice in found if notice is not None]
