"""The dispatcher on its own, with routes of the test's, driven by the acp SDK's own client (1.0) and raw frames:
cancel scopes per request, ``$/cancel_request`` both ways, requests we send, the after-response hook, the one
error boundary, and what happens when the client leaves."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import acp
import anyio
import pytest
from acp import RequestError

from hermes_acp.errors import InvalidParamsError, SessionNotFoundError
from hermes_acp.jsonrpc.boundary import ClientRequestError, ErrorMap
from hermes_acp.jsonrpc.dispatcher import Dispatcher, RequestContext, Route
from hermes_acp.jsonrpc.framing import LineReader
from hermes_acp.jsonrpc.link import ClientGone, LineWriter
from hermes_acp.protocol.errors import acp_error
from tests.fakes.acp_client import RecordingClient
from tests.fakes.server import RawPair, socket_streams

pytestmark = pytest.mark.anyio


@dataclass
class Probe:
    """Routes that tell the test what happened to them."""

    started: anyio.Event = field(default_factory=anyio.Event)
    cancelled: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)
    hooked: list[str] = field(default_factory=list)
    hook_ran: anyio.Event = field(default_factory=anyio.Event)
    cancel_hook_params: list[Any] = field(default_factory=list)

    async def slow(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        self.started.set()
        try:
            await self.release.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise
        return {"done": True}

    async def turn(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        """Like a prompt: stops (and still answers) when its cancel hook fires."""
        self.started.set()
        await self.release.wait()
        return {"stopReason": "cancelled" if self.cancel_hook_params else "end_turn"}

    def stop_turn(self, params: Any) -> None:
        self.cancel_hook_params.append(params)
        self.release.set()

    async def with_hook(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        async def after() -> None:
            self.hooked.append("after")
            self.hook_ran.set()

        ctx.after_response(after)
        return {"answered": True}

    async def fails(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        kind = params.get("kind") if isinstance(params, dict) else None
        if kind == "params":
            raise InvalidParamsError("cwd: must be absolute", field="cwd")
        if kind == "session":
            raise SessionNotFoundError("ghost")
        raise ZeroDivisionError("a bug")

    def routes(self) -> list[Route]:
        return [
            Route("_slow", self.slow),
            Route("_turn", self.turn, cancel=self.stop_turn),
            Route("_hook", self.with_hook),
            Route("_fails", self.fails),
        ]


@contextlib.asynccontextmanager
async def served(probe: Probe, errors: ErrorMap | None = acp_error) -> AsyncIterator[tuple[Dispatcher, Any, RawPair]]:
    """A dispatcher (with the server's ACP error mapping unless told otherwise) on one end of a socketpair; the SDK
    client and raw access on the other."""
    async with socket_streams() as (agent_reader, agent_writer, client_reader, client_writer):
        dispatcher = Dispatcher(LineReader(agent_reader), LineWriter(agent_writer), errors=errors)
        dispatcher.add_routes(probe.routes(), complete=True)
        async with anyio.create_task_group() as tg:
            tg.start_soon(dispatcher.run)
            yield dispatcher, (client_reader, client_writer), RawPair(client_reader, client_writer)
            tg.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def sdk_client(ends: Any) -> AsyncIterator[Any]:
    reader, writer = ends
    conn = acp.connect_to_agent(RecordingClient(), writer, reader, use_unstable_protocol=True)
    try:
        yield conn
    finally:
        await conn.close()


async def test_the_sdk_client_cancelling_its_call_sends_cancel_request_and_the_handler_is_cancelled() -> None:
    probe = Probe()
    async with served(probe) as (_, ends, _raw), sdk_client(ends) as conn:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await conn.ext_method("slow", {})

                tg.start_soon(call)
                await probe.started.wait()
                tg.cancel_scope.cancel()  # the 1.0 client answers this with $/cancel_request
            await probe.cancelled.wait()


async def test_cancel_request_for_a_request_in_flight_answers_minus_32800() -> None:
    probe = Probe()
    async with served(probe) as (_, _ends, raw):
        await raw.send({"jsonrpc": "2.0", "id": "a-1", "method": "_slow", "params": {}})
        with anyio.fail_after(5):
            await probe.started.wait()
        await raw.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "a-1"}})
        answer = await raw.response("a-1")
    assert answer["error"] == {"code": -32800, "message": "Request cancelled"}
    assert probe.cancelled.is_set()


async def test_cancel_request_for_a_route_with_a_cancel_hook_uses_the_hook_and_gets_its_answer() -> None:
    probe = Probe()
    async with served(probe) as (_, _ends, raw):
        params = {"sessionId": "s-1", "prompt": []}
        await raw.send({"jsonrpc": "2.0", "id": 7, "method": "_turn", "params": params})
        with anyio.fail_after(5):
            await probe.started.wait()
        await raw.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 7}})
        answer = await raw.response(7)
    assert answer["result"] == {"stopReason": "cancelled"}, "a turn answers cancelled, not an error"
    assert probe.cancel_hook_params == [params]


async def test_cancel_request_for_nothing_in_flight_is_ignored_and_the_server_keeps_serving() -> None:
    probe = Probe()
    async with served(probe) as (_, _ends, raw):
        await raw.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 404}})
        await raw.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": "garbage"})
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "_hook", "params": {}})
        answer = await raw.response(1)
    assert answer["result"] == {"answered": True}


async def test_after_response_work_runs_once_the_response_is_written() -> None:
    probe = Probe()
    async with served(probe) as (_, _ends, raw):
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "_hook", "params": {}})
        answer = await raw.response(1)
        with anyio.fail_after(5):
            await probe.hook_ran.wait()
    assert answer["result"] == {"answered": True}
    assert probe.hooked == ["after"]


@pytest.mark.parametrize(
    ("kind", "code", "needle"),
    [("params", -32602, "cwd: must be absolute"), ("session", -32002, "ghost"), ("bug", -32603, "ZeroDivisionError")],
)
async def test_every_handler_error_becomes_one_json_rpc_error(kind: str, code: int, needle: str) -> None:
    probe = Probe()
    async with served(probe) as (_, ends, _raw), sdk_client(ends) as conn:
        with anyio.fail_after(5), pytest.raises(RequestError) as raised:
            await conn.ext_method("fails", {"kind": kind})
    assert raised.value.code == code
    assert needle in str(raised.value)


@pytest.mark.parametrize(
    ("kind", "code", "needle"),
    [
        ("params", -32602, "cwd: must be absolute"),
        ("session", -32603, "Internal error while handling _fails: SessionNotFoundError"),
    ],
)
async def test_the_dispatcher_alone_knows_no_acp_error_code(kind: str, code: int, needle: str) -> None:
    """Without the server's error mapping, invalid params are still -32602 (JSON-RPC's), and our own errors are
    internal errors: the ACP codes (-32002 here) come from protocol/, never from the JSON-RPC core."""
    probe = Probe()
    async with served(probe, errors=None) as (_, _ends, raw):
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "_fails", "params": {"kind": kind}})
        answer = await raw.response(1)
    assert answer["error"]["code"] == code
    assert needle in answer["error"]["message"]


async def test_a_duplicate_id_in_flight_is_refused_and_the_first_request_goes_on() -> None:
    probe = Probe()
    async with served(probe) as (_, _ends, raw):
        await raw.send({"jsonrpc": "2.0", "id": 3, "method": "_slow", "params": {}})
        with anyio.fail_after(5):
            await probe.started.wait()
        await raw.send({"jsonrpc": "2.0", "id": 3, "method": "_hook", "params": {}})
        refused = await raw.receive()
        probe.release.set()
        answered = await raw.response(3)
    assert refused["error"]["code"] == -32600 and "already in use" in refused["error"]["message"]
    assert answered["result"] == {"done": True}


async def test_requests_we_send_are_correlated_and_an_error_answer_raises() -> None:
    probe = Probe()
    async with served(probe) as (dispatcher, _ends, raw):
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def ask(method: str) -> None:
                try:
                    results.append(await dispatcher.request(method, {"sessionId": "s"}, wait_s=5))
                except ClientRequestError as exc:
                    results.append((exc.code, exc.message))

            tg.start_soon(ask, "fs/read_text_file")
            first = await raw.receive()
            tg.start_soon(ask, "terminal/create")
            second = await raw.receive()
            await raw.send({"jsonrpc": "2.0", "id": second["id"], "error": {"code": -32601, "message": "nope"}})
            await raw.send({"jsonrpc": "2.0", "id": first["id"], "result": {"content": "text"}})
    assert first["id"] != second["id"]
    assert results == [(-32601, "nope"), {"content": "text"}]


async def test_a_request_we_abandon_tells_the_client_with_cancel_request() -> None:
    probe = Probe()
    async with served(probe) as (dispatcher, _ends, raw):
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                await dispatcher.request("session/request_permission", {"sessionId": "s"}, wait_s=None)

            tg.start_soon(ask)
            sent = await raw.receive()
            tg.cancel_scope.cancel()  # the caller gives up (a cancelled turn)
        with anyio.fail_after(5):
            cancel = await raw.receive()
    assert sent["method"] == "session/request_permission"
    assert cancel == {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": sent["id"]}}


async def test_the_client_leaving_cancels_turns_at_once_fails_our_requests_and_ends_the_rest() -> None:
    probe = Probe()
    outcome: list[Any] = []
    async with socket_streams() as (agent_reader, agent_writer, client_reader, client_writer):
        dispatcher = Dispatcher(LineReader(agent_reader), LineWriter(agent_writer))
        dispatcher.add_routes(probe.routes(), complete=True)
        raw = RawPair(client_reader, client_writer)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(dispatcher.run)

                async def ask() -> None:
                    try:
                        await dispatcher.request("fs/read_text_file", {}, wait_s=None)
                    except ConnectionError as exc:
                        outcome.append(str(exc))

                await raw.send({"jsonrpc": "2.0", "id": 1, "method": "_turn", "params": {"sessionId": "s"}})
                await probe.started.wait()
                slow = Probe()
                dispatcher.add_routes([Route("_other", slow.slow)])
                await raw.send({"jsonrpc": "2.0", "id": 2, "method": "_other", "params": {}})
                await slow.started.wait()
                tg.start_soon(ask)
                await raw.receive()  # our fs request reached the client
                client_writer.write_eof()  # the client closes its end
                await dispatcher.finished.wait()
    assert probe.cancel_hook_params == [{"sessionId": "s"}], "the turn was cancelled through its hook"
    assert slow.cancelled.is_set(), "other requests were cancelled after the grace"
    assert outcome and "went away" in outcome[0]


async def test_the_first_answer_counts_and_a_second_or_late_one_is_dropped_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A permission answered ``reject_once`` then ``allow_once`` back to back: the first is final; an answer to a
    request we had cancelled is dropped too, and neither is logged above debug."""
    probe = Probe()
    async with served(probe) as (dispatcher, _ends, raw):
        results: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                results.append(await dispatcher.request("session/request_permission", {"sessionId": "s"}, wait_s=5))

            tg.start_soon(ask)
            sent = await raw.receive()
            reject = {"outcome": {"outcome": "selected", "optionId": "reject_once"}}
            allow = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
            await raw.send({"jsonrpc": "2.0", "id": sent["id"], "result": reject})
            await raw.send({"jsonrpc": "2.0", "id": sent["id"], "result": allow})
        async with anyio.create_task_group() as tg:

            async def abandoned() -> None:
                await dispatcher.request("elicitation/create", {"sessionId": "s"}, wait_s=None)

            tg.start_soon(abandoned)
            asked = await raw.receive()
            tg.cancel_scope.cancel()
        cancel = await raw.receive()
        await raw.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {}}})
        await raw.send({"jsonrpc": "2.0", "id": 9_999, "result": {}})  # an id we never used: a warning
        await raw.send({"jsonrpc": "2.0", "id": "ping", "method": "_hook", "params": {}})
        await raw.response("ping")  # every answer above was read before this request was
    assert results == [reject]
    assert cancel["params"] == {"requestId": asked["id"]}
    above_debug = [r.getMessage() for r in caplog.records if r.levelno > logging.DEBUG]
    assert above_debug == ["an answer to no request of ours (id 9999) ignored"]


async def test_a_cancel_request_sent_as_a_request_is_answered_and_honoured() -> None:
    probe = Probe()
    async with served(probe) as (_dispatcher, _ends, raw):
        await raw.send({"jsonrpc": "2.0", "id": "slow", "method": "_slow", "params": {}})
        await probe.started.wait()
        await raw.send({"jsonrpc": "2.0", "id": "stop", "method": "$/cancel_request", "params": {"requestId": "slow"}})
        answers: dict[str, dict[str, Any]] = {}
        with anyio.fail_after(5):
            while len(answers) < 2:
                message = await raw.receive()
                answers[message["id"]] = message
    assert answers["stop"] == {"jsonrpc": "2.0", "id": "stop", "result": {}}
    assert answers["slow"]["error"]["code"] == -32800
    assert probe.cancelled.is_set()


@dataclass
class _Waiting:
    """A ``FrameSource`` whose client sends ``frames``, then neither writes nor closes."""

    frames: list[bytes] = field(default_factory=list)

    async def read(self) -> bytes | None:
        if self.frames:
            return self.frames.pop(0)
        await anyio.sleep_forever()
        return None


@dataclass
class _DroppingLink:
    """A ``Writer`` whose link drops at the first frame (its adapter says ``ClientGone``), or that fails with a bug."""

    failure: Exception
    sent: list[bytes] = field(default_factory=list)

    async def send(self, data: bytes) -> None:
        self.sent.append(data)
        raise self.failure

    def close(self) -> None:
        return None


async def test_a_link_that_drops_under_a_write_is_the_client_leaving_and_a_writer_s_bug_is_not() -> None:
    """``ClientGone`` from a writer is the client leaving: the write says so to its caller (a ``ConnectionError``,
    which a turn treats as a client gone, never as its own failure), reading stops, the turn is cancelled through its
    hook and ``run`` returns, although the client's input never ended. Any other exception is a bug: it reaches the
    caller as it is, and the client has not left."""
    probe = Probe()
    turn = b'{"jsonrpc": "2.0", "id": 1, "method": "_turn", "params": {"sessionId": "s"}}'
    dispatcher = Dispatcher(_Waiting([turn]), _DroppingLink(ClientGone("the WebSocket closed: 1006")))
    dispatcher.add_routes(probe.routes(), complete=True)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(dispatcher.run)
            await probe.started.wait()
            with pytest.raises(ClientGone):
                await dispatcher.notify("session/update", {"sessionId": "s"})
            assert dispatcher.client_gone
            await dispatcher.finished.wait()
            with pytest.raises(ClientGone):
                await dispatcher.request("fs/read_text_file", {"sessionId": "s"}, wait_s=None)
    assert probe.cancel_hook_params == [{"sessionId": "s"}], "the turn was cancelled through its hook"

    buggy = Dispatcher(_Waiting(), _DroppingLink(KeyError("text")))
    with pytest.raises(KeyError):
        await buggy.notify("session/update", {"sessionId": "s"})
    assert not buggy.client_gone, "a writer's bug is not the client leaving"
