"""The audience of one session against fake connections (no session): the first answer to a question wins and the
others are withdrawn, a question nobody is attached to waits for the next connection (bounded), a connection that
catches up gets the history, then what happened meanwhile, in order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from hermes_acp.core import NoticeAdded, SessionEvent, TurnEnded
from hermes_acp.errors import PermissionDeniedError
from hermes_acp.sessions.audience import Audience
from hermes_acp.turns.ports import PermissionAnswer, PermissionChoice, PermissionQuestion

from .support import Bridge

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
