"""The turn loop over the wire: streaming, real tool-call ids, every call settles, live == replay, limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError

from hermes_acp.core import AssistantMessageStored, TextPart, ToolCallPart, ToolResultMessage, UserMessage
from hermes_acp.errors import ProviderUnavailableError
from hermes_acp.providers.scripted import ScriptedProvider, ScriptedReply, text_reply, tool_reply
from tests.fakes.acp_client import data_of
from tests.fakes.server import open_pair
from tests.fakes.tools import BlockingTool, EchoTool, FailingTool, GuardedWriteTool, call

pytestmark = pytest.mark.anyio


async def test_streamed_turn_with_tool_calls_keeps_provider_ids_and_settles_each_call(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            tool_reply(call("call_A", "echo", message="a"), call("call_B", "echo", message="b"), text="Let me echo."),
            text_reply("Both echoed."),
        ]
    )
    echo = EchoTool()
    async with open_pair(tmp_path, provider=provider, tools=[echo]) as pair:
        session_id = await pair.new_session()
        with anyio.fail_after(5):
            response = await pair.prompt(session_id, "echo twice")
        frames_a = pair.client.tool_frames("call_A", session_id)
        chunks = pair.client.of_kind("agent_message_chunk", session_id)
        usage_updates = pair.client.of_kind("usage_update", session_id)
    assert response.stop_reason == "end_turn"
    assert response.usage is not None and response.usage.input_tokens == 200
    assert echo.runs == ["a", "b"]
    assert [f.get("status") for f in frames_a] == ["pending", "in_progress", "completed"]
    assert frames_a[0]["title"] == "Echo a"
    assert frames_a[0]["kind"] == "other"
    assert frames_a[0]["rawInput"] == {"message": "a"}
    assert frames_a[-1]["rawOutput"] == {"echoed": "a"}
    assert frames_a[-1]["content"] == [{"type": "content", "content": {"type": "text", "text": "echo: a"}}]
    message_ids = {c["messageId"] for c in chunks}
    assert len(message_ids) == 2, "each assistant message gets its own messageId"
    assert "".join(c["content"]["text"] for c in chunks) == "Let me echo.Both echoed."
    assert len(usage_updates) == 2
    # what the context holds after the call: its prompt and its answer (100 + 20 tokens, as the script reports)
    assert usage_updates[0] == {"sessionUpdate": "usage_update", "used": 120, "size": 32000}
    second = provider.requests[1].messages
    results = [m for m in second if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.parts) for r in results] == [
        ("call_A", [TextPart(text="echo: a")]),
        ("call_B", [TextPart(text="echo: b")]),
    ]


async def test_live_frames_equal_replayed_frames(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            tool_reply(
                call("call_plan", "update_plan", steps=[{"content": "echo", "status": "in_progress"}]),
                call("call_echo", "echo", message="hi"),
                call("call_fail", "fail", message="nope"),
                text="Working.",
            ),
            text_reply("All done."),
        ]
    )
    async with open_pair(tmp_path, provider=provider, tools=[EchoTool(), FailingTool()]) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "do the things")
        await pair.client.wait_for(lambda: bool(pair.client.of_kind("session_info_update", session_id)))
        live_view = pair.client.transcript(session_id)
        pair.client.clear()
        await pair.conn.close_session(session_id=session_id)
        await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
        replay = [
            u for s, u in pair.client.updates if s == session_id and u["sessionUpdate"] != "available_commands_update"
        ]
        replay_view = pair.client.transcript(session_id)
    assert live_view == replay_view
    assert set(live_view["cards"]) == {"call_plan", "call_echo", "call_fail"}
    assert live_view["cards"]["call_fail"]["status"] == "failed"
    assert next(u for u in replay if u["sessionUpdate"] == "user_message_chunk")["content"]["text"] == "do the things"


@pytest.mark.parametrize(
    ("bad_call", "expected"),
    [
        (
            ToolCallPart(id="call_x", name="no_such_tool", arguments="{}"),
            "no tool 'no_such_tool' is available now (the session is in default mode)",
        ),
        (ToolCallPart(id="call_x", name="echo", arguments="{not json"), "arguments must be a JSON object"),
        (ToolCallPart(id="call_x", name="echo", arguments='{"message": 5}'), "message: Input should be a valid string"),
        (ToolCallPart(id="call_x", name="echo", arguments='{"other": 1}'), "message: Field required"),
        (ToolCallPart(id="call_x", name="fail", arguments='{"message": "bug"}'), "RuntimeError: boom"),
        (ToolCallPart(id="call_x", name="fail", arguments='{"message": "x"}'), "it failed: x"),
    ],
)
async def test_bad_calls_fail_with_an_error_the_model_can_act_on_and_the_turn_continues(
    tmp_path: Path, bad_call: ToolCallPart, expected: str
) -> None:
    provider = ScriptedProvider([tool_reply(bad_call), text_reply("I will fix that.")])
    async with open_pair(tmp_path, provider=provider, tools=[EchoTool(), FailingTool()]) as pair:
        session_id = await pair.new_session()
        response = await pair.prompt(session_id, "go")
        state = pair.client.cards(session_id)["call_x"]
    assert response.stop_reason == "end_turn"
    assert state["status"] == "failed"
    result = next(m for m in provider.requests[1].messages if isinstance(m, ToolResultMessage))
    assert result.is_error
    assert expected in result.parts[0].text  # type: ignore[union-attr]


async def test_missing_or_duplicate_tool_call_ids_get_fresh_ids_stored_before_emission(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            tool_reply(
                call("", "echo", message="one"), call("dup", "echo", message="two"), call("dup", "echo", message="3")
            ),
            text_reply("ok"),
        ]
    )
    async with open_pair(tmp_path, provider=provider, tools=[EchoTool()]) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "go")
        started = [u["toolCallId"] for u in pair.client.of_kind("tool_call", session_id)]
        settled = [
            u["toolCallId"]
            for u in pair.client.of_kind("tool_call_update", session_id)
            if u.get("status") == "completed"
        ]
        stored = await pair.store.load_events(session_id)
    assert len(set(started)) == 3
    assert started[1] == "dup"
    assert settled == started
    results = [m.tool_call_id for m in provider.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert results == started
    stored_ids = [
        p.id for e in stored if isinstance(e.event, AssistantMessageStored) for p in e.event.message.tool_calls
    ]
    assert stored_ids == started


async def test_stream_cut_after_output_ends_turn_with_visible_error_and_consistent_history(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [ScriptedReply(parts=[TextPart(text="Half an answer that")], fail_after_chunks=2), text_reply("Recovered.")]
    )
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        with pytest.raises(RequestError) as first:
            await pair.prompt(session_id, "first")
        shown = pair.client.text(session_id)
        second = await pair.prompt(session_id, "second")
    assert first.value.code == -32603
    assert data_of(first.value)["kind"] == "stream_cut"
    assert str(first.value).startswith("The model request failed: ")
    assert "Half an answer t" in shown
    assert "The model request failed" in shown
    history = provider.requests[1].messages
    assert [type(m).__name__ for m in history] == ["UserMessage", "AssistantMessage", "UserMessage"]
    assert history[1].parts == [TextPart(text="Half an answer t")]
    assert second.stop_reason == "end_turn"


async def test_provider_error_before_output_is_visible_and_the_session_continues(tmp_path: Path) -> None:
    down = ProviderUnavailableError("HTTP 503 from the model server after 3 retries", provider="scripted", status=503)
    provider = ScriptedProvider([ScriptedReply(parts=[], error=down), text_reply("back")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        with pytest.raises(RequestError) as first:
            await pair.prompt(session_id, "one")
        second = await pair.prompt(session_id, "two")
        text = pair.client.text(session_id)
    data = data_of(first.value)
    assert (first.value.code, data["kind"], data["status"], data["provider"]) == (
        -32603,
        "server_error",
        503,
        "scripted",
    )
    assert "HTTP 503" in text, "the person reads the notice in the transcript"
    assert second.stop_reason == "end_turn"
    assert isinstance(provider.requests[1].messages[0], UserMessage)
    assert len(provider.requests[1].messages) == 1, "the unanswered prompt merges with the next one"


async def test_max_turn_requests_stops_a_looping_model(tmp_path: Path) -> None:
    provider = ScriptedProvider([tool_reply(call(f"c{i}", "echo", message=str(i))) for i in range(5)])
    config = "[agent]\nmax_turn_requests = 3\n"
    async with open_pair(tmp_path, provider=provider, tools=[EchoTool()], config=config) as pair:
        session_id = await pair.new_session()
        response = await pair.prompt(session_id, "loop")
        statuses = [pair.client.cards(session_id)[f"c{i}"].get("status") for i in range(3)]
    assert response.stop_reason == "max_turn_requests"
    assert len(provider.requests) == 3
    assert statuses == ["completed"] * 3


@pytest.mark.parametrize(("model_stop", "turn_stop"), [("max_tokens", "max_tokens"), ("refusal", "refusal")])
async def test_model_stop_reasons_map_to_acp(tmp_path: Path, model_stop: Any, turn_stop: str) -> None:
    provider = ScriptedProvider([text_reply("partial", stop_reason=model_stop)])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        response = await pair.prompt(session_id, "go")
    assert response.stop_reason == turn_stop


async def test_max_tokens_with_cut_off_tool_call_settles_it_without_running(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [tool_reply(ToolCallPart(id="c1", name="echo", arguments='{"mess'), stop_reason="max_tokens")]
    )
    echo = EchoTool()
    async with open_pair(tmp_path, provider=provider, tools=[echo]) as pair:
        session_id = await pair.new_session()
        response = await pair.prompt(session_id, "go")
        state = pair.client.cards(session_id)["c1"]
    assert response.stop_reason == "max_tokens"
    assert state["status"] == "failed"
    assert echo.runs == []


async def test_system_prompt_and_tool_schemas_are_byte_identical_across_requests(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            tool_reply(call("c1", "echo", message="x")),
            text_reply("one"),
            tool_reply(call("c2", "echo", message="y")),
            text_reply("two"),
        ]
    )
    async with open_pair(tmp_path, provider=provider, tools=[EchoTool()]) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "first")
        await pair.conn.set_session_mode(session_id=session_id, mode_id="accept_edits")
        await pair.prompt(session_id, "second")
    systems = {r.system for r in provider.requests}
    schemas = {json.dumps([t.model_dump() for t in r.tools], sort_keys=False) for r in provider.requests}
    assert len(systems) == 1
    assert len(schemas) == 1
    assert len(next(iter(systems))) < 2000, "the system prompt stays small"


async def test_title_comes_from_the_first_prompt_after_the_first_turn(tmp_path: Path) -> None:
    async with open_pair(tmp_path, provider=ScriptedProvider([text_reply("a"), text_reply("b")])) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "  Fix the flaky   login test\nmore details")
        await pair.client.wait_for(lambda: bool(pair.client.of_kind("session_info_update", session_id)))
        await pair.prompt(session_id, "another prompt")
        titles = [u["title"] for u in pair.client.of_kind("session_info_update", session_id)]
    assert titles == ["Fix the flaky login test"]
    assert pair.provider is not None
    assert len(pair.provider.requests) == 2, "titles cost no extra model call"


async def test_plan_tool_emits_the_complete_plan(tmp_path: Path) -> None:
    steps = [
        {"content": "read", "status": "completed"},
        {"content": "write", "status": "in_progress", "priority": "high"},
    ]
    provider = ScriptedProvider([tool_reply(call("p1", "update_plan", steps=steps)), text_reply("ok")])
    async with open_pair(tmp_path, provider=provider) as pair:
        session_id = await pair.new_session()
        await pair.prompt(session_id, "plan it")
        plans = pair.client.of_kind("plan", session_id)
    assert plans == [
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "read", "priority": "medium", "status": "completed"},
                {"content": "write", "priority": "high", "status": "in_progress"},
            ],
        }
    ]


async def test_blocking_tool_streams_progress_while_running(tmp_path: Path) -> None:
    blocker = BlockingTool()
    provider = ScriptedProvider([tool_reply(call("b1", "block", message="x")), text_reply("released")])
    async with open_pair(tmp_path, provider=provider, tools=[blocker]) as pair:
        session_id = await pair.new_session()
        async with anyio.create_task_group() as tg:
            tg.start_soon(pair.prompt, session_id, "block")
            with anyio.fail_after(5):
                await blocker.started.wait()
            await pair.client.wait_for(
                lambda: any(
                    f.get("content")
                    for f in pair.client.tool_frames("b1", session_id)
                    if f.get("status") == "in_progress"
                )
            )
            blocker.release.set()
        state = pair.client.cards(session_id)["b1"]
    assert state["status"] == "completed"


async def test_denied_call_is_not_run_and_settles_with_the_permission_request_id(tmp_path: Path) -> None:
    writer = GuardedWriteTool()
    provider = ScriptedProvider([tool_reply(call("w1", "guarded_write", message="hello")), text_reply("ok")])
    async with open_pair(tmp_path, provider=provider, tools=[writer]) as pair:
        pair.client.answers = ["reject_once"]
        session_id = await pair.new_session()
        await pair.prompt(session_id, "write")
        order = [
            (u["sessionUpdate"], u.get("status"))
            for u in (u for _, u in pair.client.updates)
            if u.get("toolCallId") == "w1"
        ]
        (asked,) = pair.client.permissions
        state = pair.client.cards(session_id)["w1"]
    assert writer.writes == []
    assert asked.tool_call["toolCallId"] == "w1"
    assert asked.tool_call["title"] == "Write notes.txt"
    assert asked.tool_call["rawInput"] == {"message": "hello"}
    assert asked.tool_call["content"][0]["type"] == "diff"
    assert {o["kind"] for o in asked.options} == {"allow_once", "allow_always", "reject_once", "reject_always"}
    assert order[0] == ("tool_call", "pending")
    assert state["status"] == "failed"


async def test_allow_always_is_remembered_and_survives_a_reload(tmp_path: Path) -> None:
    writer = GuardedWriteTool()
    provider = ScriptedProvider(
        [
            tool_reply(call("w1", "guarded_write", message="one")),
            text_reply("ok"),
            tool_reply(call("w2", "guarded_write", message="two")),
            text_reply("ok"),
            tool_reply(call("w3", "guarded_write", message="three")),
            text_reply("ok"),
        ]
    )
    async with open_pair(tmp_path, provider=provider, tools=[writer]) as pair:
        pair.client.answers = ["allow_always"]
        session_id = await pair.new_session()
        await pair.prompt(session_id, "one")
        await pair.prompt(session_id, "two")
    async with open_pair(tmp_path, provider=provider, tools=[writer]) as pair:
        await pair.conn.load_session(cwd=str(pair.workspace), session_id=session_id, mcp_servers=[])
        await pair.prompt(session_id, "three")
        asked_after_reload = len(pair.client.permissions)
    assert writer.writes == ["one", "two", "three"]
    assert asked_after_reload == 0


async def test_permission_timeout_denies_only_that_call(tmp_path: Path) -> None:
    writer = GuardedWriteTool()
    provider = ScriptedProvider(
        [
            tool_reply(call("w1", "guarded_write", message="late"), call("w2", "guarded_write", message="on time")),
            text_reply("ok"),
        ]
    )
    answered = anyio.Event()

    async def slow_then_fast(asked: Any) -> str:
        if asked.tool_call["toolCallId"] == "w1":
            await answered.wait()
        return "allow_once"

    async with open_pair(tmp_path, provider=provider, tools=[writer], config="[permissions]\ntimeout_s = 1\n") as pair:
        pair.client.on_permission = slow_then_fast
        session_id = await pair.new_session()
        with anyio.fail_after(15):
            await pair.prompt(session_id, "two writes")
        answered.set()
        first = pair.client.cards(session_id)["w1"]
        second = pair.client.cards(session_id)["w2"]
    assert first["status"] == "failed"
    assert "no answer" in first["content"][0]["content"]["text"]
    assert second["status"] == "completed"
    assert writer.writes == ["on time"]


async def test_read_only_mode_refuses_mutations_without_asking(tmp_path: Path) -> None:
    writer = GuardedWriteTool()
    provider = ScriptedProvider([tool_reply(call("w1", "guarded_write", message="x")), text_reply("ok")])
    async with open_pair(tmp_path, provider=provider, tools=[writer]) as pair:
        session_id = await pair.new_session()
        await pair.conn.set_session_mode(session_id=session_id, mode_id="read_only")
        await pair.prompt(session_id, "write")
        state = pair.client.cards(session_id)["w1"]
    assert pair.client.permissions == []
    assert writer.writes == []
    assert state["status"] == "failed"
    assert "read_only" in state["content"][0]["content"]["text"]


async def test_an_internal_failure_mid_turn_still_settles_every_card_and_answers_with_an_error(tmp_path: Path) -> None:
    from acp import RequestError

    def broken(request: Any) -> Any:
        raise RuntimeError("a bug in a reply factory")

    provider = ScriptedProvider(
        [tool_reply(call("c1", "echo", message="x"), call("c2", "fail", message="y")), broken, text_reply("fine")]
    )
    async with open_pair(tmp_path, provider=provider, tools=[EchoTool(), FailingTool()]) as pair:
        session_id = await pair.new_session()
        with pytest.raises(RequestError) as caught:
            await pair.prompt(session_id, "go")
        statuses = {cid: pair.client.cards(session_id)[cid].get("status") for cid in ("c1", "c2")}
        after = await pair.prompt(session_id, "again")
    assert caught.value.code == -32603
    assert "a bug in a reply factory" in str(caught.value)
    assert statuses == {"c1": "completed", "c2": "failed"}
    assert after.stop_reason == "end_turn"
