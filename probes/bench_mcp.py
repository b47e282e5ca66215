"""``make bench`` rows for the MCP client: what a session's connect costs with one OAuth server already signed in
(tokens on disk) beside one stdio server and one plain HTTP server, and the tool-list refresh after a server said
its list changed, on a server with 200 tools.

The connect is ``session/new``'s part of the work, which it does not wait for: from the session's servers starting
(``McpServers.running()``) to the server being ready (connected, initialized, its tools listed) — measured in this
process against the auth fixture (``fixtures/mcp_auth``, in-process on loopback) and the fixture MCP server (a child
process over stdio). The refresh is ``prepare_turn()`` after ``notifications/tools/list_changed``: the list asked
again, the tool surface rebuilt.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from fixtures.mcp_auth import Authority, follow, serve_protected
from fixtures.mcp_server import stdio_spec
from hermes_acp.mcp_client import LinkState, McpServers

__all__ = ["mcp_client_rows", "sign_in_once"]

READY_S = 60.0


class _Browser:
    """The user: opens each sign-in page and approves it."""

    async def open_url(self, server: str, url: str) -> bool:
        await follow(url)
        return True

    async def finished(self, server: str, error: str | None) -> None:
        assert error is None, error


def _entry(url: str, name: str = "remote") -> dict[str, Any]:
    return {"type": "http", "name": name, "url": url, "headers": []}


async def _connect_ms(root: Path, entries: Sequence[Mapping[str, Any]], auth_dir: Path, runs: int) -> list[float]:
    times: list[float] = []
    for _ in range(runs):
        servers = McpServers(entries, cwd=root, auth_dir=auth_dir, sign_in=_Browser())
        started = time.perf_counter()
        async with servers.running():
            with anyio.fail_after(READY_S):
                for conn in servers.connections:
                    await conn.wait_for(lambda c: c.state == LinkState.READY)
            times.append((time.perf_counter() - started) * 1000)
    return times


async def sign_in_once(url: str, auth_dir: Path, name: str = "remote") -> None:
    """Sign in to the protected server at ``url`` as a session of a home whose token folder is ``auth_dir`` would
    (its tokens are then on disk for the agent of that home)."""
    servers = McpServers([_entry(url, name)], cwd=auth_dir.parent, auth_dir=auth_dir, sign_in=_Browser())
    async with servers.running():
        with anyio.fail_after(READY_S):
            for conn in servers.connections:
                await conn.wait_for(lambda c: c.state == LinkState.READY and not c.signing_in)


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ms (min {min(values):.1f})"


async def mcp_client_rows(root: Path, runs: int = 10) -> list[dict[str, str]]:
    root.mkdir(parents=True, exist_ok=True)
    auth_dir = root / "mcp-auth"
    rows: list[dict[str, str]] = []
    await _connect_ms(root, [stdio_spec("warm-up", tools=["echo"])], auth_dir, 1)  # loads the SDK adapter once
    stdio = await _connect_ms(root, [stdio_spec("fixture", tools=["echo"])], auth_dir, runs)
    rows.append({"name": "MCP connect: one stdio server", "value": _ms(stdio), "note": f"median of {runs}"})
    async with serve_protected(protect=False) as plain:
        times = await _connect_ms(root, [_entry(plain.url)], auth_dir, runs)
        rows.append({"name": "MCP connect: one HTTP server, no auth", "value": _ms(times), "note": f"median of {runs}"})
    async with serve_protected() as protected:
        await _connect_ms(root, [_entry(protected.url)], auth_dir, 1)  # signs in once: tokens on disk
        signed = await _connect_ms(root, [_entry(protected.url)], auth_dir, runs)
        rows.append(
            {
                "name": "MCP connect: one OAuth server, signed in",
                "value": _ms(signed),
                "note": f"tokens on disk, valid; median of {runs}; goal ≤ 50 ms over the stdio row",
            }
        )
    due = Authority(access_ttl=30)  # shorter than the refresh margin: refreshed at every connect
    async with serve_protected(authority=due) as protected:
        await _connect_ms(root, [_entry(protected.url)], root / "due-auth", 1)
        refreshed = await _connect_ms(root, [_entry(protected.url)], root / "due-auth", runs)
        rows.append(
            {
                "name": "MCP connect: one OAuth server, token due",
                "value": _ms(refreshed),
                "note": f"refreshed before the first request; median of {runs}",
            }
        )
    rows.append(await _refresh_row(root, runs))
    return rows


async def _refresh_row(root: Path, runs: int) -> dict[str, str]:
    times: list[float] = []
    async with serve_protected(protect=False, tools=200) as big:
        servers = McpServers([_entry(big.url)], cwd=root)
        async with servers.running():
            [conn] = servers.connections
            with anyio.fail_after(READY_S):
                await conn.wait_for(lambda c: c.state == LinkState.READY)
            servers.tools()
            for run in range(runs):
                with anyio.fail_after(READY_S):
                    await conn.call_tool("grow", {"tool": f"added_{run}"}, read_only=False)
                    await conn.wait_for(lambda c: "tools" in c.stale)  # notifications/tools/list_changed came
                started = time.perf_counter()
                with anyio.fail_after(READY_S):
                    await servers.prepare_turn(wait_s=READY_S)
                offered = servers.tools()
                times.append((time.perf_counter() - started) * 1000)
                assert offered, "the tools are offered"
    return {
        "name": "MCP tool-list refresh after list_changed, 200 tools",
        "value": _ms(times),
        "note": f"tools/list (200 listed, 128 offered) and the tool surface rebuilt; median of {runs}",
    }
