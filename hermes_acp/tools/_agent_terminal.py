"""The terminal of a command the agent runs itself: what it streams while the command runs, and what it keeps.

``TerminalStream`` is the ``on_output`` of ``exec.process.run_command`` for one call. Each time the command wrote
something it sends what is new since its last send (``OutputBuffer.since``), decoded as UTF-8 across chunk
boundaries, through the call's terminal channel (``ToolContext.terminal_output``), with the live view a client
without agent-owned terminals shows instead (the end of the output in a code block). A send starts at least
``SEND_INTERVAL_S`` after the previous one ended (the first output after a quiet spell at once, the rest on that
beat), so a command that floods its output costs each card at most 20 updates a second however slow the machine or
the client, and what it wrote reaches the editor within one beat of the last send. What the buffer no longer holds
by the time of a send (a flood faster than its tail) is replaced by a line saying how much was skipped. ``finish``
sends what is left once the command ended, before the call settles, so everything the terminal kept was shown live
first.

The block builders say what the card is before the command runs (``announced``: command and working folder) and
after (``ended``: the output the buffer kept, how the command ended, and the text a client without such terminals
shows). Nothing here knows ACP, the sandbox or the policy.
"""

from __future__ import annotations

import codecs
from pathlib import Path

import anyio

from hermes_acp.core import AgentTerminalBlock, DisplayBlock, TextBlock
from hermes_acp.exec.process import OutputBuffer

from ._text import fence
from .context import ToolContext

__all__ = ["LIVE_VIEW_BYTES", "SEND_INTERVAL_S", "TerminalStream", "announced", "ended"]

SEND_INTERVAL_S = 0.05
"""The beat of a terminal's live updates: at most 20 a second, each at most this late."""
LIVE_VIEW_BYTES = 16 * 1024
"""The end of the output a client without agent-owned terminals sees while the command runs."""


def announced(ctx: ToolContext, command: str, cwd: Path, fallback: list[TextBlock]) -> AgentTerminalBlock:
    """The terminal of a call that is about to run ``command`` in ``cwd`` (its id is the call's)."""
    return AgentTerminalBlock(terminal_id=ctx.tool_call_id, command=command, cwd=str(cwd), fallback=fallback)


def ended(
    start: AgentTerminalBlock,
    *,
    output: str,
    exit_code: int | None,
    signal: str | None,
    note: str | None,
    fallback: list[TextBlock],
) -> AgentTerminalBlock:
    """``start`` once its command ended: what it kept of the output and how the command ended."""
    return start.model_copy(
        update={
            "output": output,
            "ended": True,
            "exit_code": exit_code,
            "signal": signal,
            "note": note,
            "fallback": fallback,
        }
    )


class TerminalStream:
    """The live output of one agent-owned terminal (see the module docstring)."""

    def __init__(self, ctx: ToolContext):
        self._ctx = ctx
        self._sent = 0
        """How many bytes of the output were accounted for (sent or said to be skipped)."""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._next = 0.0
        """The earliest time of the next send (the beat)."""

    async def update(self, buffer: OutputBuffer) -> None:
        """``run_command``'s ``on_output``: send what is new, on the beat."""
        wait = self._next - anyio.current_time()
        if wait > 0:
            await anyio.sleep(wait)
        await self._send(buffer, final=False)

    async def finish(self, buffer: OutputBuffer) -> None:
        """The command ended: send what is left (on the beat)."""
        if buffer.total > self._sent:
            await self.update(buffer)
        await self._send(buffer, final=True)

    async def _send(self, buffer: OutputBuffer, *, final: bool) -> None:
        new, skipped = buffer.since(self._sent)
        self._sent = buffer.total
        text = ""
        if skipped:
            text = self._decoder.decode(b"", final=True) + f"\n[… {skipped:,} bytes of output skipped …]\n"
            self._decoder.reset()
        text += self._decoder.decode(new, final=final)
        if not text:
            return
        view: list[DisplayBlock] = [TextBlock(text=fence(buffer.last(LIVE_VIEW_BYTES)))]
        # Shielded: a send that began reaches every attached client whole, even when the command's end cancels it.
        with anyio.CancelScope(shield=True):
            if self._ctx.terminal_output is not None:
                await self._ctx.terminal_output(text, view)
            else:
                await self._ctx.progress(view)
        # The beat counts from the end of this send, so however long building or sending it took (a loaded machine,
        # a slow client), the next one starts at least a beat after this one ended.
        self._next = anyio.current_time() + SEND_INTERVAL_S
