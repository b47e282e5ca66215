"""``RawAgent``: the agent over a bare pipe, for timings the SDK's client would blur (and for frames it cannot read).

It writes JSON-RPC requests itself and reads every line the agent writes, noting when each arrived
(``time.monotonic()``, the clock the fixture model server stamps its records with); ``session/update``s are
decoded only when asked (``keep_updates``), so what ``ask`` times is the server's time and the pipe's. It answers
permission requests ``allow_once``. It knows nothing of which measurements use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .agent import stop_agent

__all__ = ["Arrival", "RawAgent", "raw_agent"]


@dataclass(frozen=True, slots=True)
class Arrival:
    at: float
    """``time.monotonic()`` when the line was read."""
    session_id: str
    update: dict[str, Any]
    cursor: str | None = None
    """The delivery cursor it carried (``_meta.hermes.cursor``)."""


@dataclass
class RawAgent:
    process: asyncio.subprocess.Process
    keep_updates: bool = False
    updates: list[Arrival] = field(default_factory=list)
    """Every ``session/update`` read (with ``keep_updates``)."""
    _ids: int = 0

    async def ask(self, method: str, params: dict[str, Any]) -> tuple[float, int, dict[str, Any]]:
        """Send one request; (milliseconds until its answer, ``session/update``s read meanwhile, the answer)."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self._ids += 1
        request_id = self._ids
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        started = time.perf_counter()
        self.process.stdin.write(json.dumps(frame).encode() + b"\n")
        await self.process.stdin.drain()
        updates = 0
        while line := await self.process.stdout.readline():
            if b'"method":"session/update"' in line[:64]:
                updates += 1
                if self.keep_updates:
                    params_ = json.loads(line)["params"]
                    cursor = params_.get("_meta", {}).get("hermes", {}).get("cursor")
                    self.updates.append(Arrival(time.monotonic(), params_["sessionId"], params_["update"], cursor))
                continue
            message = json.loads(line)
            if message.get("method") == "session/request_permission":
                await self._allow(message)
            elif message.get("id") == request_id and "method" not in message:
                return (time.perf_counter() - started) * 1000, updates, message
        raise RuntimeError(f"the agent closed its stdout before answering {method}")

    async def _allow(self, request: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        answer = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": answer}).encode() + b"\n")
        await self.process.stdin.drain()


@contextlib.asynccontextmanager
async def raw_agent(
    command: Sequence[str], *, env: Mapping[str, str], cwd: Path, keep_updates: bool = False
) -> AsyncIterator[RawAgent]:
    """The agent ``command`` (environment: PATH plus ``env``), stopped on the way out."""
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
        cwd=str(cwd),
        limit=64 * 1024 * 1024,
    )
    try:
        yield RawAgent(process, keep_updates=keep_updates)
    finally:
        await stop_agent(process, grace_s=5)
