"""An ACP v2 agent over stdio whose every frame comes from the production v2 modules, for the TS SDK's v2 client
to read until the server routes v2 itself (issue 32, phase 2: then ``tests/ts_sdk/v2_client.mjs`` drives the real
``hermes-acp``).

It stands where the session layer will: it scripts what a turn stores and streams (a prompt, reasoning and text, an
agent-owned terminal behind a permission question, a plan, the turn's end; a prompt held until ``session/cancel``)
and keeps the stored events in a list, with seqs. Everything the client reads is built by what phase 2 will call:
the version (``v2.version.negotiate``), the params (``v2.wire``), the ``initialize`` answer (``v2.handshake``), the
updates of each stored event and live update (``v2.render``), the resume replay and its one state snapshot
(``v2.replay``), cursors and the rejoin after one (``reliable.cursors``), operation ids applied once
(``reliable.operations``) and the ``_meta`` they travel under (``reliable.meta``). So the SDK's own parsing of
v2 (stricter in places than the JSON schema, and silent where it drops an update) is run on our rendering.

``python -m tests.fakes.v2_agent``; one session at a time is enough for the lane. Not a server: no store, no model.
"""

from __future__ import annotations

import itertools
import json
import sys
from typing import Any

import anyio
import anyio.abc

from hermes_acp.core import (
    AgentTerminalBlock,
    AssistantMessage,
    AssistantMessageStored,
    PermissionResolved,
    PlanEntry,
    PlanUpdated,
    SessionEvent,
    TextBlock,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolCallRunning,
    ToolCallSettled,
    ToolCallStarted,
    TurnEnded,
    Usage,
    UserMessage,
    UserPrompted,
)
from hermes_acp.errors import SessionNotFoundError
from hermes_acp.jsonrpc.boundary import ClientRequestError, to_wire
from hermes_acp.protocol.errors import acp_error
from hermes_acp.protocol.reliable import meta
from hermes_acp.protocol.reliable.cursors import Epoch, plan_rejoin
from hermes_acp.protocol.reliable.operations import OperationKey, OperationLedger, fingerprint
from hermes_acp.protocol.v2 import handshake, render, replay, version, wire
from hermes_acp.protocol.wire import parse
from hermes_acp.storage.base import StoredEvent
from hermes_acp.turns.ports import (
    LiveTerminalOutput,
    LiveTextChunk,
    LiveThoughtChunk,
    LiveUpdate,
    PermissionChoice,
    PermissionQuestion,
)

WAIT_S = 10.0
"""Longest wait for the client (a permission answer, a cancel)."""


class Session:
    def __init__(self, session_id: str, cwd: str):
        self.id = session_id
        self.cwd = cwd
        self.log: list[StoredEvent] = []
        self.cancelled = anyio.Event()
        self.state: render.TurnState = "idle"


class Agent:
    def __init__(self, tg: anyio.abc.TaskGroup):
        self._tg = tg
        self._epoch = Epoch.mint()
        self._ledger = OperationLedger()
        self._ids = itertools.count(1)
        self._asked: dict[int, anyio.Event] = {}
        self._answers: dict[int, Any] = {}
        self._sessions: dict[str, Session] = {}
        self._scope = "connection"

    # -- the wire ----------------------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        sys.stdout.flush()

    def _update(self, session: Session, update: dict[str, Any], seq: int | None = None) -> None:
        cursor = None if seq is None else self._epoch.cursor(session.id, seq)
        self._send({"method": "session/update", "params": meta.update_params(session.id, update, cursor)})

    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        request_id = next(self._ids) + 10_000
        self._asked[request_id] = anyio.Event()
        self._send({"id": request_id, "method": method, "params": params})
        with anyio.fail_after(WAIT_S):
            await self._asked[request_id].wait()
        return self._answers.pop(request_id)

    async def handle(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            asked = self._asked.pop(message.get("id"), None)  # type: ignore[arg-type]
            if asked is not None:
                self._answers[message["id"]] = message.get("result", message.get("error"))
                asked.set()
            return
        method, params, request_id = message["method"], message.get("params"), message.get("id")
        try:
            result = await self._route(method, params)
        except Exception as exc:
            if request_id is not None:
                self._send({"id": request_id, "error": to_wire(exc, method, acp_error)})
            return
        if request_id is not None:
            self._send({"id": request_id, "result": result})

    async def _route(self, method: str, params: Any) -> Any:
        match method:
            case "initialize":
                chosen = version.negotiate(params.get("protocolVersion") if isinstance(params, dict) else None)
                if chosen != 2:
                    raise ClientRequestError(-32600, "this fake speaks v2 only")
                self._scope = meta.client_instance_id(params) or "connection"
                client = wire.parse_initialize(params).capabilities
                remote = meta.remote_advert(
                    self._epoch.id, retention_s=self._ledger.retention_s, per_session=self._ledger.per_session
                )
                return handshake.initialize_result(client, {}, remote=remote)
            case "session/new":
                new = parse(wire.NewSessionParams, params)
                wire.mcp_servers(new.mcp_servers)
                session = Session(f"sess_{next(self._ids)}", new.cwd)
                self._sessions[session.id] = session
                return {"sessionId": session.id}
            case "session/prompt":
                prompt = parse(wire.PromptParams, params)
                session = self._session(prompt.session_id)
                text = "".join(getattr(block, "text", "") for block in prompt.prompt)
                operation = meta.operation_id(params, epoch=self._epoch.id)
                if operation is None:
                    return await self._insert(session, text)
                key = OperationKey(self._scope, session.id, operation)
                return await self._ledger.apply(key, fingerprint(method, params), lambda: self._insert(session, text))
            case "session/cancel":
                self._session(parse(wire.CancelParams, params).session_id).cancelled.set()
                return None
            case "session/list":
                return {"sessions": [{"sessionId": s.id, "cwd": s.cwd} for s in self._sessions.values()]}
            case "session/resume":
                return self._resume(params)
            case "session/status":
                session = self._session(parse(wire.StatusParams, params).session_id)
                return render.session_status(replay.resume_state(session.log, session.state))
            case "tool_call/cancel":
                call = parse(wire.ToolCallCancelParams, params)
                raise ClientRequestError(-32602, f"Invalid params: no tool call {call.tool_call_id!r} can be cancelled")
            case "session/close":
                self._sessions.pop(parse(wire.CloseParams, params).session_id, None)
                return {}
            case "auth/logout":
                return {}
        raise ClientRequestError(-32601, f"Method not found: {method}")

    def _session(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionNotFoundError(session_id)
        return session

    # -- what the session layer will do ------------------------------------------------------------------------

    def _record(self, session: Session, event: SessionEvent) -> None:
        stored = StoredEvent(seq=len(session.log) + 1, created_at="2026-01-01T00:00:00.000000Z", event=event)
        session.log.append(stored)
        for update in render.event_updates(event, live=True):
            self._update(session, update, stored.seq)

    def _live(self, session: Session, update: LiveUpdate) -> None:
        rendered = render.live_update(update)
        if rendered is not None:
            self._update(session, rendered)

    def _state(self, session: Session, state: render.TurnState) -> None:
        session.state = state
        self._update(session, render.state_update(state))

    async def _insert(self, session: Session, text: str) -> dict[str, str]:
        turn = f"t{next(self._ids)}"
        message_id = f"u{next(self._ids)}"
        session.cancelled = anyio.Event()
        self._state(session, "running")
        prompted = UserPrompted(
            turn_id=turn,
            message_id=message_id,
            display=[TextBlock(text=text)],
            message=UserMessage(parts=[TextPart(text=text)]),
        )
        self._record(session, prompted)
        self._tg.start_soon(self._hold if "hold" in text else self._turn, session, turn)
        return {"messageId": message_id}

    async def _turn(self, session: Session, turn: str) -> None:
        answer = f"a{next(self._ids)}"
        call = f"call_{next(self._ids)}"
        self._live(session, LiveThoughtChunk(answer, "Say it."))
        self._live(session, LiveTextChunk(answer, "Hello "))
        self._live(session, LiveTextChunk(answer, "v2."))
        parts = [
            ThinkingPart(text="Say it."),
            TextPart(text="Hello v2."),
            ToolCallPart(id=call, name="terminal", arguments="{}"),
        ]
        self._record(
            session,
            AssistantMessageStored(
                turn_id=turn, message_id=answer, message=AssistantMessage(parts=parts), model_id="m"
            ),
        )
        opened = AgentTerminalBlock(terminal_id=call, command="echo hi", cwd=session.cwd)
        started = ToolCallStarted(
            turn_id=turn,
            tool_call_id=call,
            name="terminal",
            title="Run `echo hi`",
            tool_kind="execute",
            content=[opened],
            marks_run=True,
        )
        self._record(session, started)
        self._state(session, "requires_action")
        choices = [
            PermissionChoice("allow_once", "Allow once", "allow_once"),
            PermissionChoice("reject_once", "Reject", "reject_once"),
        ]
        question = render.permission_request(session.id, _question(started), choices)
        answer_raw = await self._request("session/request_permission", question)
        chosen = (answer_raw or {}).get("outcome", {}).get("optionId")
        self._state(session, "running")
        self._record(
            session,
            PermissionResolved(
                turn_id=turn,
                tool_call_id=call,
                outcome="allow_once" if chosen == "allow_once" else "reject_once",
                scope="execute",
            ),
        )
        self._record(session, ToolCallRunning(turn_id=turn, tool_call_id=call))
        self._live(session, LiveTerminalOutput(call, call, "hi\n", [TextBlock(text="hi")]))
        ended = AgentTerminalBlock(
            terminal_id=call, command="echo hi", cwd=session.cwd, output="hi\n", ended=True, exit_code=0
        )
        self._record(
            session, ToolCallSettled(turn_id=turn, tool_call_id=call, status="completed", content=[ended], result=None)
        )
        self._record(session, PlanUpdated(turn_id=turn, entries=[PlanEntry(content="Say hello", status="completed")]))
        session.state = "idle"
        self._record(
            session, TurnEnded(turn_id=turn, stop_reason="end_turn", usage=Usage(input_tokens=12, output_tokens=3))
        )

    async def _hold(self, session: Session, turn: str) -> None:
        self._live(session, LiveTextChunk(f"a{next(self._ids)}", "waiting"))
        with anyio.fail_after(WAIT_S):
            await session.cancelled.wait()
        session.state = "idle"
        self._record(session, TurnEnded(turn_id=turn, stop_reason="cancelled"))

    def _resume(self, params: Any) -> dict[str, Any]:
        resume = parse(wire.ResumeSessionParams, params)
        session = self._session(resume.session_id)
        cursor = meta.after_cursor(params)
        recovery = None
        history: list[StoredEvent] = []
        if cursor is not None:
            plan = plan_rejoin([s for s in session.log if s.seq > self._epoch.read(cursor, session.id)])
            history, recovery = (session.log, "full") if plan.full else (plan.events, "replay")
        elif resume.replay_from is not None:
            history, recovery = session.log, "full"
        for seq, update in replay.replay_updates(history):
            self._update(session, update, seq)
        self._update(session, replay.resume_state(session.log, session.state))
        return meta.with_result_meta({}, recovery=recovery) if recovery else {}


def _question(started: ToolCallStarted) -> PermissionQuestion:
    return PermissionQuestion(
        tool_call_id=started.tool_call_id, title=started.title, kind=started.tool_kind, content=started.content
    )


async def main() -> None:
    async with anyio.create_task_group() as tg:
        agent = Agent(tg)
        async for line in anyio.wrap_file(sys.stdin):
            if line.strip():
                await agent.handle(json.loads(line))
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
