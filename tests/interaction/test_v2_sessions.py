"""ACP v2 on a real connection pair, in raw frames: the version chosen at ``initialize`` and the router's refusals, the
routes per version, and what v2 changes in a session's life: a prompt answered ``{messageId}`` once inserted, a held
prompt answered -32800 when cancelled (by ``session/cancel`` or ``$/cancel_request``, which leaves an inserted one
alone), ``session/close`` sending the cancelled idle state before it answers, ``tool_call/cancel``, a turn that fails
after its prompt was inserted (idle with the error), the foreground states around a permission question, and a
permission answer that carries an operation id applied once. Every frame is checked against the v2 schema and its
closed lists."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from hermes_acp.core import TextPart, Usage
from hermes_acp.errors import ProviderAuthError, ProviderUnavailableError
from hermes_acp.providers.scripted import ScriptedProvider, ScriptedReply, text_reply, tool_reply
from tests.fakes.server import open_raw
from tests.fakes.tools import BlockingTool, GuardedWriteTool, call
from tests.fakes.v2_peer import INITIALIZE, V2Peer, v2_peer

pytestmark = pytest.mark.anyio


async def _new(peer: V2Peer, tmp_path: Path) -> str:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    result = await peer.request("session/new", {"cwd": str(workspace)})
    assert "modes" not in result and "models" not in result, "v2 has its options only"
    assert all("configId" in option for option in result["configOptions"])
    session_id: str = result["sessionId"]
    return session_id


def _prompt(session_id: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


async def test_the_version_is_chosen_per_connection_and_the_router_s_refusals_hold(tmp_path: Path) -> None:
    async with open_raw(tmp_path) as raw:
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 0}})
        unsupported = (await raw.response(1))["error"]
        await raw.send({"jsonrpc": "2.0", "id": None, "method": "initialize", "params": INITIALIZE})
        null_id = (await raw.response(None))["error"]
        await raw.send({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": 2}})
        no_info = (await raw.response(2))["error"]
        later = {**INITIALIZE, "protocolVersion": 7}
        await raw.send({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": later})
        chosen = (await raw.response(3))["result"]
        await raw.send({"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {"protocolVersion": 1}})
        lower = (await raw.response(4))["error"]
        await raw.send({"jsonrpc": "2.0", "id": 5, "method": "session/load", "params": {"sessionId": "x", "cwd": "/"}})
        v1_only = (await raw.response(5))["error"]
        await raw.send({"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": INITIALIZE})
        after_other = (await raw.response(6))["error"]
    assert unsupported == {
        "code": -32022,
        "message": "Unsupported protocol version 0: this agent speaks 1, 2",
        "data": {"requested": 0, "supported": [1, 2]},
    }
    assert null_id["code"] == -32600 and "strings or integers" in null_id["message"]
    assert no_info["code"] == -32602 and "info" in no_info["message"]
    assert chosen["protocolVersion"] == 2 and chosen["_meta"]["hermes"]["remote"]["serverEpoch"]
    assert lower["code"] == -32600, "a v2 connection takes no repeat for v1"
    assert v1_only["code"] == -32601 and "ACP v2" in v1_only["message"], "session/load is v1's"
    assert after_other["code"] == -32600, "nor a repeat after other requests"


async def test_v2_methods_are_not_routed_on_a_v1_connection(tmp_path: Path) -> None:
    async with open_raw(tmp_path) as raw:
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        assert (await raw.response(1))["result"]["protocolVersion"] == 1
        await raw.send({"jsonrpc": "2.0", "id": 2, "method": "auth/logout", "params": {}})
        refused = (await raw.response(2))["error"]
        await raw.send({"jsonrpc": "2.0", "id": 3, "method": "logout", "params": {}})
        answered = await raw.response(3)
    assert refused["code"] == -32601 and "ACP v1" in refused["message"]
    assert answered["result"] == {}


async def test_a_prompt_is_answered_once_inserted_and_a_held_one_is_cancelled_with_the_session(
    tmp_path: Path,
) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text="streaming on")], hold=hold), text_reply("no")])
    async with open_raw(tmp_path, provider=provider) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        first = await peer.request("session/prompt", _prompt(session_id, "first"))
        held = await peer.send("session/prompt", _prompt(session_id, "second"))
        await peer.wait_for(lambda: any(u["sessionUpdate"] == "agent_message_chunk" for u in peer.updates()))
        await peer.notify("session/cancel", {"sessionId": session_id})
        withdrawn = await peer.answer(held)
        await peer.wait_for(lambda: peer.states()[-1]["state"] == "idle")
        hold.set()
    user = next(u for u in peer.updates() if u["sessionUpdate"] == "user_message")
    assert first == {"messageId": user["messageId"]}, "answered with the id of its user message, at once"
    assert withdrawn["error"]["code"] == -32800, "the held prompt never started"
    assert [s["state"] for s in peer.states()] == ["running", "idle"]
    assert peer.states()[-1]["stopReason"] == "cancelled"
    assert len(provider.requests) == 1


async def test_cancel_request_withdraws_a_held_prompt_and_leaves_an_inserted_one(tmp_path: Path) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text="working")], hold=hold), text_reply("then")])
    async with open_raw(tmp_path, provider=provider) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        running = await peer.send("session/prompt", _prompt(session_id, "first"))
        assert "result" in await peer.answer(running)
        held = await peer.send("session/prompt", _prompt(session_id, "second"))
        await peer.notify("$/cancel_request", {"requestId": held})
        await peer.notify("$/cancel_request", {"requestId": running})  # answered already: ignored
        withdrawn = await peer.answer(held)
        hold.set()
        await peer.wait_for(lambda: bool(peer.states()) and peer.states()[-1]["state"] == "idle")
    assert withdrawn["error"]["code"] == -32800
    assert peer.states()[-1]["stopReason"] == "end_turn", "the inserted prompt's turn went on"
    assert [u["content"][0]["text"] for u in peer.updates() if u["sessionUpdate"] == "user_message"] == ["first"]
    assert len(provider.requests) == 1, "the withdrawn prompt never ran"


async def test_close_sends_the_cancelled_idle_state_then_answers(tmp_path: Path) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text="long")], hold=hold)])
    async with open_raw(tmp_path, provider=provider) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        await peer.request("session/prompt", _prompt(session_id, "go"))
        held = await peer.send("session/prompt", _prompt(session_id, "after it"))
        await peer.wait_for(lambda: any(u["sessionUpdate"] == "agent_message_chunk" for u in peer.updates()))
        closing = await peer.send("session/close", {"sessionId": session_id})
        assert (await peer.answer(closing))["result"] == {}
        assert (await peer.answer(held))["error"]["code"] == -32800, "a held prompt closed with its session"
        unknown = await peer.request("session/close", {"sessionId": "never-was"})
    idle = peer.index(lambda m: m.get("method") == "session/update" and m["params"]["update"].get("state") == "idle")
    answered = peer.index(lambda m: m.get("id") == closing and "method" not in m)
    assert idle < answered, "the cancelled idle state before the answer"
    assert peer.messages[idle]["params"]["update"]["stopReason"] == "cancelled"
    assert unknown == {}, "an unknown session is closed already"


async def test_tool_call_cancel_settles_that_call_cancelled_and_the_turn_goes_on(tmp_path: Path) -> None:
    blocking = BlockingTool()
    provider = ScriptedProvider([tool_reply(call("c1", "block", message="x")), text_reply("went on")])
    async with open_raw(tmp_path, provider=provider, tools=[blocking]) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        await peer.request("session/prompt", _prompt(session_id, "block please"))
        with anyio.fail_after(10):
            await blocking.started.wait()
        calls = [u for u in peer.updates() if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == "c1"]
        started = calls[0]
        assert started["capabilities"] == {"cancel": {}}
        assert await peer.request("tool_call/cancel", {"sessionId": session_id, "toolCallId": "c1"}) == {}
        await peer.wait_for(lambda: bool(peer.states()) and peer.states()[-1]["state"] == "idle")
        again = await peer.answer(await peer.send("tool_call/cancel", {"sessionId": session_id, "toolCallId": "c1"}))
        terminal = await peer.answer(await peer.send("terminal/cancel", {"sessionId": session_id, "terminalId": "c1"}))
    final = [u for u in peer.updates() if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == "c1"][-1]
    assert final["status"] == "cancelled" and final["capabilities"] is None
    assert blocking.cancelled
    assert peer.states()[-1]["stopReason"] == "end_turn", "the turn went on with the call's result"
    assert any(u["sessionUpdate"] == "agent_message" and u["content"][0]["text"] == "went on" for u in peer.updates())
    assert again["error"]["code"] == -32602, "a final call takes no more cancels"
    assert terminal["error"]["code"] == -32602


def _terminal_updates(peer: V2Peer, terminal_id: str) -> list[dict[str, Any]]:
    return [u for u in peer.updates() if u["sessionUpdate"] == "terminal_update" and u["terminalId"] == terminal_id]


def _final_call(peer: V2Peer, call_id: str) -> dict[str, Any]:
    calls = [u for u in peer.updates() if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == call_id]
    return calls[-1]


RUNNING = "echo before; echo started > ready.fifo; sleep 300"
"""The command of call ``t1`` in ``_running_command``: it says it started through a FIFO, then sleeps."""


@contextlib.asynccontextmanager
async def _running_command(tmp_path: Path) -> AsyncIterator[tuple[V2Peer, str, ScriptedProvider]]:
    """A v2 peer whose session runs ``RUNNING`` as call ``t1`` (approved once), yielded once it has started: the
    peer, the session's id, and the model (it answers "went on" after the call)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    ready = workspace / "ready.fifo"
    os.mkfifo(ready)
    provider = ScriptedProvider([tool_reply(call("t1", "terminal", command=RUNNING)), text_reply("went on")])
    async with open_raw(tmp_path, provider=provider) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        await peer.request("session/prompt", _prompt(session_id, "run it"))
        await peer.wait_for(lambda: bool(peer.asks()))
        await peer.reply(peer.asks()[0], {"outcome": {"outcome": "selected", "optionId": "allow_once"}})
        with anyio.fail_after(15):
            assert await anyio.to_thread.run_sync(ready.read_text, abandon_on_cancel=True) == "started\n"
        yield peer, session_id, provider


async def test_terminal_cancel_stops_the_command_and_its_call_settles_with_the_output(tmp_path: Path) -> None:
    async with _running_command(tmp_path) as (peer, session_id, provider):
        opened = _terminal_updates(peer, "t1")[0]
        assert opened["capabilities"] == {"cancel": {}} and opened["command"] == RUNNING
        cancel = {"sessionId": session_id, "terminalId": "t1"}
        assert await peer.request("terminal/cancel", cancel) == {}
        await peer.wait_for(lambda: bool(peer.states()) and peer.states()[-1]["state"] == "idle")
        again = await peer.answer(await peer.send("terminal/cancel", cancel))
        unknown = await peer.answer(await peer.send("terminal/cancel", {**cancel, "terminalId": "never-was"}))
    exited = _terminal_updates(peer, "t1")[-1]
    assert exited["exitStatus"].get("signal") in {"SIGTERM", "SIGKILL"} and exited["capabilities"] is None
    final = _final_call(peer, "t1")
    assert final["status"] == "failed", "the call was not cancelled: it settled with the command's end"
    assert peer.states()[-1]["stopReason"] == "end_turn", "the turn went on with the call's result"
    told = provider.requests[-1].messages[-1]
    assert "Stopped from the editor: the command was killed." in str(told) and "before" in str(told)
    assert again["error"]["code"] == -32602 and "cannot be cancelled" in again["error"]["message"]
    assert unknown["error"]["code"] == -32602


def _resumed_from_the_start(peer: V2Peer, at: int, request_id: int) -> list[dict[str, Any]]:
    """The updates a resume sent before its answer (``at``: where the messages stood when it was sent)."""
    answered = peer.index(lambda m: "method" not in m and m.get("id") == request_id)
    return [m["params"]["update"] for m in peer.messages[at:answered] if m.get("method") == "session/update"]


async def test_a_client_that_resumes_mid_command_is_offered_the_cancels_that_still_hold(tmp_path: Path) -> None:
    """A replayed announcement offers no cancel (it may have ended); one that still runs is offered its cancels
    after the catch-up, as patches, before the resume answers: the call's and its command's. Once it has settled,
    a resume offers none."""
    async with _running_command(tmp_path) as (peer, session_id, _):
        resume = {"sessionId": session_id, "cwd": str(tmp_path / "workspace"), "replayFrom": {"type": "start"}}
        at = len(peer.messages)
        await peer.answer(request_id := await peer.send("session/resume", resume))
        running = _resumed_from_the_start(peer, at, request_id)
        assert await peer.request("terminal/cancel", {"sessionId": session_id, "terminalId": "t1"}) == {}
        await peer.wait_for(lambda: bool(peer.states()) and peer.states()[-1]["state"] == "idle")
        at = len(peer.messages)
        await peer.answer(request_id := await peer.send("session/resume", resume))
        settled = _resumed_from_the_start(peer, at, request_id)
    kinds = [(u["sessionUpdate"], u.get("toolCallId") or u.get("terminalId")) for u in running]
    announced = kinds.index(("tool_call_update", "t1"))
    assert "capabilities" not in running[announced], "the replayed announcement offers nothing itself"
    offered = [u for u in running if "capabilities" in u]
    assert offered == [
        {"sessionUpdate": "terminal_update", "terminalId": "t1", "capabilities": {"cancel": {}}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "capabilities": {"cancel": {}}},
    ]
    state = next(i for i, u in enumerate(running) if u["sessionUpdate"] == "state_update")
    assert announced < running.index(offered[0]) < running.index(offered[1]) < state, "after the catch-up"
    assert running[state]["state"] == "running"
    assert _terminal_updates(peer, "t1")[-1]["exitStatus"].get("signal") in {"SIGTERM", "SIGKILL"}
    assert all(u.get("capabilities") != {"cancel": {}} for u in settled), "nothing of a settled call is offered"
    assert any(u.get("toolCallId") == "t1" and u["sessionUpdate"] == "tool_call_update" for u in settled)


async def test_a_queued_terminal_and_a_queued_call_are_stopped_before_they_start(tmp_path: Path) -> None:
    """Calls announced together each advertise their cancel at once: one queued behind a running call takes it
    (its command never runs and nobody is asked about it; a whole call queued settles cancelled)."""
    workspace = tmp_path / "workspace"
    blocking = BlockingTool()
    provider = ScriptedProvider(
        [
            tool_reply(
                call("b1", "block", message="x"),
                call("t2", "terminal", command="touch ran.txt"),
                call("b3", "block", message="y"),
            ),
            text_reply("went on"),
        ]
    )
    async with open_raw(tmp_path, provider=provider, tools=[blocking]) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        await peer.request("session/prompt", _prompt(session_id, "go"))
        with anyio.fail_after(10):
            await blocking.started.wait()
        assert _terminal_updates(peer, "t2")[0]["capabilities"] == {"cancel": {}}
        assert await peer.request("terminal/cancel", {"sessionId": session_id, "terminalId": "t2"}) == {}
        assert await peer.request("tool_call/cancel", {"sessionId": session_id, "toolCallId": "b3"}) == {}
        assert await peer.request("tool_call/cancel", {"sessionId": session_id, "toolCallId": "b1"}) == {}
        await peer.wait_for(lambda: bool(peer.states()) and peer.states()[-1]["state"] == "idle")
    assert not (workspace / "ran.txt").exists() and peer.asks() == [], "not run, and nobody asked about it"
    assert _terminal_updates(peer, "t2")[-1]["exitStatus"] == {}
    assert (_final_call(peer, "t2")["status"], _final_call(peer, "b3")["status"]) == ("failed", "cancelled")
    assert peer.states()[-1]["stopReason"] == "end_turn"


async def test_terminal_cancel_while_its_call_waits_for_approval_keeps_the_command_from_running(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider([tool_reply(call("t1", "terminal", command="touch ran.txt")), text_reply("ok")])
    async with open_raw(tmp_path, provider=provider) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        await peer.request("session/prompt", _prompt(session_id, "run it"))
        await peer.wait_for(lambda: bool(peer.asks()))
        assert await peer.request("terminal/cancel", {"sessionId": session_id, "terminalId": "t1"}) == {}
        await peer.reply(peer.asks()[0], {"outcome": {"outcome": "selected", "optionId": "allow_once"}})
        await peer.wait_for(lambda: bool(peer.states()) and peer.states()[-1]["state"] == "idle")
    assert not (tmp_path / "workspace" / "ran.txt").exists()
    assert _terminal_updates(peer, "t1")[-1]["exitStatus"] == {}
    assert _final_call(peer, "t1")["status"] == "failed"
    assert "before it started: the command was not run" in str(provider.requests[-1].messages[-1])


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ProviderAuthError("the key was refused", provider="scripted"), -32000),
        (ProviderUnavailableError("the provider is down", provider="scripted"), -32603),
    ],
    ids=["raised", "ended-on"],
)
async def test_a_turn_that_fails_after_insertion_ends_idle_with_the_error(
    tmp_path: Path, error: Exception, code: int
) -> None:
    provider = ScriptedProvider([ScriptedReply(parts=[], error=error)])  # type: ignore[arg-type]
    async with open_raw(tmp_path, provider=provider) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        answer = await peer.request("session/prompt", _prompt(session_id, "fail please"))
        await peer.wait_for(lambda: bool(peer.states()) and peer.states()[-1]["state"] == "idle")
    assert answer["messageId"], "inserted: the prompt's answer is its id"
    idle = peer.states()[-1]
    assert idle["stopReason"] == "error"
    assert idle["error"]["code"] == code and str(error) in idle["error"]["message"]
    assert idle["error"]["data"]["provider"] == "scripted", "the error object a v1 answer carries, data included"


async def test_the_foreground_requires_action_while_a_question_waits(tmp_path: Path) -> None:
    writer = GuardedWriteTool()
    provider = ScriptedProvider([tool_reply(call("w1", "guarded_write", message="x")), text_reply("done")])
    async with open_raw(tmp_path, provider=provider, tools=[writer]) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        await peer.request("session/prompt", _prompt(session_id, "write please"))
        await peer.wait_for(lambda: bool(peer.asks()))
        [ask] = peer.asks()
        assert ask["params"]["subject"]["toolCall"]["toolCallId"] == "w1" and ask["params"]["title"]
        assert peer.states()[-1]["state"] == "requires_action"
        await peer.reply(ask, {"outcome": {"outcome": "selected", "optionId": "allow_once"}})
        await peer.wait_for(lambda: peer.states()[-1]["state"] == "idle")
    assert [s["state"] for s in peer.states()] == ["running", "requires_action", "running", "idle"]
    assert writer.writes == ["x"]


async def test_a_permission_answer_s_operation_id_answers_one_question_only(tmp_path: Path) -> None:
    writer = GuardedWriteTool()
    provider = ScriptedProvider(
        [
            tool_reply(call("w1", "guarded_write", message="one")),
            tool_reply(call("w2", "guarded_write", message="two")),
            text_reply("done"),
        ]
    )
    allow = {"outcome": {"outcome": "selected", "optionId": "allow_once"}, "_meta": {"hermes": {"operationId": "a1"}}}
    async with open_raw(tmp_path, provider=provider, tools=[writer]) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        await peer.request("session/prompt", _prompt(session_id, "write twice"))
        await peer.wait_for(lambda: len(peer.asks()) == 1)
        await peer.reply(peer.asks()[0], allow)
        await peer.wait_for(lambda: len(peer.asks()) == 2)
        await peer.reply(peer.asks()[1], allow)  # the same answer, resent to another question
        await peer.wait_for(lambda: peer.states()[-1]["state"] == "idle")
    assert writer.writes == ["one"], "applied once: the second question was not answered by it"
    second = [u for u in peer.updates() if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == "w2"]
    assert second[-1]["status"] == "failed"


async def test_the_unstable_methods_answer_in_v2_s_shapes(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_reply("hello")])
    async with open_raw(tmp_path, provider=provider) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        await peer.request("session/prompt", _prompt(session_id, "hi"))
        await peer.wait_for(lambda: bool(peer.states()) and peer.states()[-1]["state"] == "idle")
        title = await peer.request("session/set_title", {"sessionId": session_id, "title": "Named"})
        status = await peer.request("session/status", {"sessionId": session_id})
        forked = await peer.request("session/fork", {"sessionId": session_id, "cwd": str(tmp_path / "workspace")})
        listed = await peer.request("session/list", {})
        await peer.request("session/archive", {"sessionId": forked["sessionId"]})
        archived = await peer.request("session/list", {"archived": "only"})
        providers = await peer.request("providers/list", {})
        missing = await peer.answer(await peer.send("session/status", {"sessionId": "missing"}))
    assert title == {"title": "Named"}
    assert status["status"] == "open"
    assert status["state"] == {"state": "idle", "stopReason": "end_turn", "usage": status["state"]["usage"]}
    assert "modes" not in forked and forked["sessionId"] != session_id
    assert {s["sessionId"] for s in listed["sessions"]} == {session_id, forked["sessionId"]}
    assert [s["sessionId"] for s in archived["sessions"]] == [forked["sessionId"]]
    assert isinstance(providers["providers"], list)
    assert missing["error"]["code"] == -32002 and missing["error"]["data"]["sessionId"] == "missing"


async def test_a_cursor_from_before_a_restart_is_refused_as_another_epoch(tmp_path: Path) -> None:
    async with open_raw(tmp_path, provider=ScriptedProvider([text_reply("first")])) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        await peer.request("session/prompt", _prompt(session_id, "hi"))
        await peer.wait_for(lambda: bool(peer.states()) and peer.states()[-1]["state"] == "idle")
        cursor = [m for m in peer.messages if m.get("method") == "session/update"][-1]["params"]["_meta"]["hermes"]
        epoch = peer.messages[0]["result"]["_meta"]["hermes"]["remote"]["serverEpoch"]
    async with open_raw(tmp_path) as raw, v2_peer(raw) as peer:  # the same store, a new server
        again = peer.messages[0]["result"]["_meta"]["hermes"]["remote"]["serverEpoch"]
        resume = {
            "sessionId": session_id,
            "cwd": str(tmp_path / "workspace"),
            "_meta": {"hermes": {"afterCursor": cursor["cursor"]}},
        }
        refused = await peer.answer(await peer.send("session/resume", resume))
    assert again != epoch
    assert refused["error"]["code"] == -32602
    assert refused["error"]["data"]["condition"] == "server_epoch_changed"
    assert refused["error"]["data"]["serverEpoch"] == again


async def test_a_held_prompt_with_an_operation_id_is_withdrawn_and_a_resend_gets_the_same_answer(
    tmp_path: Path,
) -> None:
    hold = anyio.Event()
    provider = ScriptedProvider([ScriptedReply(parts=[TextPart(text="busy")], hold=hold), text_reply("never")])
    async with open_raw(tmp_path, provider=provider) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        await peer.request("session/prompt", _prompt(session_id, "first"))
        once = {**_prompt(session_id, "second"), "_meta": {"hermes": {"operationId": "op-held"}}}
        held = await peer.send("session/prompt", once)
        await peer.notify("$/cancel_request", {"requestId": held})
        withdrawn = await peer.answer(held)
        resent = await peer.answer(await peer.send("session/prompt", once))
        hold.set()
        await peer.wait_for(lambda: bool(peer.states()) and peer.states()[-1]["state"] == "idle")
    assert withdrawn["error"]["code"] == -32800
    assert resent["error"] == withdrawn["error"], "the first outcome, again"
    assert len(provider.requests) == 1, "the withdrawn prompt never ran"


async def test_the_context_meter_carries_the_budget_on_v2_as_on_v1(tmp_path: Path) -> None:
    """``usage_update`` is rendered by one function for both versions: the caps spent and left ride along on v2."""
    provider = ScriptedProvider([text_reply("Answer.", usage=Usage(input_tokens=900, output_tokens=100))])
    config = "[budget]\nsession_tokens = 5000\n"
    async with open_raw(tmp_path, provider=provider, config=config) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)
        await peer.request("session/prompt", _prompt(session_id, "hello"))

        def spent() -> list[dict[str, Any]]:
            return [
                u["_meta"]["hermes"]["budget"]["session_tokens"]
                for u in peer.updates(session_id)
                if u["sessionUpdate"] == "usage_update" and u.get("_meta")
            ]

        await peer.wait_for(lambda: any(cap["spent"] == 1000 for cap in spent()))
    assert {"unit": "tokens", "limit": 5000, "spent": 1000, "left": 4000, "lifted": False} in spent()


async def test_a_budget_stop_ends_idle_with_the_limit_and_the_cost_as_a_v1_answer_names_them(tmp_path: Path) -> None:
    big = Usage(input_tokens=900, output_tokens=100)
    provider = ScriptedProvider([text_reply(f"Answer {n}.", usage=big) for n in range(3)])
    config = "[budget]\nsession_tokens = 1500\n"
    async with open_raw(tmp_path, provider=provider, config=config) as raw, v2_peer(raw) as peer:
        session_id = await _new(peer, tmp_path)

        def ended(count: int) -> Callable[[], bool]:
            return lambda: sum(state["state"] == "idle" for state in peer.states(session_id)) >= count

        for n in range(3):
            await peer.request("session/prompt", _prompt(session_id, f"prompt {n}"))
            await peer.wait_for(ended(n + 1))
    idles = [s for s in peer.states(session_id) if s["state"] == "idle"]
    assert [s["stopReason"] for s in idles] == ["end_turn", "end_turn", "max_turn_requests"]
    limit = idles[-1]["_meta"]["hermes"]["limit"]
    assert (limit["kind"], limit["limit"]) == ("budget", "session_tokens")
    assert "error" not in idles[-1], "a limit is a stop reason, never an error"
    assert "_meta" not in idles[0], "a finished prompt without prices names no limit and no cost"
