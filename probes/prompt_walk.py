"""The prompt's walk from the wire to the first ``tool_call`` update, counted on a real run (NOTES.md, "The session
layer").

One warm session (a first turn ran and its title was written), in process over a real connection pair
(``tests/fakes/server.py``), then a prompt whose scripted model answers with one read-only tool call. A profile hook
counts, from the moment the ``session/prompt`` route is entered until the ``tool_call`` update is handed to the
connection's writer: hops (every call into a function of the package; a coroutine's resumption is not a call) and
distinct functions, in all and in the session layer (``sessions/``, ``commands/``, ``subagents/``). Run it with
``.venv/bin/python -m probes.prompt_walk`` (``--list`` prints the walk, one call a line).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import anyio

import hermes_acp
from hermes_acp.core import ToolCallPart
from hermes_acp.providers.scripted import ScriptedProvider, text_reply, tool_reply
from tests.fakes.server import open_pair

PACKAGE = str(Path(hermes_acp.__file__).parent) + "/"
SESSION_LAYER = ("sessions/", "commands/", "subagents/")
_RESUMABLE = 0x20 | 0x80 | 0x200  # generator, coroutine, async generator


class Walk:
    """The calls into the package from the prompt route to the first ``tool_call`` update on the wire."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._on = False
        self._done = False
        self._started: set[int] = set()
        self._frames: list[FrameType] = []
        """Kept alive, so an id in ``_started`` is never reused by another frame."""

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or self._done or not frame.f_code.co_filename.startswith(PACKAGE):
            return
        code = frame.f_code
        name = code.co_filename[len(PACKAGE) :] + ":" + code.co_qualname
        if not self._on:
            if not name.endswith("protocol/agent.py:HermesAgent.prompt"):
                return
            self._on = True
        if code.co_flags & _RESUMABLE:
            if id(frame) in self._started:
                return  # a coroutine resumed, not called
            self._started.add(id(frame))
            self._frames.append(frame)
        self.calls.append(name)
        if name.endswith(".send") and "link.py" in name:
            data = frame.f_locals.get("data")
            if isinstance(data, bytes | str) and (
                '"tool_call"' in data if isinstance(data, str) else b'"tool_call"' in data
            ):
                self._done = True

    @property
    def done(self) -> bool:
        return self._done


async def walk() -> Walk:
    provider = ScriptedProvider(
        [
            text_reply("warm"),
            tool_reply(ToolCallPart(id="call_1", name="list_directory", arguments='{"path": "."}')),
            text_reply("done"),
        ]
    )
    with tempfile.TemporaryDirectory() as folder:
        async with open_pair(Path(folder), provider=provider) as pair:
            session_id = await pair.new_session()
            await pair.prompt(session_id, "first")
            with anyio.fail_after(10):
                while not pair.client.of_kind("session_info_update", session_id):  # the title, written after
                    await pair.client.arrived.wait()
            traced = Walk()
            sys.setprofile(traced)
            try:
                await pair.prompt(session_id, "list the files")
            finally:
                sys.setprofile(None)
    if not traced.done:
        raise RuntimeError("no tool_call update reached the wire")
    return traced


def main() -> None:
    traced = anyio.run(walk)
    layer = [name for name in traced.calls if name.startswith(SESSION_LAYER)]
    print(f"hops {len(traced.calls)}, distinct functions {len(set(traced.calls))}")
    print(f"in the session layer: hops {len(layer)}, distinct functions {len(set(layer))}")
    if "--list" in sys.argv:
        for name in traced.calls:
            print(" ", name)


if __name__ == "__main__":
    main()
