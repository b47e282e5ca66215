"""The people behind the MCP client's two ports, for tests: ``Browser`` (``auth.SignIn``: the user who opens each
sign-in page and approves it, or declines) and ``Person`` (``elicitation.Questions``: the user who answers the
servers' questions from a script). Both record what reached them. Not a test module."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from fixtures.mcp_auth import follow
from hermes_acp.config import McpServerSettings
from hermes_acp.mcp_client import McpServers, McpTimeouts
from hermes_acp.mcp_client.elicitation import Answer, FormQuestion, UrlQuestion
from tests.mcp.support import START_S

__all__ = ["Browser", "Person", "http_entry", "session"]


@dataclass
class Browser:
    """Opens every sign-in page it is handed and follows the authorization server's redirect, as a browser would
    (``decline``: says no instead)."""

    decline: bool = False
    opened: list[tuple[str, str]] = field(default_factory=list)
    results: list[tuple[str, str | None]] = field(default_factory=list)
    """Each sign-in's end: (server, why it failed or None)."""
    _ended: anyio.Event = field(default_factory=anyio.Event)

    async def open_url(self, server: str, url: str) -> bool:
        self.opened.append((server, url))
        if self.decline:
            return False
        await follow(url)
        return True

    async def finished(self, server: str, error: str | None) -> None:
        self.results.append((server, error))
        self._ended.set()

    async def sign_in_ended(self) -> tuple[str, str | None]:
        """Until a sign-in has ended (bounded); its result."""
        with anyio.fail_after(START_S):
            await self._ended.wait()
        self._ended = anyio.Event()
        return self.results[-1]


@dataclass
class Person:
    """Answers each question with the next scripted ``Answer`` (or one computed from the question)."""

    answers: list[Answer | Callable[[FormQuestion | UrlQuestion], Answer]] = field(default_factory=list)
    modes: frozenset[Literal["form", "url"]] = frozenset({"form", "url"})
    thinking_s: float = 0.0
    """How long the person takes to answer (longer than a call's timeout, to show the clock stands still)."""
    asked: list[FormQuestion | UrlQuestion] = field(default_factory=list)
    completions: list[tuple[str, str]] = field(default_factory=list)

    def can_ask(self, mode: Literal["form", "url"]) -> bool:
        return mode in self.modes

    async def ask(self, question: FormQuestion | UrlQuestion) -> Answer:
        self.asked.append(question)
        if self.thinking_s:
            await anyio.sleep(self.thinking_s)  # the scenario: a person slower than the call's timeout
        answer = self.answers.pop(0) if self.answers else Answer("cancel")
        return answer(question) if callable(answer) else answer

    async def completed(self, server: str, elicitation_id: str) -> None:
        self.completions.append((server, elicitation_id))


def http_entry(url: str, name: str = "remote", transport: str = "http") -> dict[str, Any]:
    return {"type": transport, "name": name, "url": url, "headers": []}


@contextlib.asynccontextmanager
async def session(
    tmp_path: Path,
    entries: Sequence[Mapping[str, Any]],
    *,
    browser: Browser | None = None,
    person: Person | None = None,
    configured: Mapping[str, McpServerSettings] | None = None,
    timeouts: McpTimeouts | None = None,
    roots: Sequence[Path] | None = None,
) -> AsyncIterator[McpServers]:
    """A session's servers with a token folder in ``tmp_path/home`` (the same for every call with one
    ``tmp_path``: a second call is a restart), started in this task."""
    cwd = tmp_path / "workspace"
    cwd.mkdir(parents=True, exist_ok=True)
    servers = McpServers(
        entries,
        cwd=cwd,
        stderr_dir=tmp_path / "mcp-logs",
        timeouts=timeouts,
        configured=configured,
        auth_dir=tmp_path / "home" / "mcp-auth",
        roots=[cwd] if roots is None else roots,
        questions=person,
        sign_in=browser,
    )
    async with servers.running():
        yield servers
