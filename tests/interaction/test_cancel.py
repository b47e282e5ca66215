"""Cancel is prompt and never wedges a session; prompts are queued per session (docs/architecture.md §4.10, §4.11)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError, schema
from dirty_equals import IsStr
from inline_snapshot import snapshot

from hermes_acp.core import TextPart, ToolCallPart, UserMessage
from hermes_acp.core.bounds import MAX_QUEUED_PROMPT_BYTES, MAX_QUEUED_PROMPTS
from hermes_acp.providers.scripted import ScriptedProvider, ScriptedReply, text_reply, tool_reply
from tests.fakes.server import Pair, open_pair
from tests.fakes.tools import BlockingTool, GuardedWriteTool, args
from tests.turns.support import history

pytestmark = pytest.mark.anyio


async def _prompt_into(pair: Pair, session_id: str, text: str, results: dict[str, Any]) -> None:
    results[text] = await pair.prompt(session_id, text)


async def test_cancel_during_streaming_answers_cancelled_and_keeps_what_was_shown(tmp_path: Path) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider(
        [ScriptedReply(parts=[TextPart(text="streaming a long answer")], hold=hold), text_reply("next")]
    )
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        results: dict[str, Any] = {}
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_prompt_into, pair, session_id, "long", results)
                await pair.client.wait_for(lambda: bool(pair.client.of_kind("agent_message_chunk", session_id)))
                await pair.conn.cancel(session_id=session_id)
        with anyio.fail_after(5):
            nxt = await pair.prompt(session_id, "after cancel")
        stored = history(
            [
                e.event
                for e in await pair.store.load_events(session_id)
                if e.event.kind != "assistant_text_checkpointed"  # one lands if the cancel comes 250 ms after the text
            ]
        )
    assert results["long"].stop_reason == "cancelled"
    assert nxt.stop_reason == "end_turn"
    assert stored[:3] == snapshot(
        [
            {
                "kind": "user_prompted",
                "turn_id": IsStr(regex=r"turn_[0-9a-f]{16}"),
                "message_id": "m1",
                "display": [{"text": "long"}],
                "message": {"parts": [{"text": "long"}]},
            },
            {
                "kind": "assistant_message",
                "turn_id": IsStr(regex=r"turn_[0-9a-f]{16}"),
                "message_id": "m2",
                "message": {"parts": [{"text": "streamin"}]},
                "model_id": "scripted:model",
                "interrupted": True,
            },
            {"kind": "turn_ended", "turn_id": IsStr(regex=r"turn_[0-9a-f]{16}"), "stop_reason": "cancelled"},
        ]
    )
    model_history = provider.requests[1].messages
    assert model_history[1].parts == [TextPart(text="streamin")]


async def test_cancel_during_a_tool_interrupts_it_and_settles_the_card(tmp_path: Path) -> None:
    blocker = BlockingTool()
    provider = ScriptedProvider(
        [
            tool_reply(
                ToolCallPart(id="b1", name="block", arguments=args(message="x")),
                ToolCallPart(id="b2", name="block", arguments=args(message="y")),
            ),
            text_reply("after"),
        ]
    )
    async with open_pair(tmp_path, provider=provider, tools=[blocker]) as pair:
        session_id = await pair.new_session()
        results: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(_prompt_into, pair, session_id, "run", results)
            with anyio.fail_after(5):
                await blocker.started.wait()
            await pair.conn.cancel(session_id=session_id)
        cards = pair.client.cards(session_id)
        with anyio.fail_after(5):
            nxt = await pair.prompt(session_id, "again")
    assert results["run"].stop_reason == "cancelled"
    assert blocker.cancelled
    assert cards["b1"]["status"] == "failed"
    assert "Cancelled" in cards["b1"]["content"][0]["content"]["text"]
    assert cards["b2"]["status"] == "failed"
    assert "Not run" in cards["b2"]["content"][0]["content"]["text"]
    assert nxt.stop_reason == "end_turn"


async def test_cancel_withdraws_a_pending_permission_request(tmp_path: Path) -> None:
    writer = GuardedWriteTool()
    never = anyio.Event()

    async def wait_forever(asked: Any) -> str:
        await never.wait()
        return "allow_once"

    provider = ScriptedProvider([tool_reply(ToolCallPart(id="w1", name="guarded_write", arguments=args(message="x")))])
    async with open_pair(tmp_path, provider=provider, tools=[writer]) as pair:
        pair.client.on_permission = wait_forever
        session_id = await pair.new_session()
        results: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(_prompt_into, pair, session_id, "write", results)
            with anyio.fail_after(5):
                await pair.client.wait_for(lambda: bool(pair.client.permissions))
            await pair.conn.cancel(session_id=session_id)
        cards = pair.client.cards(session_id)
        never.set()
    assert results["write"].stop_reason == "cancelled"
    assert cards["w1"]["status"] == "failed"
    assert "Not run" in cards["w1"]["content"][0]["content"]["text"]
    assert writer.writes == []


async def test_cancel_while_an_attachment_read_is_asked_leaves_no_tool_result_in_the_history(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside content")
    never = anyio.Event()

    async def wait_forever(asked: Any) -> str:
        await never.wait()
        return "allow_once"

    provider = ScriptedProvider([text_reply("fresh answer")])
    async with open_pair(tmp_path, provider=provider) as pair:
        pair.client.on_permission = wait_forever
        session_id = await pair.new_session()
        link = schema.ResourceContentBlock(type="resource_link", uri=outside.as_uri(), name="outside.txt")
        results: dict[str, Any] = {}

        async def attach() -> None:
            results["attach"] = await pair.conn.prompt(session_id=session_id, prompt=[link])

        async with anyio.create_task_group() as tg:
            tg.start_soon(attach)
            with anyio.fail_after(5):
                await pair.client.wait_for(lambda: bool(pair.client.permissions))
            await pair.conn.cancel(session_id=session_id)
        never.set()
        with anyio.fail_after(5):
            fresh = await pair.prompt(session_id, "fresh")
        cards = pair.client.cards(session_id)
        await pair.conn.close_session(session_id=session_id)
        pair.client.clear()
        await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
        replayed_prompts = [u["content"] for u in pair.client.of_kind("user_message_chunk", session_id)]
    assert replayed_prompts == [
        {"type": "resource_link", "uri": outside.as_uri(), "name": "outside.txt"},
        {"type": "text", "text": "fresh"},
    ], "the cancelled prompt stays in the log"
    assert results["attach"].stop_reason == "cancelled"
    assert [card["status"] for card in cards.values()] == ["failed"]
    assert fresh.stop_reason == "end_turn"
    assert provider.requests[0].messages == [UserMessage(parts=[TextPart(text="fresh")])]


async def test_cancelled_permission_outcome_cancels_the_turn(tmp_path: Path) -> None:
    writer = GuardedWriteTool()
    provider = ScriptedProvider([tool_reply(ToolCallPart(id="w1", name="guarded_write", arguments=args(message="x")))])
    async with open_pair(tmp_path, provider=provider, tools=[writer]) as pair:
        pair.client.answers = ["cancelled"]
        session_id = await pair.new_session()
        response = await pair.prompt(session_id, "write")
        cards = pair.client.cards(session_id)
    assert response.stop_reason == "cancelled"
    assert cards["w1"]["status"] == "failed"
    assert writer.writes == []


async def test_second_prompt_is_queued_and_answered_when_its_own_turn_ends(tmp_path: Path) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider(
        [ScriptedReply(parts=[TextPart(text="first answer")], hold=hold), text_reply("second answer")]
    )
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        order: list[str] = []

        async def run(text: str) -> None:
            await pair.prompt(session_id, text)
            order.append(text)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "first")
            await pair.client.wait_for(lambda: bool(pair.client.of_kind("agent_message_chunk", session_id)))
            tg.start_soon(run, "second")
            await anyio.wait_all_tasks_blocked()
            assert len(provider.requests) == 1, "the second prompt waits for the first turn"
            hold.set()
    assert order == ["first", "second"]
    second_request = provider.requests[1].messages
    assert [type(m).__name__ for m in second_request] == ["UserMessage", "AssistantMessage", "UserMessage"]


async def test_cancel_answers_queued_prompts_cancelled_and_the_session_takes_the_next_at_once(tmp_path: Path) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text="busy")], hold=hold), text_reply("fresh")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        results: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(_prompt_into, pair, session_id, "running", results)
            await pair.client.wait_for(lambda: bool(pair.client.of_kind("agent_message_chunk", session_id)))
            tg.start_soon(_prompt_into, pair, session_id, "queued", results)
            await anyio.wait_all_tasks_blocked()
            await pair.conn.cancel(session_id=session_id)
        with anyio.fail_after(5):
            fresh = await pair.prompt(session_id, "fresh")
    assert results["running"].stop_reason == "cancelled"
    assert results["queued"].stop_reason == "cancelled"
    assert fresh.stop_reason == "end_turn"
    assert len(provider.requests) == 2


async def test_a_prompt_past_the_queue_limit_is_refused_naming_it_and_the_queue_is_unaffected(tmp_path: Path) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text="busy")], hold=hold), text_reply("fresh")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        results: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(_prompt_into, pair, session_id, "running", results)
            await pair.client.wait_for(lambda: bool(pair.client.of_kind("agent_message_chunk", session_id)))
            for n in range(MAX_QUEUED_PROMPTS):
                tg.start_soon(_prompt_into, pair, session_id, f"queued {n}", results)
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(RequestError) as refused:
                await pair.prompt(session_id, "one too many")
            await pair.conn.cancel(session_id=session_id)
        with anyio.fail_after(5):
            fresh = await pair.prompt(session_id, "fresh")
    assert refused.value.code == -32602
    assert f"too many queued prompts waiting for the turns before them: the limit is {MAX_QUEUED_PROMPTS}" in str(
        refused.value
    )
    assert refused.value.data == {
        "limit": {"kind": "queued prompts", "count": MAX_QUEUED_PROMPTS, "bytes": MAX_QUEUED_PROMPT_BYTES},
        "field": "prompt",
    }
    assert [results[f"queued {n}"].stop_reason for n in range(MAX_QUEUED_PROMPTS)] == ["cancelled"] * MAX_QUEUED_PROMPTS
    assert fresh.stop_reason == "end_turn", "the session takes the next prompt as usual"


async def test_a_queued_slash_command_is_answered_cancelled_and_does_not_run(tmp_path: Path) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text="busy")], hold=hold)])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        results: dict[str, Any] = {}
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_prompt_into, pair, session_id, "running", results)
                await pair.client.wait_for(lambda: bool(pair.client.of_kind("agent_message_chunk", session_id)))
                tg.start_soon(_prompt_into, pair, session_id, "/title Never set", results)
                await anyio.wait_all_tasks_blocked()
                await pair.conn.cancel(session_id=session_id)
        record = await pair.store.get_session(session_id)
    assert results["running"].stop_reason == "cancelled"
    assert results["/title Never set"].stop_reason == "cancelled"
    assert record is not None and record.title != "Never set"


async def test_a_cancel_in_one_session_leaves_another_running(tmp_path: Path) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text="slow")], hold=hold), text_reply("fast")])
    async with open_pair(tmp_path, provider=provider) as pair:
        slow = await pair.new_session()
        fast = await pair.new_session()
        results: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(_prompt_into, pair, slow, "slow", results)
            await pair.client.wait_for(lambda: bool(pair.client.of_kind("agent_message_chunk", slow)))
            await pair.conn.cancel(session_id=fast)
            results["fast"] = await pair.prompt(fast, "fast")
            hold.set()
    assert results["fast"].stop_reason == "end_turn"
    assert results["slow"].stop_reason == "end_turn"
