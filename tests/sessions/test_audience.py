"""The audience of one session against fake connections (no session): the first answer to a question wins and the
others are withdrawn, a question nobody is attached to waits for the next connection (bounded), a connection that
catches up gets the history, then what happened meanwhile, in order; a background request (an MCP server's sign-in
page) never makes the foreground work wait on the user; a connection that stalled is never given a cursor past
what it missed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from hermes_acp.core import NoticeAdded, SessionEvent, TurnEnded
from hermes_acp.errors import PermissionDeniedError
from hermes_acp.sessions.audience import Audience
from hermes_acp.sessions.views import Foreground
from hermes_acp.tools.context import ElicitationAnswer
from hermes_acp.turns.ports import PermissionAnswer, PermissionChoice, PermissionQuestion

from .support import Bridge, RecordingSink

pytestmark = pytest.mark.anyio

SESSION = "sess_audience"
QUESTION = PermissionQuestion(tool_call_id="call_1", title="Run make?", kind="execute")


@dataclass
class Gate:
    """A connection's permission gate: answers ``answer`` once ``release`` is set; records a withdrawn request."""

    answer: PermissionAnswer = "allow_once"
    release: anyio.Event = field(default_factory=anyio.Event)
    asked: anyio.Event = field(default_factory=anyio.Event)
    withdrawn: bool = False

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        self.asked.set()
        try:
            await self.release.wait()
        except anyio.get_cancelled_exc_class():
            self.withdrawn = True
            raise
        return self.answer

    async def choose(
        self, question: PermissionQuestion, choices: Sequence[PermissionChoice], *, refusal: str
    ) -> str | None:
        await self.ask(question)
        return choices[0].id


@dataclass
class Client(Bridge):
    answers: Gate = field(default_factory=Gate)

    def gate(self, session_id: str) -> Gate:  # type: ignore[override]  # the test's own gate
        return self.answers


@dataclass
class Links:
    """A connection that opens addresses: holds each until ``release`` is set."""

    release: anyio.Event = field(default_factory=anyio.Event)
    opened: anyio.Event = field(default_factory=anyio.Event)

    async def open(self, message: str, url: str, elicitation_id: str, *, tool_call_id: str | None) -> ElicitationAnswer:
        self.opened.set()
        await self.release.wait()
        return ElicitationAnswer(action="accept")

    async def completed(self, elicitation_id: str) -> None:
        return None


@dataclass
class LinkClient(Client):
    addresses: Links = field(default_factory=Links)

    def links(self, session_id: str) -> Links:
        return self.addresses


@dataclass
class CursorSink(RecordingSink):
    """A connection's sink that keeps its delivery cursor as the ACP bridge does (the seq last passed to it, named by
    every update from then on) and takes nothing while ``stalls`` is set (the audience's send bound gives up on it).
    ``taken``: for each event it took, its message id and the cursor its update carried."""

    stalls: bool = False
    cursor: int | None = None
    taken: list[tuple[str, int | None]] = field(default_factory=list)

    async def emit_event(self, event: SessionEvent, *, live: bool, seq: int | None = None) -> None:
        if seq is not None:
            self.cursor = seq
        if self.stalls:
            await anyio.Event().wait()  # never set: only the audience's bound ends this send
        self.taken.append((getattr(event, "message_id", "end"), self.cursor))


def event(n: int) -> NoticeAdded:
    return NoticeAdded(turn_id="turn_1", message_id=f"msg_{n}", text=f"note {n}")


async def test_the_first_answer_wins_and_the_question_is_withdrawn_from_the_others(tmp_path: Any) -> None:
    audience = Audience(SESSION, wait_for_attach=False)
    quick, slow = Client(connection_id="quick"), Client(connection_id="slow", answers=Gate(answer="reject_once"))
    await audience.attach(quick)
    await audience.attach(slow)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            answered: list[PermissionAnswer] = []

            async def ask() -> None:
                answered.append(await audience.ask(QUESTION))

            group.start_soon(ask)
            await quick.answers.asked.wait()
            await slow.answers.asked.wait()
            quick.answers.release.set()
    assert answered == ["allow_once"]
    assert slow.answers.withdrawn, "the slower connection's request is withdrawn"
    assert not quick.answers.withdrawn


async def test_a_question_nobody_can_answer_waits_for_the_next_connection_or_is_refused_in_time() -> None:
    waiting = Audience(SESSION, wait_for_attach=True)
    late = Client(connection_id="late")
    late.answers.release.set()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            answered: list[PermissionAnswer] = []

            async def ask() -> None:
                answered.append(await waiting.ask(QUESTION))

            group.start_soon(ask)
            await anyio.wait_all_tasks_blocked()
            assert answered == [], "nobody is attached: the question waits"
            await waiting.attach(late)
    bounded = Audience(SESSION, wait_for_attach=True, unattended_wait_s=0.01)
    with anyio.fail_after(5), pytest.raises(PermissionDeniedError) as refused:
        await bounded.ask(QUESTION)
    inline = Audience(SESSION, wait_for_attach=False)
    with anyio.fail_after(5):
        gone = await inline.ask(QUESTION)
        chose = await inline.choose(QUESTION, [PermissionChoice("go", "Go", "allow_once")], refusal="no")

    assert answered == ["allow_once"]
    assert "nobody attached to answer the permission request within 0.01 s" in str(refused.value)
    assert (gone, chose) == ("cancelled", None), "inline mode: the one client has gone, the turn is cancelled"


async def test_a_connection_that_catches_up_gets_the_history_then_what_happened_meanwhile() -> None:
    audience = Audience(SESSION, wait_for_attach=False)
    first, second = Client(connection_id="first"), Client(connection_id="second")
    await audience.attach(first)
    history_read = anyio.Event()
    go_on = anyio.Event()

    async def history() -> list[SessionEvent]:
        history_read.set()
        await go_on.wait()
        return [event(1), event(2)]

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: audience.attach(second, history=history))
            await history_read.wait()
            go_on.set()
            await anyio.wait_all_tasks_blocked()
            await audience.emit_event(event(3), live=True)
            await audience.emit_event(TurnEnded(turn_id="turn_1", stop_reason="end_turn"), live=True)

    seen = [getattr(e, "message_id", "end") for e in second.sinks[SESSION].events]
    assert seen == ["msg_1", "msg_2", "msg_3", "end"], "history, then what came meanwhile, each once and in order"
    assert [getattr(e, "message_id", "end") for e in first.sinks[SESSION].events] == ["msg_3", "end"]


async def test_a_sign_in_page_is_a_background_request_and_a_call_s_question_holds_the_foreground() -> None:
    audience = Audience(SESSION, wait_for_attach=False)
    client = LinkClient(connection_id="editor")
    client.answers.release.set()
    await audience.attach(client)
    await audience.foreground(Foreground("running"))
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: audience.open_link("Sign in to docs", "https://auth.example/", "e1", tool_call_id=None)
            )
            await client.addresses.opened.wait()
            during_sign_in = audience.state.state
            answered = await audience.ask(QUESTION)  # a permission question while the sign-in page is still open
            after_question = audience.state.state
            client.addresses.release.set()
    told = [state.state for state in client.states[SESSION]]
    assert answered == "allow_once"
    assert (during_sign_in, after_question) == ("running", "running"), told
    assert told == ["running", "requires_action", "running"], "only the permission question held the foreground"

    tied = Audience(SESSION, wait_for_attach=False)
    other = LinkClient(connection_id="editor")
    await tied.attach(other)
    await tied.foreground(Foreground("running"))
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:

            async def page() -> None:
                await tied.open_link("Open the page", "https://docs.example/", "e2", tool_call_id="c1")

            group.start_soon(page)
            await other.addresses.opened.wait()
            held = tied.state.state
            other.addresses.release.set()
    assert held == "requires_action", "an address a tool call waits on holds the foreground"
    assert tied.state.state == "running"


async def test_a_connection_that_stalled_keeps_the_cursor_of_what_it_was_given() -> None:
    audience = Audience(SESSION, wait_for_attach=False, send_timeout_s=0.01)
    slow, quick = Client(connection_id="slow"), Client(connection_id="quick")
    slow_sink, quick_sink = CursorSink(), CursorSink()
    slow.sinks[SESSION], quick.sinks[SESSION] = slow_sink, quick_sink
    await audience.attach(slow)
    await audience.attach(quick)
    first_turn_ends = TurnEnded(turn_id="turn_1", stop_reason="end_turn")
    with anyio.fail_after(5):
        await audience.emit_event(event(1), live=True, seq=1)
        slow_sink.stalls = True
        await audience.emit_event(event(2), live=True, seq=2)  # waits out the bound: the slow one stalls
        slow_sink.stalls = False
        await audience.emit_event(event(3), live=True, seq=3)  # not sent to it live
        await audience.emit_event(first_turn_ends, live=True, seq=4)  # nor this; the next turn tries it again
        await audience.emit_event(event(5), live=True, seq=5)
        await audience.emit_event(TurnEnded(turn_id="turn_2", stop_reason="end_turn"), live=True, seq=6)

    seqs = {"msg_1": 1, "msg_2": 2, "msg_3": 3, "msg_5": 5}
    assert [taken for taken, _ in slow_sink.taken] == ["msg_1", "msg_5", "end"], "the next turn is delivered"
    got = {seqs[taken] for taken, _ in slow_sink.taken if taken in seqs}
    for taken, cursor in slow_sink.taken:
        assert cursor is not None
        assert set(range(1, cursor + 1)) <= got, f"{taken} carried cursor {cursor}, past events it never got"
    assert slow_sink.cursor == 1, "a rejoin by its cursor replays 2 to 4, which it missed"
    assert quick_sink.taken[-1] == ("end", 6), "a connection that took everything has everything"
