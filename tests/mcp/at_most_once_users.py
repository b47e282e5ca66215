"""The users of the one supervised MCP connection, behind one interface, for the shared at-most-once suite. Not a
test module.

Each ``User`` makes calls the way the model does (through the tool, errors as codes) against a real fixture with
a fault planted, and reports what really happened from the fixture's own oracle:

- ``mcp-stdio``: the editor's MCP server (``ServerConnection``) against ``fixtures.mcp_server`` over stdio: a
  mutation is ``add_note`` (or ``sleep`` / ``crash`` for the faults), a read ``echo`` (or ``flaky_lookup``); the
  journal counts starts and calls;
- ``mcp-http``: the same server over streamable HTTP, behind ``tests/mcp/gateway.py`` that answers 502/504 after
  forwarding (a lost answer over HTTP); the server cannot be respawned, so "the server dies" is not played;
- ``cua-driver``: computer_use's ``DriverClient`` against ``fixtures.cua_driver_sim`` with a fault plan: a mutation
  is a click (after a capture), a read ``list_windows``; its journal holds every delivered input.

A fault fires on the first call of its kind only (``once``) or on the first call of every new connection
(``always``): the fixtures count per process, so a plan the driver reads at start is emptied once it ran.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio

from fixtures.mcp_server import read_journal, serve_http, stdio_spec
from hermes_acp.errors import ToolError
from hermes_acp.mcp_client import McpServers, McpTimeouts, SupervisedConnection
from tests.computer_use.support import Desk, open_desk
from tests.mcp.gateway import Gateway, gateway
from tests.mcp.support import START_S, find_tool, run_tool, running

__all__ = ["KINDS", "Fault", "Kind", "Times", "User", "open_user"]

Kind = Literal["mcp-stdio", "mcp-http", "cua-driver"]
KINDS: tuple[Kind, ...] = ("mcp-stdio", "mcp-http", "cua-driver")
Fault = Literal["none", "mutation_hangs", "mutation_drops", "read_hangs", "read_drops"]
Times = Literal["once", "always"]
CALL_S = 1.0
"""The call timeout under test: a hang is noticed after it."""


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
    journal: Path
    fault: Fault
    times: Times
    gateway: Gateway | None = None
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
        if fires and self.fault == "mutation_drops" and self.gateway is None:
            return await _code(run_tool(self.tmp_path, self._tool("crash")))
        return await _code(run_tool(self.tmp_path, self._tool("add_note"), text=f"note {self._mutations}"))

    async def read(self) -> str | None:
        self._reads += 1
        fires = self._fires(self._reads)
        over_gateway = self.gateway is not None and self.fault == "read_drops"
        if fires and self.fault in ("read_hangs", "read_drops") and not over_gateway:
            how = "hang" if self.fault == "read_hangs" else "crash"
            lookup = self._tool("flaky_lookup")
            fail_first = 1 if self.times == "once" else 10
            return await _code(run_tool(self.tmp_path, lookup, key=f"k{self._reads}", fail_first=fail_first, how=how))
        return await _code(run_tool(self.tmp_path, self._tool("echo"), text="read"))

    def performed(self) -> int:
        calls = read_journal(self.journal).calls()
        return len([c for c in calls if c["tool"] in ("add_note", "sleep", "crash")])

    def read_attempts(self) -> int | None:
        calls = read_journal(self.journal).calls()
        return len([c for c in calls if c["tool"] in ("flaky_lookup", "echo")])

    async def kill_server(self) -> None:
        os.kill(read_journal(self.journal).pids[-1], signal.SIGKILL)
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
        config = f"[computer_use]\ncall_timeout_s = {CALL_S / 2}\n"
        async with open_desk(tmp_path, faults=plan, config=config) as desk:
            assert await _code(desk.act(action="list_apps")) is None  # the first driver is running with the plan
            if times == "once":
                plan.write_text("[]")
            yield _DriverUser(kind, desk, plan, fault, times)
        return
    journal = tmp_path / "journal.jsonl"
    timeouts = McpTimeouts(connect_s=START_S, call_s=CALL_S, list_s=START_S)
    async with AsyncExitStack() as stack:
        if kind == "mcp-stdio":
            servers = await stack.enter_async_context(running(tmp_path, [stdio_spec("fixture", journal)], timeouts))
            yield _McpUser(kind, tmp_path, servers, journal, fault, times)
            return
        server = await stack.enter_async_context(serve_http("http", journal))
        lost = [502] if times == "once" else [502] * 10
        failures = {
            "add_note": lost if fault == "mutation_drops" else [],
            "echo": lost if fault == "read_drops" else [],
        }
        gw = await stack.enter_async_context(gateway(server.url, failures))
        spec = {"type": "http", "name": "fixture", "url": gw.url, "headers": []}
        servers = await stack.enter_async_context(running(tmp_path, [spec], timeouts))
        yield _McpUser(kind, tmp_path, servers, journal, fault, times, gateway=gw)
