"""A Zed emulation in raw frames: the real agent process driven the way Zed's ACP client drives it, for terminal cards.

``spawn_zed(tmp_path, scenario)`` starts the scripted model server and ``python -m hermes_acp`` in a temp home (like
``agent_process.spawn_agent``) and speaks JSON-RPC to it line by line, without an SDK, so what is checked is exactly
what went over the pipe. It advertises what Zed does (``fs`` read/write, ``terminal``, ``auth.terminal``,
``_meta {"terminal_output": true, "terminal-auth": true}``) and folds the updates the way Zed's ``acp_thread`` does:

- a ``tool_call`` whose ``_meta.terminal_info`` names a terminal creates a display-only terminal for it (labelled
  with the call's title, in its ``cwd``; a replayed call creates it anew);
- a ``tool_call_update``'s ``_meta.terminal_output.data`` (or ``_meta.terminal_output_delta.data``, for a client
  that advertised that name instead, as codex-acp's clients do) is appended to that terminal and
  ``_meta.terminal_exit`` ends it; content items ``{"type": "terminal"}`` must name a terminal the thread knows
  (Zed rejects others: the emulation records each as a ``problem``);
- the other fields of the card are merged in order, content replaced, as Zed's upsert does.

Permission requests are answered from ``answers`` (option ids, then ``allow_once``); ``fs/*`` go to the disk;
``terminal/*`` must never be asked for (agent-owned terminals are preferred) and are recorded as problems. Every
frame in both directions is kept with its arrival time and checked against the ACP schema at teardown.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from fixtures.model_server import serve_model_server
from probes.agent import stop_agent

from .acp_schema import FrameLog
from .agent_process import EXIT_TIMEOUT_S, FRAME_LIMIT, REPO, START_TIMEOUT_S, TURN_TIMEOUT_S, _config
from .sandbox_pin import DEFAULT_TEST_SANDBOX, SandboxMode, pin_sandbox

__all__ = ["ZED_CAPABILITIES", "DisplayTerminal", "Zed", "spawn_zed"]

ZED_CAPABILITIES: dict[str, Any] = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
    "auth": {"terminal": True},
    "_meta": {"terminal_output": True, "terminal-auth": True},
}


@dataclass
class DisplayTerminal:
    """A terminal as Zed's display-only terminal holds it: label, folder, the bytes written to it, and its exit."""

    label: str
    cwd: str | None
    output: bytearray = field(default_factory=bytearray)
    exit: dict[str, Any] | None = None
    writes: list[tuple[float, int]] = field(default_factory=list)
    """(arrival time on ``time.time()``'s clock, bytes) of each output update."""

    def text(self) -> str:
        return self.output.decode("utf-8", errors="replace")

    def shown(self) -> dict[str, Any]:
        return {"label": self.label, "cwd": self.cwd, "output": self.text(), "exit": self.exit}


class ZedRequestError(Exception):
    def __init__(self, error: dict[str, Any]):
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.error = error


@dataclass
class Zed:
    process: asyncio.subprocess.Process
    home: Path
    workspace: Path
    frames: FrameLog = field(default_factory=FrameLog)
    cards: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """Session → tool call id → the card's merged fields."""
    terminals: dict[tuple[str, str], DisplayTerminal] = field(default_factory=dict)
    """(session, terminal id) → the display terminal."""
    problems: list[str] = field(default_factory=list)
    permissions: list[dict[str, Any]] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    updates: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    """(arrival time, session, update) of every ``session/update``."""
    _pending: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    _ids: int = 0
    arrived: anyio.Event = field(default_factory=anyio.Event)

    # -- writing -------------------------------------------------------------------------------------------------

    async def _write(self, message: dict[str, Any]) -> None:
        self.frames.add("to_agent", message)
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()

    async def request(self, method: str, params: dict[str, Any], *, timeout: float = START_TIMEOUT_S) -> Any:
        self._ids += 1
        request_id = self._ids
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = answer
        await self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        with anyio.fail_after(timeout):
            message = await answer
        if "error" in message:
            raise ZedRequestError(message["error"])
        return message.get("result")

    async def initialize(self, capabilities: dict[str, Any] | None = None) -> Any:
        return await self.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": ZED_CAPABILITIES if capabilities is None else capabilities,
                "clientInfo": {"name": "zed", "title": "Zed", "version": "0.230.0"},
            },
        )

    async def new_session(self) -> str:
        result = await self.request("session/new", {"cwd": str(self.workspace), "mcpServers": []})
        return str(result["sessionId"])

    async def load_session(self, session_id: str) -> Any:
        self.cards.pop(session_id, None)
        params = {"sessionId": session_id, "cwd": str(self.workspace), "mcpServers": []}
        return await self.request("session/load", params, timeout=TURN_TIMEOUT_S)

    async def set_mode(self, session_id: str, mode_id: str) -> Any:
        return await self.request("session/set_mode", {"sessionId": session_id, "modeId": mode_id})

    async def cancel(self, session_id: str) -> None:
        await self._write({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}})

    async def prompt(self, session_id: str, text: str) -> Any:
        params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        return await self.request("session/prompt", params, timeout=TURN_TIMEOUT_S)

    # -- what the thread shows -----------------------------------------------------------------------------------

    def card(self, session_id: str, call_id: str) -> dict[str, Any]:
        """A tool call as the thread shows it: its fields, and the terminal it shows (if its content names one)."""
        card = dict(self.cards[session_id][call_id])
        shown = [item["terminalId"] for item in card.get("content", []) if item.get("type") == "terminal"]
        card["terminal"] = self.terminals[(session_id, shown[0])].shown() if shown else None
        return card

    def terminal(self, session_id: str, terminal_id: str) -> DisplayTerminal:
        return self.terminals[(session_id, terminal_id)]

    async def wait_for(self, predicate: Any, timeout: float = 20.0) -> None:
        with anyio.fail_after(timeout):
            while not predicate():
                await self.arrived.wait()

    # -- reading ------------------------------------------------------------------------------------------------

    async def read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            now = time.time()
            message = json.loads(line)
            self.frames.add("to_client", message)
            if "method" not in message:
                waiter = self._pending.pop(message.get("id"), None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(message)
            elif "id" in message:
                await self._answer(message)
            elif message["method"] == "session/update":
                self._apply(now, message["params"])
            self.arrived.set()
            self.arrived = anyio.Event()

    async def _answer(self, message: dict[str, Any]) -> None:
        method, params = message["method"], message.get("params") or {}
        result: dict[str, Any] | None = None
        if method == "session/request_permission":
            self.permissions.append(params)
            self._upsert(params["sessionId"], {"sessionUpdate": "tool_call_update", **params["toolCall"]})
            option = self.answers.pop(0) if self.answers else "allow_once"
            result = {"outcome": {"outcome": "selected", "optionId": option}}
        elif method == "fs/read_text_file":
            result = {"content": Path(params["path"]).read_text()}
        elif method == "fs/write_text_file":
            Path(params["path"]).write_text(params["content"])
            result = {}
        if result is None:
            self.problems.append(f"the agent asked for {method}")
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        await self._write(reply)

    def _apply(self, now: float, params: dict[str, Any]) -> None:
        session_id, update = params["sessionId"], params["update"]
        self.updates.append((now, session_id, update))
        kind = update["sessionUpdate"]
        if kind not in ("tool_call", "tool_call_update"):
            return
        meta = update.get("_meta") or {}
        info = meta.get("terminal_info")
        if kind == "tool_call" and info is not None:
            self.terminals[(session_id, info["terminal_id"])] = DisplayTerminal(update["title"], info.get("cwd"))
        self._upsert(session_id, update)
        output = meta.get("terminal_output") or meta.get("terminal_output_delta")
        if output is not None:
            terminal = self._known(session_id, output["terminal_id"], "terminal_output")
            if terminal is not None:
                data = output["data"].encode("utf-8")
                terminal.output += data
                terminal.writes.append((now, len(data)))
        ending = meta.get("terminal_exit")
        if ending is not None:
            terminal = self._known(session_id, ending["terminal_id"], "terminal_exit")
            if terminal is not None:
                terminal.exit = {"exit_code": ending["exit_code"], "signal": ending["signal"]}

    def _upsert(self, session_id: str, update: dict[str, Any]) -> None:
        for item in update.get("content") or []:
            if item.get("type") == "terminal":
                self._known(session_id, item["terminalId"], "content")
        fields = {k: v for k, v in update.items() if k not in ("sessionUpdate", "_meta")}
        self.cards.setdefault(session_id, {}).setdefault(update["toolCallId"], {}).update(fields)

    def _known(self, session_id: str, terminal_id: str, where: str) -> DisplayTerminal | None:
        terminal = self.terminals.get((session_id, terminal_id))
        if terminal is None:
            self.problems.append(f"{where} names a terminal the thread does not know: {terminal_id}")
        return terminal


@contextlib.asynccontextmanager
async def spawn_zed(
    tmp_path: Path,
    scenario: dict[str, Any],
    *,
    home: Path | None = None,
    config_extra: str = "",
    initialize: bool = True,
    sandbox: SandboxMode | None = DEFAULT_TEST_SANDBOX,
) -> AsyncIterator[Zed]:
    """The real agent, driven by the Zed emulation (``initialize``: send Zed's ``initialize`` first; ``sandbox``:
    the ``[sandbox] mode`` pinned unless ``config_extra`` sets one, as ``spawn_agent`` does)."""
    home = home or tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    async with serve_model_server(scenario) as model:
        config = _config(model.openai_base_url, '["m", "m2"]', 0) + config_extra
        (home / "config.toml").write_text(pin_sandbox(config, sandbox))
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "HERMES_ACP_HOME": str(home),
            "PYTHONPATH": str(REPO),
        }
        with (tmp_path / "agent-stderr.log").open("ab") as stderr:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "hermes_acp", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=stderr, env=env, cwd=str(workspace), limit=FRAME_LIMIT,
            )  # fmt: skip
        zed = Zed(process, home, workspace)
        async with anyio.create_task_group() as tg:
            tg.start_soon(zed.read)
            try:
                if initialize:
                    await zed.initialize()
                yield zed
            finally:
                await stop_agent(process, EXIT_TIMEOUT_S)
                tg.cancel_scope.cancel()
    zed.frames.check()
    assert not zed.problems, zed.problems
