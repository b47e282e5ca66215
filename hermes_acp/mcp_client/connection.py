"""One MCP server of one session: its tools, and its requests under the at-most-once rules, for the model.

``ServerConnection`` is the editor's-MCP-server user of the one ``SupervisedConnection`` (``supervisor``), which
owns the connection's life: it runs in the session's MCP task group (inside the session's owner task, see
docs/architecture.md §6.2), connects at once, reconnects when the next request needs it, and bounds every wait. What
this module adds:

- each new connection lists the server's tools (``setup``); the last listing is kept while the connection is
  rebuilt, so the tool surface stays stable;
- the timeouts (``McpTimeouts``: connecting, each call, each list/read), module constants read when a
  ``McpTimeouts`` is made (tests shorten them);
- a tool without ``readOnlyHint`` is not replay-safe, lists and reads are; the supervisor's failures become the
  model's errors: ``OutcomeUnknownError`` (``timeout_outcome_unknown`` / ``transport_outcome_unknown``) for a
  mutating call whose answer was lost, ``ToolTimeoutError`` / ``ToolError`` for a read lost twice,
  ``McpServerUnavailableError`` when nothing could be sent (saying so when the user must sign in first),
  ``ToolError`` for an error answer;
- the server's own requests and notifications (``WireHooks``): its questions for the user (``elicitation``: checked,
  tied to the tool call that runs, declined at once when ``questions`` cannot ask, the call's deadline standing still
  while the question is open, a URL question's completion passed on once), the session's roots, and its list
  changes — which only mark the list stale: ``refresh()`` (the session's next turn) lists again, so what the model
  sees never changes within a turn;
- its prompts (listed at each connection when it has them, and again when they change), for the ``/`` commands;
- signing in (``auth.WireAuth``): a connection that needs it ends in ``LinkState.SIGN_IN``; ``sign_in`` runs the
  interactive flow (``wire_port.SignInFlow``) and connects again.

This module does not import the mcp SDK.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import structlog

from hermes_acp.core.bounds import MAX_MCP_TOOLS_PER_SERVER
from hermes_acp.errors import McpServerUnavailableError, OutcomeUnknownError, ToolError, ToolTimeoutError

from ._failures import NotConnected, RequestLost, ServerRejected, SignInFailed, SignInRequired, TransportDropped
from .auth import SIGN_IN_TIMEOUT_S, WireAuth
from .elicitation import Questions, UrlQuestion, calling, check_answer, read_question, server_elicitation_id
from .naming import sanitise
from .specs import HttpSpec, StdioSpec
from .supervisor import LinkState, Live, SupervisedConnection
from .wire_port import McpWire, OpenWire, ProgressFn, SignInFlow, WireHooks

__all__ = [
    "CALL_TIMEOUT_S",
    "CONNECT_TIMEOUT_S",
    "LIST_TIMEOUT_S",
    "McpTimeouts",
    "ServerConnection",
]

T = TypeVar("T")
CONNECT_TIMEOUT_S = 30.0
"""Spawn or connect, ``initialize`` and the first ``tools/list`` of one server."""
CALL_TIMEOUT_S = 120.0
"""One ``tools/call``."""
LIST_TIMEOUT_S = 30.0
"""One list, ``resources/read`` or ``prompts/get``."""
PROGRESS_INTERVAL_S = 0.25
"""At most four progress updates a second reach a tool call's card."""
QUESTION_TIMEOUT_S = 900.0
"""The longest a server's question waits for the user's answer (then ``cancel``)."""
MAX_OPEN_URL_QUESTIONS = 64
"""URL questions of one server whose completion is still awaited; past it the oldest is forgotten."""
_LISTS = ("tools", "prompts", "resources")
_log = structlog.get_logger("hermes_acp.mcp")


@dataclass(frozen=True, slots=True)
class McpTimeouts:
    connect_s: float = field(default_factory=lambda: CONNECT_TIMEOUT_S)
    call_s: float = field(default_factory=lambda: CALL_TIMEOUT_S)
    list_s: float = field(default_factory=lambda: LIST_TIMEOUT_S)
    question_s: float = field(default_factory=lambda: QUESTION_TIMEOUT_S)
    sign_in_s: float = field(default_factory=lambda: SIGN_IN_TIMEOUT_S)
    progress_interval_s: float = field(default_factory=lambda: PROGRESS_INTERVAL_S)
    """The least time between two progress updates of one call shown on its card."""


class ServerConnection:
    def __init__(
        self,
        spec: StdioSpec | HttpSpec,
        index: int,
        *,
        cwd: Path,
        stderr_dir: Path | None,
        timeouts: McpTimeouts,
        on_change: Callable[[], None] = lambda: None,
        open_wire: OpenWire | None = None,
        auth: WireAuth | None = None,
        questions: Callable[[], Questions | None] = lambda: None,
        roots: Callable[[], list[dict[str, Any]]] = list,
    ):
        """``auth``: this server signs in (HTTP and SSE only). ``questions`` gives where the server's questions go
        now (None: they are declined); ``roots`` the session's directories as MCP roots, asked at each
        ``roots/list``."""
        self.spec = spec
        self.index = index
        self.timeouts = timeouts
        self.auth = auth if isinstance(spec, HttpSpec) else None
        self._questions = questions
        self._roots = roots
        self.prompts: list[dict[str, Any]] = []
        """The last ``prompts/list`` (when the server has prompts)."""
        self.prompts_version = 0
        self.stale: set[str] = set()
        """The lists (``tools``, ``prompts``, ``resources``) the server said changed since they were last listed."""
        self.signing_in = False
        self.sign_in_error: str | None = None
        """Why the last sign-in did not work (None: it did, or none was tried)."""
        self._calls: list[str] = []
        """The tool call ids of the calls in flight (a question is tied to the only one when its context is lost)."""
        self._open_urls: dict[str, str] = {}
        """The server's ids of its open URL questions, to ours."""
        self._question_ids = itertools.count(1)
        self.tools: list[dict[str, Any]] = []
        """The last ``tools/list`` (kept while the connection is rebuilt, so the tool surface stays stable), at most
        ``MAX_MCP_TOOLS_PER_SERVER`` of them."""
        self.tools_cut = False
        """The server listed more tools than are offered."""
        self.listing_version = 0
        self.has_resources = False
        self.has_prompts = False
        stderr_log = stderr_dir / f"{sanitise(spec.name)}.log" if stderr_dir is not None else None
        self.link: SupervisedConnection[None] = SupervisedConnection(
            spec,
            setup=self._list,
            connect_s=timeouts.connect_s,
            cwd=cwd,
            stderr_log=stderr_log,
            on_change=on_change,
            open_wire=open_wire,
            hooks=WireHooks(elicit=self._elicit, roots=self._list_roots, notified=self._notified, auth=self.auth),
        )

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def state(self) -> LinkState:
        return self.link.state

    @property
    def error(self) -> str | None:
        """Why the last attempt failed or the connection ended."""
        return self.link.error

    @property
    def attempts(self) -> int:
        return self.link.attempts

    @property
    def connections(self) -> int:
        return self.link.connections

    @property
    def settling(self) -> bool:
        return self.link.settling

    @property
    def offered(self) -> bool:
        """Whether its tools belong on the tool surface: listed at least once and not failed since."""
        return self.listing_version > 0 and self.state != LinkState.FAILED

    async def supervise(self) -> None:
        """Run the connection (in the owner's task group) until ``close()``."""
        await self.link.supervise()

    def close(self) -> None:
        self.link.close()

    async def wait_for(self, predicate: Callable[[ServerConnection], bool]) -> None:
        """Until ``predicate(self)`` holds, re-checked at every state change. Unbounded: bound it."""
        await self.link.wait_for(lambda _: predicate(self))

    async def _list(self, wire: McpWire) -> None:
        self.stale.clear()
        self.has_resources = wire.has_resources
        self.has_prompts = wire.has_prompts
        self._take_tools(await wire.list_tools(limit=MAX_MCP_TOOLS_PER_SERVER + 1))
        if self.has_prompts:
            self._take_prompts(await wire.list_prompts())

    def _take_tools(self, listed: list[dict[str, Any]]) -> bool:
        tools = listed[:MAX_MCP_TOOLS_PER_SERVER]
        self.tools_cut = len(listed) > MAX_MCP_TOOLS_PER_SERVER
        changed = tools != self.tools or self.listing_version == 0
        if changed:
            self.tools = tools
            self.listing_version += 1
        _log.info("MCP server listed its tools", server=self.name, tools=len(tools))
        return changed

    def _take_prompts(self, listed: list[dict[str, Any]]) -> bool:
        changed = listed != self.prompts
        if changed:
            self.prompts = listed
            self.prompts_version += 1
        return changed

    async def refresh(self) -> bool:
        """List again what the server said changed (tools, prompts); True when something did. Raises like
        ``read``; a list that could not be had stays stale."""
        changed = False
        if "tools" in self.stale:
            self.stale.discard("tools")
            try:
                listed = await self.read(
                    lambda wire: _as_result("tools", wire.list_tools(limit=MAX_MCP_TOOLS_PER_SERVER + 1)),
                    "tools/list",
                )
            except BaseException:
                self.stale.add("tools")
                raise
            changed |= self._take_tools(list(listed["tools"]))
        if "prompts" in self.stale:
            self.stale.discard("prompts")
            if self.has_prompts:
                try:
                    prompts = await self.list_prompts()
                except BaseException:
                    self.stale.add("prompts")
                    raise
                changed |= self._take_prompts(prompts)
        self.stale.discard("resources")  # resources are listed on demand: nothing is kept to refresh
        return changed

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        read_only: bool,
        tool_call_id: str | None = None,
        on_progress: ProgressFn | None = None,
    ) -> dict[str, Any]:
        """``tools/call``; only a read-only tool is sent again after a lost answer. ``tool_call_id``: the call the
        server's questions during it belong to; ``on_progress``: its progress notifications."""
        what = f"{self.name}/{tool}"
        token = calling.set(tool_call_id)
        if tool_call_id is not None:
            self._calls.append(tool_call_id)
        try:
            return await self._guarded(
                what,
                self.link.call(
                    tool, arguments, replay_safe=read_only, timeout_s=self.timeouts.call_s, on_progress=on_progress
                ),
            )
        finally:
            calling.reset(token)
            if tool_call_id is not None:
                self._calls.remove(tool_call_id)

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> dict[str, Any]:
        """``prompts/get`` (the result as sent; the caller sanitizes it)."""
        args = dict(arguments)
        return await self.read(lambda wire: wire.get_prompt(name, args), "prompts/get")

    async def roots_changed(self) -> None:
        """Tell a live connection the session's roots changed (nothing to tell when there is none)."""
        live = self.link.live()
        if live is None:
            return
        try:
            with anyio.move_on_after(self.timeouts.list_s):
                await live.wire.roots_changed()
        except (NotConnected, ServerRejected, TransportDropped) as exc:
            _log.info("MCP roots change not sent", server=self.name, error=str(exc))

    async def sign_in(
        self,
        flow: SignInFlow,
        open_url: Callable[[str], Awaitable[bool]],
        wait_s: float,
        pasted: Callable[[], Awaitable[dict[str, str]]] | None = None,
    ) -> None:
        """Sign in interactively (``flow``; ``pasted``: the redirect's address, as a user may paste it), then connect
        again; ``SignInFailed`` / ``NotConnected`` say why not."""
        if self.auth is None:
            raise SignInFailed(f"MCP server {self.name!r} does not sign in (only HTTP and SSE servers do)")
        self.signing_in = True
        self.sign_in_error = None
        self.link.changed()
        try:
            assert isinstance(self.spec, HttpSpec)
            await flow(self.spec, self.auth, open_url=open_url, wait_s=wait_s, pasted=pasted)
            await self.link.reconnect()
        except (SignInFailed, NotConnected) as exc:
            self.sign_in_error = str(exc)
            raise
        finally:
            self.signing_in = False
            self.link.changed()

    async def sign_out(self) -> bool:
        """Forget this server's tokens and registered client, and end its connection (the next request then needs a
        sign-in); False when there was nothing stored."""
        if self.auth is None:
            return False
        removed = await self.auth.tokens.aremove()
        live = self.link.live()
        if live is not None:
            with contextlib.suppress(NotConnected):
                await self.link.reconnect()
        return removed

    # -- the server's own requests and notifications ------------------------------------------------------------

    def _list_roots(self) -> list[dict[str, Any]]:
        return self._roots()

    async def _notified(self, method: str, params: dict[str, Any]) -> None:
        if method.startswith("notifications/") and method.endswith("/list_changed"):
            kind = method.removeprefix("notifications/").removesuffix("/list_changed")
            if kind in _LISTS:
                self.stale.add(kind)
                self.link.changed()
        elif method == "notifications/elicitation/complete":
            ours = self._open_urls.pop(str(params.get("elicitationId")), None)
            questions = self._questions()
            if ours is not None and questions is not None:
                with anyio.move_on_after(self.timeouts.list_s):
                    await questions.completed(self.name, ours)

    async def _elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        """The server's ``elicitation/create``, put to the user; a ``ValueError`` refuses it as invalid."""
        mode = params.get("mode", "form")
        theirs = server_elicitation_id(params) if mode == "url" else None
        question = read_question(self.name, params, elicitation_id=f"mcp-{self.index}-{next(self._question_ids)}")
        if question.tool_call_id is None and len(self._calls) == 1:
            question = dataclasses.replace(question, tool_call_id=self._calls[0])
        questions = self._questions()
        if questions is None or not questions.can_ask("url" if mode == "url" else "form"):
            _log.info("MCP server question declined: nobody can be asked", server=self.name, mode=mode)
            return {"action": "decline"}
        if theirs is not None and isinstance(question, UrlQuestion):
            if len(self._open_urls) >= MAX_OPEN_URL_QUESTIONS:  # a server that never says they are done
                self._open_urls.pop(next(iter(self._open_urls)))
            self._open_urls[theirs] = question.elicitation_id
        with self.link.asking_user(), anyio.move_on_after(self.timeouts.question_s) as scope:
            answer = await questions.ask(question)
        if scope.cancelled_caught:
            result: dict[str, Any] = {"action": "cancel"}
        else:
            result = check_answer(question, answer)
        if theirs is not None and result["action"] != "accept":
            self._open_urls.pop(theirs, None)
        _log.info("MCP server question answered", server=self.name, mode=mode, action=result["action"])
        return result

    async def read(self, op: Callable[[McpWire], Awaitable[dict[str, Any]]], what: str) -> dict[str, Any]:
        """A read-only request (lists, ``resources/read``, ``prompts/get``)."""

        def on(live: Live[None]) -> Awaitable[dict[str, Any]]:
            return op(live.wire)

        full = f"{self.name}/{what}"
        return await self._guarded(
            full, self.link.request(on, what=full, timeout_s=self.timeouts.list_s, replay_safe=True)
        )

    async def list_resources(self) -> list[dict[str, Any]]:
        result = await self.read(lambda wire: _as_result("resources", wire.list_resources()), "resources/list")
        return list(result["resources"])

    async def list_prompts(self) -> list[dict[str, Any]]:
        result = await self.read(lambda wire: _as_result("prompts", wire.list_prompts()), "prompts/list")
        return list(result["prompts"])

    async def _guarded(self, what: str, request: Awaitable[T]) -> T:
        """The supervisor's failures as the model's errors."""
        try:
            return await request
        except SignInRequired:
            raise McpServerUnavailableError(
                f"MCP server {self.name!r} needs the user to sign in first (they can with /mcp login {self.name});"
                " the request was not sent"
            ) from None
        except NotConnected as exc:
            raise McpServerUnavailableError(str(exc)) from None
        except ServerRejected as exc:
            raise ToolError(f"{what}: the server answered with an error: {exc}") from exc
        except RequestLost as lost:
            if not lost.replay_safe:
                raise OutcomeUnknownError(
                    f"{what}: {lost.detail}. The tool may or may not have acted; it was not retried."
                    " Check the current state before trying again.",
                    code=lost.code,
                ) from None
            if lost.failure == "timeout":
                raise ToolTimeoutError(f"{what}: {lost.detail} (tried twice)") from None
            raise ToolError(f"{what}: {lost.detail} (tried twice)") from None


async def _as_result(key: str, items: Awaitable[list[dict[str, Any]]]) -> dict[str, Any]:
    return {key: await items}
