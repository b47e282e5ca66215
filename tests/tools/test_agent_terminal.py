"""The agent-owned terminal of a local command: what streams (each byte once, in order, whole characters, a flood
skipped with a note, each send a beat after the last one ended however slow the sends) and what the settlement keeps
(the same text, the exit, the fallback for clients without such terminals)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from hermes_acp.core import AgentTerminalBlock, DisplayBlock, TextBlock
from hermes_acp.exec.process import OutputBuffer
from hermes_acp.tools._agent_terminal import SEND_INTERVAL_S, TerminalStream
from hermes_acp.tools.terminal import TerminalTool

from .helpers import call, context

pytestmark = pytest.mark.anyio


@dataclass
class Terminal:
    sends: list[tuple[float, str, list[DisplayBlock]]] = field(default_factory=list)

    async def __call__(self, data: str, fallback: list[DisplayBlock]) -> None:
        self.sends.append((anyio.current_time(), data, fallback))

    def text(self) -> str:
        return "".join(data for _, data, _ in self.sends)


def _stream(tmp_path: Path) -> tuple[TerminalStream, Terminal]:
    terminal = Terminal()
    ctx = context(tmp_path)
    ctx.terminal_output = terminal
    return TerminalStream(ctx), terminal


async def test_every_byte_streams_once_in_order_and_characters_stay_whole(tmp_path: Path) -> None:
    stream, terminal = _stream(tmp_path)
    buffer = OutputBuffer(64, 1024)
    for chunk in (b"caf", b"\xc3", b"\xa9 ", b"\xf0\x9f", b"\x8e\x89 done\n"):
        buffer.add(chunk)
        await stream.update(buffer)
    await stream.finish(buffer)
    assert terminal.text() == "café 🎉 done\n" == buffer.text()
    assert all("\ufffd" not in data for _, data, _ in terminal.sends)
    (_, _, view) = terminal.sends[-1]
    assert isinstance(view[0], TextBlock) and "café 🎉 done" in view[0].text, "the fallback view is the output's end"


async def test_a_flood_faster_than_the_buffer_is_skipped_with_a_note(tmp_path: Path) -> None:
    stream, terminal = _stream(tmp_path)
    buffer = OutputBuffer(4, 8)
    buffer.add(b"head")
    await stream.update(buffer)
    buffer.add(b"x" * 100 + b"the end\n")
    await stream.finish(buffer)
    assert terminal.text() == "head\n[… 100 bytes of output skipped …]\nthe end\n"


@dataclass
class SlowTerminal:
    """A client that takes ``busy_s`` of the event loop's time over each send (a loaded machine, a slow pipe)."""

    busy_s: float
    spans: list[tuple[float, float]] = field(default_factory=list)

    async def __call__(self, data: str, fallback: list[DisplayBlock]) -> None:
        began = anyio.current_time()
        while anyio.current_time() - began < self.busy_s:
            pass
        self.spans.append((began, anyio.current_time()))


async def test_a_send_starts_a_beat_after_the_last_one_ended_however_slow_the_sends(tmp_path: Path) -> None:
    terminal = SlowTerminal(busy_s=SEND_INTERVAL_S / 4)
    ctx = context(tmp_path)
    ctx.terminal_output = terminal
    stream = TerminalStream(ctx)
    buffer = OutputBuffer(1024, 1024)
    for index in range(4):
        buffer.add(f"line {index}\n".encode())
        await stream.update(buffer)
    await stream.finish(buffer)
    assert len(terminal.spans) == 4
    gaps = [start - end for (_, end), (start, _) in itertools.pairwise(terminal.spans)]
    assert all(gap >= SEND_INTERVAL_S * 0.99 for gap in gaps), gaps


async def test_a_local_command_ends_its_terminal_with_what_streamed_and_how_it_exited(tmp_path: Path) -> None:
    terminal = Terminal()
    ctx = context(tmp_path)
    ctx.terminal_output = terminal
    called = await call(TerminalTool(), ctx, command="echo one; echo two >&2; exit 4")
    (ended,) = called.outcome.content
    assert isinstance(ended, AgentTerminalBlock) and ended.ended
    assert (ended.terminal_id, ended.cwd) == ("call_test", str(tmp_path))
    assert ended.command == "echo one; echo two >&2; exit 4"
    assert ended.output == terminal.text() == "one\ntwo\n"
    assert (ended.exit_code, ended.signal, ended.note) == (4, None, None)
    assert [b.text for b in ended.fallback] == ["Exit code 4.\n```\none\ntwo\n```"]
    assert called.text == "Exit code 4.\none\ntwo"
