"""What waits in a session is bounded (``sessions.waiting``, the numbers in ``core/bounds.py``): steering messages
for the running turn and prompts queued behind it each have a count and a size together. Past either, the input is
refused with the error that names the limit, nothing of it is stored, and the model's next request holds no more
steering than the limit; what already waits is unaffected."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from hermes_acp.core import DisplayBlock, ImageBlock, InputQueued, ResourceBlock, TextBlock, TextPart, UserMessage
from hermes_acp.core.bounds import (
    MAX_QUEUED_PROMPT_BYTES,
    MAX_QUEUED_PROMPTS,
    MAX_WAITING_STEERING,
    MAX_WAITING_STEERING_BYTES,
    MIB,
)
from hermes_acp.errors import InvalidParamsError
from hermes_acp.providers.base import ProviderRequest
from hermes_acp.providers.scripted import ScriptedProvider, ScriptedReply, text_reply
from hermes_acp.sessions import SessionManager
from hermes_acp.sessions.session import Session
from hermes_acp.sessions.steering import SteeringQueue
from hermes_acp.sessions.waiting import WaitLimit, input_size
from hermes_acp.turns.ports import Steer

from .support import client_of, open_manager

pytestmark = pytest.mark.anyio

SMALL = WaitLimit(kind="notes", waits_for="the test", count=2, total_bytes=10, advice="wait")


def _text(text: str) -> list[DisplayBlock]:
    return [TextBlock(text=text)]


def _user_text(request: ProviderRequest) -> str:
    """The text of the request's user messages (steering messages in a row may share one)."""
    return "".join(
        part.text
        for message in request.messages
        if isinstance(message, UserMessage)
        for part in message.parts
        if isinstance(part, TextPart)
    )


async def _queued(manager: SessionManager, session: Session, kind: str) -> list[InputQueued]:
    events = [stored.event for stored in await manager.services.store.load_events(session.id)]
    return [e for e in events if isinstance(e, InputQueued) and e.input_kind == kind]


def test_the_size_of_an_input_is_its_text_and_attachments() -> None:
    blocks: list[DisplayBlock] = [
        TextBlock(text="héllo"),
        ImageBlock(media_type="image/png", data="QUJD"),
        ResourceBlock(uri="file:///a", text="abc", blob=None),
    ]
    assert input_size(blocks) == 5 + 4 + 3


def test_a_limit_refuses_past_its_count_or_its_size_and_names_both() -> None:
    SMALL.check([_text("1234")], _text("123456"))  # 10 bytes together: fits
    with pytest.raises(InvalidParamsError) as by_size:
        SMALL.check([_text("1234")], _text("1234567"))
    with pytest.raises(InvalidParamsError) as by_count:
        SMALL.check([_text("1"), _text("2")], _text("3"))
    for refused in (by_size.value, by_count.value):
        assert "too many notes waiting for the test: the limit is 2, 10 bytes together" in str(
            refused
        ) and "wait" in str(refused), refused
        assert refused.field == "prompt"
        assert refused.data == {"limit": {"kind": "notes", "count": 2, "bytes": 10}}
    assert "and 2 already wait (2 bytes) beside this one (1 bytes)" in str(by_count.value)


def test_messages_being_stored_hold_their_room_until_offered_or_given_up() -> None:
    queue = SteeringQueue(SMALL).open("t1")
    with queue.admitting(_text("first")), queue.admitting(_text("two")):
        with pytest.raises(InvalidParamsError), queue.admitting(_text("3")):
            pass  # two are being stored side by side: a third has no room
        assert queue.offer("t1", Steer("in-1", _text("first")))
    with queue.admitting(_text("12345")):  # the one given up left its room; "first" waits
        assert queue.offer("t1", Steer("in-2", _text("12345")))
    with pytest.raises(InvalidParamsError), queue.admitting(_text("x")):
        pass
    assert [s.input_id for s in queue.take()] == ["in-1", "in-2"]
    with queue.admitting(_text("0123456789")):  # taken: the room is back
        pass


class _Held:
    """A model whose first answer is held until ``hold`` is set; ``asked`` is set when it is asked (the turn runs)."""

    def __init__(self, then: Sequence[ScriptedReply]) -> None:
        self.hold, self.asked = anyio.Event(), anyio.Event()
        self.provider = ScriptedProvider([self._first, *then])

    def _first(self, request: ProviderRequest) -> ScriptedReply:
        self.asked.set()
        return ScriptedReply(parts=[TextPart(text="working")], hold=self.hold)

    async def start(self, session: Session, group: anyio.abc.TaskGroup, results: dict[str, Any]) -> None:
        async def prompt() -> None:
            results["turn"] = await session.prompt(_text("a long job"))

        group.start_soon(prompt)
        await self.asked.wait()
        assert session.steering.turn_id is not None, "the turn takes steering"


async def test_steering_past_the_count_is_refused_and_the_next_request_holds_no_more(tmp_path: Path) -> None:
    held = _Held([text_reply("done")])
    results: dict[str, Any] = {}
    with anyio.fail_after(30):
        async with open_manager(tmp_path, held.provider) as manager:
            session = await manager.new_session(str(tmp_path), None, [], client=client_of(manager))
            async with anyio.create_task_group() as group:
                await held.start(session, group, results)
                outcomes = [await session.steer(_text(f"steer {n}"), origin=None) for n in range(MAX_WAITING_STEERING)]
                with pytest.raises(InvalidParamsError) as refused:
                    await session.steer(_text("steer one too many"), origin=None)
                stored = await _queued(manager, session, "steering")
                held.hold.set()
    assert outcomes == ["injected"] * MAX_WAITING_STEERING
    assert (
        f"steering messages waiting for the running turn's next safe point: the limit is {MAX_WAITING_STEERING}, 16 MiB"
        in str(refused.value)
    )
    assert len(stored) == MAX_WAITING_STEERING, "the refused one is not stored"
    assert results["turn"].stop_reason == "end_turn"
    sent = _user_text(held.provider.requests[1])
    assert sent.count("steer ") == MAX_WAITING_STEERING and "one too many" not in sent, "refused, never merged"


async def test_steering_past_the_size_is_refused_and_a_smaller_one_still_fits(tmp_path: Path) -> None:
    held = _Held([text_reply("done")])
    big = MAX_WAITING_STEERING_BYTES * 5 // 8
    results: dict[str, Any] = {}
    with anyio.fail_after(30):
        async with open_manager(tmp_path, held.provider) as manager:
            session = await manager.new_session(str(tmp_path), None, [], client=client_of(manager))
            async with anyio.create_task_group() as group:
                await held.start(session, group, results)
                first = await session.steer(_text("A" * big), origin=None)
                with pytest.raises(InvalidParamsError) as refused:
                    await session.steer(_text("B" * big), origin=None)
                last = await session.steer(_text("C" * (MAX_WAITING_STEERING_BYTES - big)), origin=None)
                held.hold.set()
    assert first == last == "injected"
    assert f"1 already waits ({big // MIB} MiB) beside this one ({big // MIB} MiB)" in str(refused.value)
    sent = _user_text(held.provider.requests[1])
    assert "B" not in sent and sent.count("A") == big and sent.count("C") == MAX_WAITING_STEERING_BYTES - big


async def _queue_prompts(
    session: Session, group: anyio.abc.TaskGroup, texts: Sequence[str], results: dict[str, Any]
) -> None:
    for n, text in enumerate(texts):

        async def prompt(n: int = n, text: str = text) -> None:
            results[f"queued {n}"] = await session.prompt(_text(text))

        group.start_soon(prompt)
    await anyio.wait_all_tasks_blocked()


async def test_prompts_past_the_count_are_refused_and_those_queued_run(tmp_path: Path) -> None:
    held = _Held([text_reply(f"answer {n}") for n in range(MAX_QUEUED_PROMPTS)])
    results: dict[str, Any] = {}
    with anyio.fail_after(60):
        async with open_manager(tmp_path, held.provider) as manager:
            session = await manager.new_session(str(tmp_path), None, [], client=client_of(manager))
            async with anyio.create_task_group() as group:
                await held.start(session, group, results)
                await _queue_prompts(session, group, [f"then {n}" for n in range(MAX_QUEUED_PROMPTS)], results)
                with pytest.raises(InvalidParamsError) as refused:
                    await session.prompt(_text("one too many"))
                stored = await _queued(manager, session, "prompt")
                held.hold.set()
    assert f"too many queued prompts waiting for the turns before them: the limit is {MAX_QUEUED_PROMPTS}" in str(
        refused.value
    )
    assert "session/cancel" in str(refused.value)
    assert len(stored) == MAX_QUEUED_PROMPTS, "the refused one is not stored"
    assert [results[f"queued {n}"].stop_reason for n in range(MAX_QUEUED_PROMPTS)] == ["end_turn"] * MAX_QUEUED_PROMPTS
    assert len(held.provider.requests) == 1 + MAX_QUEUED_PROMPTS


async def test_prompts_past_the_size_are_refused_and_a_smaller_one_still_fits(tmp_path: Path) -> None:
    held = _Held([])
    half = MAX_QUEUED_PROMPT_BYTES // 2 - MIB
    results: dict[str, Any] = {}
    with anyio.fail_after(60):
        async with open_manager(tmp_path, held.provider) as manager:
            session = await manager.new_session(str(tmp_path), None, [], client=client_of(manager))
            async with anyio.create_task_group() as group:
                await held.start(session, group, results)
                await _queue_prompts(session, group, ["A" * half, "B" * half], results)
                with pytest.raises(InvalidParamsError) as refused:
                    await session.prompt(_text("C" * (2 * MIB + 1)))
                await _queue_prompts(session, group, ["D" * 2 * MIB], results)
                listed = [q.text[:1] for q in session.queue.listing()]
                session.cancel()
    said = str(refused.value)
    assert f"the limit is {MAX_QUEUED_PROMPTS}, {MAX_QUEUED_PROMPT_BYTES // MIB} MiB together" in said, said
    assert listed == ["A", "B", "D"]
