"""A raw ACP v2 client for tests, on a ``RawPair`` (``tests/fakes/server.py``): every frame read by one task, so a
test can send a request and go on (``send``), wait for its answer (``answer``), for updates (``wait_for``) and
answer the agent's requests (``asks``, ``reply``). Every frame both ways is in the pair's ``FrameLog`` (checked
against the v2 schema and its closed lists when the pair closes)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from .server import RawPair

__all__ = ["V2Peer", "v2_peer"]

WAIT_S = 10.0
INITIALIZE = {"protocolVersion": 2, "info": {"name": "v2-peer", "version": "1.0.0"}, "capabilities": {}}


@dataclass
class V2Peer:
    raw: RawPair
    messages: list[dict[str, Any]] = field(default_factory=list)
    """Everything the agent sent, in order."""
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _arrived: anyio.Event = field(default_factory=anyio.Event)

    async def read(self) -> None:
        while True:
            message = await self.raw.receive(timeout=3600)
            self.messages.append(message)
            self._arrived.set()
            self._arrived = anyio.Event()

    async def send(self, method: str, params: dict[str, Any], *, request_id: Any = None) -> Any:
        """Send a request (an id of its own unless given); its id."""
        request_id = next(self._ids) if request_id is None else request_id
        await self.raw.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.raw.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def answer(self, request_id: Any) -> dict[str, Any]:
        """The agent's whole answer to ``request_id`` (``result`` or ``error``)."""
        await self.wait_for(lambda: self._answer(request_id) is not None)
        found = self._answer(request_id)
        assert found is not None
        return found

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request and return its result (an error answer fails the test)."""
        answer = await self.answer(await self.send(method, params))
        assert "error" not in answer, answer["error"]
        return answer["result"]

    def _answer(self, request_id: Any) -> dict[str, Any] | None:
        return next((m for m in self.messages if "method" not in m and m.get("id") == request_id), None)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = WAIT_S) -> None:
        with anyio.fail_after(timeout):
            while not predicate():
                await self._arrived.wait()

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        return [
            m["params"]["update"]
            for m in self.messages
            if m.get("method") == "session/update" and session_id in (None, m["params"]["sessionId"])
        ]

    def states(self, session_id: str | None = None) -> list[dict[str, Any]]:
        return [u for u in self.updates(session_id) if u["sessionUpdate"] == "state_update"]

    def asks(self, method: str = "session/request_permission") -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("method") == method and "id" in m]

    async def reply(self, ask: dict[str, Any], result: dict[str, Any]) -> None:
        await self.raw.send({"jsonrpc": "2.0", "id": ask["id"], "result": result})

    def index(self, predicate: Callable[[dict[str, Any]], bool]) -> int:
        """Where the first message ``predicate`` holds for came, among all the agent sent."""
        return next(i for i, m in enumerate(self.messages) if predicate(m))


@contextlib.asynccontextmanager
async def v2_peer(raw: RawPair, initialize: dict[str, Any] | None = None) -> AsyncIterator[V2Peer]:
    """A peer reading ``raw``, initialized as a v2 client (``initialize``: other params)."""
    peer = V2Peer(raw)
    async with anyio.create_task_group() as group:
        group.start_soon(peer.read)
        await peer.request("initialize", initialize or INITIALIZE)
        try:
            yield peer
        finally:
            group.cancel_scope.cancel()
