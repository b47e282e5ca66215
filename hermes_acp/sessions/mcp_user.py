"""``McpUser``: the person behind a session's MCP servers — the ``Questions`` and ``SignIn`` ports of
``mcp_client`` over the session's audience (its attached editors).

- **A server's question** (``elicitation/create``) goes to the editors as an ACP ``elicitation/create`` of the same
  mode — a form, or an address to open — its message naming the server, tied to the tool call that asked; the first
  answer counts (``Audience``). A mode no attached editor offers is declined at once (``can_ask``), and so is a
  question nobody was attached to answer within ``unattended_wait_s`` (a shared session); an editor that fails to
  ask answers ``cancel``. The server saying a URL question is done becomes ``elicitation/complete``. The answer is
  checked against the form by ``mcp_client.elicitation`` before it goes back.
- **A sign-in page** (``open_url``): "Sign in to <server>" as an ACP URL elicitation where an attached editor
  offers one (declined there: the sign-in is abandoned); elsewhere — or when the editor could not be asked — a
  notice with the address, once per server (``/mcp login <server>`` shows it again, as its answer). Its end
  (``finished``) closes the editor's page (``elicitation/complete``), or is told in a notice: signed in, or why not.

Notices go out through ``tell`` (the session's: live, else stored between turns), handed in as a function that does
not wait. No ACP here: the audience's editors speak it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Literal, Protocol

import structlog

from hermes_acp.core.notice import Notice
from hermes_acp.errors import ToolError
from hermes_acp.mcp_client import Answer, FormQuestion, UrlQuestion
from hermes_acp.tools.context import ElicitationAnswer

__all__ = ["McpUser", "UserAudience"]

_log = structlog.get_logger("hermes_acp.sessions")
_UNANSWERED = (ConnectionError, TimeoutError)
"""Nobody was attached to answer (in time): the question is declined."""


class UserAudience(Protocol):
    """The session's editors, as the MCP servers' person reaches them."""

    def can_elicit(self, mode: Literal["form", "url"]) -> bool: ...

    async def ask_form(
        self, message: str, schema: dict[str, Any], *, tool_call_id: str | None
    ) -> ElicitationAnswer: ...

    async def open_link(
        self, message: str, url: str, elicitation_id: str, *, tool_call_id: str | None
    ) -> ElicitationAnswer: ...

    async def link_completed(self, elicitation_id: str) -> None: ...


class McpUser:
    """``Questions`` and ``SignIn`` for one session (see the module docstring)."""

    def __init__(self, audience: UserAudience, tell: Callable[[Notice], None]):
        """``tell`` shows a notice (live, else stored) without making its caller wait."""
        self._audience = audience
        self._tell = tell
        self._pages: dict[str, str | None] = {}
        """By server, the sign-in under way whose page the user was shown: the ACP elicitation id of the editor's
        page, or None for a page told in a notice."""
        self._told: set[str] = set()
        """Servers whose sign-in address was told in a notice (once each; ``/mcp login`` repeats it)."""

    # -- Questions --------------------------------------------------------------------------------------------

    def can_ask(self, mode: Literal["form", "url"]) -> bool:
        return self._audience.can_elicit(mode)

    async def ask(self, question: FormQuestion | UrlQuestion) -> Answer:
        try:
            if isinstance(question, FormQuestion):
                answer = await self._audience.ask_form(
                    f"MCP server '{question.server}' asks: {question.message}",
                    question.schema,
                    tool_call_id=question.tool_call_id,
                )
            else:
                answer = await self._audience.open_link(
                    f"MCP server '{question.server}' asks you to open this page: {question.message}",
                    question.url,
                    question.elicitation_id,
                    tool_call_id=question.tool_call_id,
                )
        except _UNANSWERED:
            return Answer("decline")
        except ToolError as exc:
            _log.info("an MCP server's question could not be put to the user", server=question.server, error=str(exc))
            return Answer("cancel")
        return Answer(answer.action, answer.content)

    async def completed(self, server: str, elicitation_id: str) -> None:
        await self._audience.link_completed(elicitation_id)

    # -- SignIn -----------------------------------------------------------------------------------------------

    async def open_url(self, server: str, url: str) -> bool:
        if self._audience.can_elicit("url"):
            elicitation_id = f"mcp-sign-in-{uuid.uuid4().hex}"
            try:
                answer = await self._audience.open_link(f"Sign in to {server}", url, elicitation_id, tool_call_id=None)
            except (*_UNANSWERED, ToolError) as exc:
                _log.info("the sign-in page could not be offered in the editor", server=server, error=str(exc))
            else:
                if answer.action != "accept":
                    return False
                self._pages[server] = elicitation_id
                return True
        self._pages.setdefault(server, None)
        if server not in self._told:
            self._told.add(server)
            self._tell(
                Notice(
                    "info",
                    f"Sign in to MCP server '{server}'",
                    f"open {url} in your browser and approve; `/mcp login {server}` shows this address again",
                )
            )
        return True

    async def finished(self, server: str, error: str | None) -> None:
        shown = server in self._pages
        elicitation_id = self._pages.pop(server, None)
        if elicitation_id is not None:
            await self._audience.link_completed(elicitation_id)
        if error is not None:
            self._tell(Notice("warning", f"Signing in to MCP server '{server}' did not work", error))
        elif shown and elicitation_id is None:
            done = Notice("info", f"Signed in to MCP server '{server}'", "its tools are offered from the next turn")
            self._tell(done)
