"""The person behind a session's MCP servers (``sessions.mcp_user``) over a real ``Audience`` and editors that
record what they are asked: questions of each mode to the editors that offer it, the first answer counting,
declined at once without one, and declined when nobody attached to a shared session in time; a sign-in page opened
in the editor or told once in a notice, and its end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from hermes_acp.core.notice import Notice
from hermes_acp.errors import ToolError
from hermes_acp.mcp_client import Answer, FormQuestion, UrlQuestion
from hermes_acp.sessions.audience import Audience
from hermes_acp.sessions.mcp_user import McpUser
from hermes_acp.sessions.views import EditorLinks
from hermes_acp.tools.context import ElicitationAnswer, Elicitor
from tests.sessions.support import Bridge

pytestmark = pytest.mark.anyio

SESSION = "sess_mcp_user"
WAIT_S = 10.0
FORM = {"type": "object", "properties": {"colour": {"type": "string"}}}


@dataclass
class Editor(Bridge):
    """An editor that shows forms and/or opens addresses, answering from a script (None: never answers)."""

    forms: bool = True
    urls: bool = True
    answers: list[ElicitationAnswer | None] = field(default_factory=list)
    asked: list[dict[str, Any]] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)

    def elicitor(self, session_id: str) -> Elicitor | None:
        return _Form(self) if self.forms else None

    def links(self, session_id: str) -> EditorLinks | None:
        return _Links(self) if self.urls else None

    async def answer(self, asked: dict[str, Any]) -> ElicitationAnswer:
        self.asked.append(asked)
        answer = self.answers.pop(0) if self.answers else ElicitationAnswer("cancel")
        if answer is None:
            await anyio.sleep_forever()
        assert answer is not None
        return answer


@dataclass
class _Form:
    editor: Editor

    async def ask(self, message: str, schema: dict[str, Any], *, tool_call_id: str | None) -> ElicitationAnswer:
        return await self.editor.answer({"mode": "form", "message": message, "tool_call_id": tool_call_id})


@dataclass
class _Links:
    editor: Editor

    async def open(self, message: str, url: str, elicitation_id: str, *, tool_call_id: str | None) -> ElicitationAnswer:
        asked = {"mode": "url", "message": message, "url": url, "id": elicitation_id, "tool_call_id": tool_call_id}
        return await self.editor.answer(asked)

    async def completed(self, elicitation_id: str) -> None:
        self.editor.closed.append(elicitation_id)


def _user(audience: Audience) -> tuple[McpUser, list[Notice]]:
    told: list[Notice] = []
    return McpUser(audience, told.append), told


async def test_each_question_goes_to_the_editors_that_offer_its_mode_and_the_first_answer_counts() -> None:
    audience = Audience(SESSION, wait_for_attach=False)
    quick = Editor(answers=[ElicitationAnswer("accept", {"colour": "red"}), ElicitationAnswer("accept")])
    slow = Editor(answers=[None, None])
    forms_only = Editor(urls=False)
    for editor in (quick, slow, forms_only):
        await audience.attach(editor)
    user, _ = _user(audience)
    form = FormQuestion("srv", "Which colour?", FORM, tool_call_id="call_1")
    page = UrlQuestion("srv", "Connect.", "https://example.com/x", "mcp-0-1", tool_call_id="call_2")
    with anyio.fail_after(WAIT_S):
        assert await user.ask(form) == Answer("accept", {"colour": "red"})
        assert await user.ask(page) == Answer("accept")
        await user.completed("srv", "mcp-0-1")
    asked = {"mode": "form", "message": "MCP server 'srv' asks: Which colour?", "tool_call_id": "call_1"}
    assert quick.asked[0] == asked
    assert quick.asked[1]["message"] == "MCP server 'srv' asks you to open this page: Connect."
    assert (quick.asked[1]["url"], quick.asked[1]["id"]) == ("https://example.com/x", "mcp-0-1")
    assert [a["mode"] for a in slow.asked] == ["form", "url"], "both were asked; the quicker answer counted"
    assert [a["mode"] for a in forms_only.asked] == ["form"], "an address is not offered where none can be opened"
    assert quick.closed == slow.closed == ["mcp-0-1"] and forms_only.closed == []


async def test_a_mode_no_editor_offers_is_declined_at_once_and_an_editor_that_fails_answers_cancel() -> None:
    audience = Audience(SESSION, wait_for_attach=True, unattended_wait_s=WAIT_S)
    user, _ = _user(audience)
    assert not user.can_ask("form") and not user.can_ask("url"), "nobody attached ever could"
    await audience.attach(Editor(urls=False))
    assert user.can_ask("form") and not user.can_ask("url")

    class Broken(Editor):
        async def answer(self, asked: dict[str, Any]) -> ElicitationAnswer:
            raise ToolError("the editor refused elicitation/create")

    audience = Audience(SESSION, wait_for_attach=False)
    await audience.attach(Broken())
    user, _ = _user(audience)
    with anyio.fail_after(WAIT_S):
        assert await user.ask(FormQuestion("srv", "Which?", FORM)) == Answer("cancel")


async def test_a_shared_session_nobody_attached_to_in_time_declines_the_question() -> None:
    audience = Audience(SESSION, wait_for_attach=True, unattended_wait_s=0.05)  # meant to run out
    editor = Editor()
    await audience.attach(editor)
    audience.detach(editor)
    user, _ = _user(audience)
    assert user.can_ask("url"), "the next editor to attach may answer"
    with anyio.fail_after(WAIT_S):
        assert await user.ask(UrlQuestion("srv", "Go.", "https://example.com", "mcp-0-2")) == Answer("decline")
    assert editor.asked == []


async def test_a_sign_in_page_opens_in_the_editor_and_closes_when_signed_in() -> None:
    audience = Audience(SESSION, wait_for_attach=False)
    editor = Editor(answers=[ElicitationAnswer("accept"), ElicitationAnswer("decline")])
    await audience.attach(editor)
    user, told = _user(audience)
    with anyio.fail_after(WAIT_S):
        assert await user.open_url("linear", "https://auth.example/authorize?x=1") is True
        await user.finished("linear", None)
        assert await user.open_url("linear", "https://auth.example/authorize?x=2") is False, "declined"
        await user.finished("linear", "the sign-in was declined")
    first = editor.asked[0]
    assert (first["message"], first["url"], first["tool_call_id"]) == (
        "Sign in to linear",
        "https://auth.example/authorize?x=1",
        None,
    )
    assert editor.closed == [first["id"]]
    assert [n.title for n in told] == ["Signing in to MCP server 'linear' did not work"]


async def test_without_an_editor_that_opens_pages_the_address_is_told_once_and_the_end_too() -> None:
    audience = Audience(SESSION, wait_for_attach=False)
    editor = Editor(urls=False)
    await audience.attach(editor)
    user, told = _user(audience)
    with anyio.fail_after(WAIT_S):
        assert await user.open_url("linear", "https://auth.example/authorize?x=1") is True
        assert await user.open_url("linear", "https://auth.example/authorize?x=2") is True
        await user.finished("linear", None)
    assert editor.asked == []
    first, done = told
    assert first.as_text() == (
        "Sign in to MCP server 'linear': open https://auth.example/authorize?x=1 in your browser and approve;"
        " `/mcp login linear` shows this address again"
    )
    assert done.as_text() == "Signed in to MCP server 'linear': its tools are offered from the next turn"
