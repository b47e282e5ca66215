"""The users of the one supervised MCP connection, behind one interface, for the shared at-most-once suite. Not a
test module.

Each ``User`` makes calls the way the model does (through the tool, errors as codes) against a fixture with a fault
planted, and reports what really happened from the fixture's own oracle:

- ``mcp-memory``: the editor's MCP server (``McpServers`` and its ``ServerConnection``) against the in-memory server
  of ``tests/fakes/mcp_wire.py``, opened through the connection's ``open_wire`` seam: a mutation is ``add_note``
  (or ``sleep`` / ``crash`` for the faults), a read ``echo`` (or ``flaky_lookup``); the server counts starts and
  calls. No process and no real second passes: its timeouts are short values. Over real transports the same rules
  are tested in ``test_connections.py`` (stdio) and ``test_transports.py`` (streamable HTTP and SSE, with a gateway
  that loses answers after forwarding);
- ``cua-driver``: computer_use's ``DriverClient`` against ``fixtures.cua_driver_sim`` (a real process) with a fault
  plan: a mutation is a click (after a capture), a read ``list_windows``; its journal holds every delivered input.

A fault fires on the first call of its kind only (``once``) or on the first call of every new connection
(``always``): the fixtures count per server, so a plan the driver reads at start is emptied once it ran.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio

from hermes_acp.errors import ToolError
from hermes_acp.mcp_client import McpServers, McpTimeouts, SupervisedConnection
from tests.computer_use.support import Desk, open_desk
from tests.fakes.mcp_wire import MemoryMcpServer
from tests.mcp.support import START_S, find_tool, run_tool

__all__ = ["KINDS", "Fault", "Kind", "Times", "User", "open_user"]

Kind = Literal["mcp-memory", "cua-driver"]
KINDS: tuple[Kind, ...] = ("mcp-memory", "cua-driver")
Fault = Literal["none", "mutation_hangs", "mutation_drops", "read_hangs", "read_drops"]
Times = Literal["once", "always"]
MEMORY_TIMEOUTS = McpTimeouts(connect_s=5.0, call_s=1.0, list_s=5.0)
"""The in-memory server answers in microseconds: a hang is noticed after 1 s (the bound is also every call's that
succeeds, so it leaves room for a stalled machine)."""
DRIVER_CALL_S = 1.5
"""The simulated driver is a real process answering in milliseconds: a hang is noticed after 1.5 s."""


class User(Protocol):
    kind: Kind

    async def mutate(self) -> str | None:
        """One mutating call: None when it succeeded, else the error code the model got."""

    async def read(self) -> str | None:
        """One replay-safe read: None when it succeeded, else the error code the model got."""

    def performed(self) -> int:
        """Mutations the server really performed (its oracle)."""

    def read_attempts(self) -> int | None:
        """Times the server received the faulted read (its oracle), when it keeps count."""

    @property
    def link(self) -> SupervisedConnection[Any]: ...

    async def kill_server(self) -> None:
        """SIGKILL the server process between calls, and wait (bounded) until the connection noticed."""


async def _code(call: Any) -> str | None:
    try:
        outcome = await call
    except ToolError as exc:
        return exc.code
    return outcome.error_code if outcome.failed else None


@dataclass
class _McpUser:
    kind: Kind
    tmp_path: Path
    servers: McpServers
    server: MemoryMcpServer
    fault: Fault
    times: Times
    _mutations: int = 0
    _reads: int = 0

    @property
    def link(self) -> SupervisedConnection[Any]:
        return self.servers.connections[0].link

    def _tool(self, name: str) -> Any:
        return find_tool(self.servers, f"mcp__fixture__{name}")

    def _fires(self, count: int) -> bool:
        return count == 1 or self.times == "always"

    async def mutate(self) -> str | None:
        self._mutations += 1
        fires = self._fires(self._mutations)
        if fires and self.fault == "mutation_hangs":
            return await _code(run_tool(self.tmp_path, self._tool("sleep"), seconds=600))
        if fires and self.fault == "mutation_drops":
            return await _code(run_tool(self.tmp_path, self._tool("crash")))
        return await _code(run_tool(self.tmp_path, self._tool("add_note"), text=f"note {self._mutations}"))

    async def read(self) -> str | None:
        self._reads += 1
        if self._fires(self._reads) and self.fault in ("read_hangs", "read_drops"):
            how = "hang" if self.fault == "read_hangs" else "crash"
            lookup = self._tool("flaky_lookup")
            fail_first = 1 if self.times == "once" else 10
            return await _code(run_tool(self.tmp_path, lookup, key=f"k{self._reads}", fail_first=fail_first, how=how))
        return await _code(run_tool(self.tmp_path, self._tool("echo"), text="read"))

    def performed(self) -> int:
        return self.server.count("add_note", "sleep", "crash")

    def read_attempts(self) -> int | None:
        return self.server.count("flaky_lookup", "echo")

    async def kill_server(self) -> None:
        self.server.kill()
        with anyio.fail_after(START_S):
            await self.link.wait_for(lambda link: link.state == "down")


@dataclass
class _DriverUser:
    kind: Kind
    desk: Desk
    plan: Path
    fault: Fault
    times: Times
    labels: dict[str, int] = field(default_factory=dict)

    @property
    def link(self) -> SupervisedConnection[Any]:
        link = self.desk.cu.driver.link
        assert link is not None, "the driver was started by the first call"
        return link

    async def mutate(self) -> str | None:
        labels = await self.desk.capture("Calculator")
        return await _code(self.desk.act(action="click", element=labels["7"]))

    async def read(self) -> str | None:
        return await _code(self.desk.act(action="list_windows"))

    def performed(self) -> int:
        return len(self.desk.journal())

    def read_attempts(self) -> int | None:
        return None  # the simulated driver journals delivered inputs only

    async def kill_server(self) -> None:
        os.kill(self.desk.state()["driver"]["pid"], signal.SIGKILL)
        with anyio.fail_after(START_S):
            await self.link.wait_for(lambda link: link.state == "down")


def _driver_plan(fault: Fault) -> list[dict[str, object]]:
    plans: dict[Fault, list[dict[str, object]]] = {
        "none": [],
        "mutation_hangs": [{"knob": "timeout_after_perform", "tool": "click", "delay": "never", "nth": 1}],
        "mutation_drops": [{"knob": "drop_transport", "tool": "click", "when": "after", "nth": 1}],
        "read_hangs": [{"knob": "timeout_before_perform", "tool": "list_windows", "delay": "never", "nth": 1}],
        "read_drops": [{"knob": "drop_transport", "tool": "list_windows", "when": "before", "nth": 1}],
    }
    return plans[fault]


@asynccontextmanager
async def open_user(kind: Kind, tmp_path: Path, fault: Fault = "none", times: Times = "once") -> AsyncIterator[User]:
    """A started user of ``kind`` with ``fault`` planted (its first call is made already)."""
    if kind == "cua-driver":
        plan = tmp_path / "faults.json"
        plan.write_text(json.dumps(_driver_plan(fault)))
        config = f"[computer_use]\ncall_timeout_s = {DRIVER_CALL_S}\n"
        async with open_desk(tmp_path, faults=plan, config=config) as desk:
            assert await _code(desk.act(action="list_apps")) is None  # the first driver is running with the plan
            if times == "once":
                plan.write_text("[]")
            yield _DriverUser(kind, desk, plan, fault, times)
        return
    server = MemoryMcpServer()
    spec = {"name": "fixture", "command": "memory", "args": [], "env": []}
    cwd = tmp_path / "workspace"
    cwd.mkdir(exist_ok=True)
    servers = McpServers([spec], cwd=cwd, timeouts=MEMORY_TIMEOUTS, open_wire=server.open_wire)
    async with servers.running():
        with anyio.fail_after(START_S):
            await servers.prepare_turn(wait_s=START_S)
        yield _McpUser(kind, tmp_path, servers, server, fault, times)
