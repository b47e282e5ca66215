"""The tool calls of one response: announced with it in one write, then run in order, each settled on its own.

- ``announce`` checks every call (known tool, arguments that parse and validate into the tool's own input, kept
  with it as a ``ParsedCall``; not cut off by the output limit), then stores the response and a ``ToolCallStarted``
  per call in one write, so no stored call is ever unannounced. A call that fails its checks is announced too, and
  settles failed without running.
- ``run_calls`` runs one batch of announced calls (``batch_end`` says where a batch ends): consecutive calls that
  only read (``Tool.reads_only``; a ``delegate`` call counts, its child's calls are approved in the child) run
  together, at most ``TurnDeps.parallel_calls`` at once; any other call runs alone.
  Each call: its ``Approval`` from the tool, granted by the policy and the editor's permission (asked one call at a
  time, in the model's order, never two questions at once), then ``ToolCallRunning`` stored with the file changes
  the approval planned (their old content, so it is in the log before any write; if that write fails, the tool does
  not run), then the tool with its granted approval, then its outcome, cleaned by the one sanitizer, its result
  serialised for the record (``record_output``), stored as ``ToolCallSettled`` (with the plan, when the call
  changed it or the user approved one in plan mode) and emitted. Calls that run together settle in whatever order
  they finish; the projection keeps their results in the model's order. When one of them fails the turn (a store
  failure), the others are cancelled.
- ``ask_attachment`` is the call the agent makes on the user's behalf for a prompt attachment outside the session's
  directories: announced, asked about, settled; it never reaches the model's history.

Tool results are where text from outside (files, commands, MCP servers) enters the log, so this is where it is
cleaned: text parts, display blocks and ``raw_output``, with what was removed logged. The file changes are not: they
are never shown, and a restore needs the old content byte for byte. Knows the tool seam and the ports; no ACP, no
provider.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import anyio
import structlog
from pydantic import BaseModel

from hermes_acp.core import (
    AgentTerminalBlock,
    AssistantMessageStored,
    Location,
    PlanUpdated,
    TextBlock,
    TextPart,
    ToolCallPart,
    ToolCallRunning,
    ToolCallSettled,
    ToolCallStarted,
    ToolResultMessage,
)
from hermes_acp.core.events import PROPOSAL_PLAN_ID
from hermes_acp.core.ids import new_tool_call_id
from hermes_acp.core.sanitize import Removals, clean_text, sanitize_json
from hermes_acp.errors import PermissionDeniedError, StorageError, ToolError, ToolInputError
from hermes_acp.providers.base import ResponseDone
from hermes_acp.tools.approval import Approval
from hermes_acp.tools.base import AnyTool, ParsedCall, Presentation, ToolOutcome, parse_call, record_output
from hermes_acp.tools.context import ApprovalRequest, CommandStop, ToolContext

from .approvals import ApprovalFlow, TurnCancelledByClient
from .ports import LiveTerminalOutput, LiveToolProgress
from .server_tools import server_tool_events
from .settlements import closed_terminals
from .state import MAX_PARALLEL_READS, TurnDeps, TurnState

__all__ = ["MAX_PARALLEL_READS", "PreparedCall", "announce", "ask_attachment", "batch_end", "run_calls", "sanitized"]

_log = structlog.get_logger("hermes_acp.turns")
M = TypeVar("M", bound=BaseModel)
_Done = TypeVar("_Done")
"""What a guarded piece of a call gives when it goes well (nothing for the checks, the outcome for the run)."""


@dataclass(frozen=True, slots=True)
class PreparedCall:
    """A call of the model's, checked: its tool with the input it validated, or the error it settles with."""

    call: ToolCallPart
    parsed: ParsedCall[Any, Any] | None
    presentation: Presentation
    error: ToolError | None
    reads_only: bool = False
    """The call only reads: it may run together with the other such calls next to it."""
    stop: CommandStop | None = None
    """Where a client stops the command of a call announced with an agent-owned terminal (``CallCancels``)."""


async def announce(
    deps: TurnDeps, state: TurnState, message_id: str, done: ResponseDone, tools: list[AnyTool]
) -> tuple[PreparedCall, ...]:
    """Store the response and announce its tool calls in one write; return the calls, checked."""
    by_name = {t.name: t for t in tools}
    truncated = done.stop_reason == "max_tokens"
    prepared = tuple(
        _expected(_prepare(call, by_name, deps, state, truncated=truncated), deps) for call in done.message.tool_calls
    )
    await deps.recorder.record(
        AssistantMessageStored(
            turn_id=state.turn_id,
            message_id=message_id,
            message=done.message,
            model_id=deps.model.id,
            usage=done.usage,
            context_window=deps.model.context_window,
        ),
        *server_tool_events(state.turn_id, done.message, deps.recorder.projection.tool_call_ids),
        *[
            ToolCallStarted(
                turn_id=state.turn_id,
                tool_call_id=p.call.id,
                name=p.call.name,
                title=p.presentation.title,
                tool_kind=p.presentation.kind,
                raw_input=_raw_input(p.call),
                locations=p.presentation.locations,
                content=p.presentation.content,
                marks_run=True,
            )
            for p in prepared
        ],
    )
    return prepared


def batch_end(calls: Sequence[PreparedCall], start: int) -> int:
    """Where the batch that starts at ``start`` ends: after the consecutive calls that only read, or after the one
    call at ``start`` when it does more."""
    end = start
    while end < len(calls) and calls[end].reads_only:
        end += 1
    return max(end, start + 1)


async def run_calls(batch: Sequence[PreparedCall], deps: TurnDeps, state: TurnState) -> None:
    """Run one batch (see ``batch_end``) and store each settlement (raises ``StorageError``,
    ``TurnCancelledByClient``; a cancellation leaves the calls that were running open for the loop to settle)."""
    if len(batch) == 1:
        item = batch[0]
        ctx = _context(item.call, deps, state, stop=item.stop)
        cleared = await _cleared(item, deps, state, ctx)
        if isinstance(cleared, Approval):
            cleared = await _perform(item, cleared, deps, state, ctx)
        await _settle(item, cleared, deps, state)
        return
    await _run_together(batch, deps, state)


async def _run_together(batch: Sequence[PreparedCall], deps: TurnDeps, state: TurnState) -> None:
    """Calls that only read: each is cleared in order (one question at a time), then runs in a task of its own
    while the next is cleared, with at most ``deps.parallel_calls`` (``MAX_PARALLEL_READS`` unless the session says
    more) running. The first error stops the batch: the others are cancelled and the error is raised as itself (not
    in a group), for the loop's table of endings."""
    slots = anyio.Semaphore(max(1, deps.parallel_calls))
    errors: list[Exception] = []

    async def read(item: PreparedCall, approval: Approval[Any], ctx: ToolContext) -> None:
        try:
            await _settle(item, await _perform(item, approval, deps, state, ctx), deps, state)
        except Exception as exc:
            errors.append(exc)
            group.cancel_scope.cancel()
        finally:
            slots.release()

    async with anyio.create_task_group() as group:
        try:
            for item in batch:
                ctx = _context(item.call, deps, state, stop=item.stop)
                cleared = await _cleared(item, deps, state, ctx)
                if not isinstance(cleared, Approval):
                    await _settle(item, cleared, deps, state)
                    continue
                await slots.acquire()
                group.start_soon(read, item, cleared, ctx, name=f"tool call {item.call.id}")
        except Exception as exc:
            errors.append(exc)
            group.cancel_scope.cancel()
    if errors:
        raise errors[0]


async def _settle(item: PreparedCall, outcome: ToolOutcome[Any], deps: TurnDeps, state: TurnState) -> None:
    """Store (and emit) how one call ended, its result serialised for the record and cleaned by the sanitizer."""
    outcome = sanitized(outcome, session_id=deps.env.session_id, tool=item.call.name)
    outcome = replace(outcome, content=closed_terminals(item.presentation.content, outcome.content))
    plan = [PlanUpdated(turn_id=state.turn_id, entries=outcome.plan)] if outcome.plan is not None else []
    if outcome.proposal is not None:
        plan.append(PlanUpdated(turn_id=state.turn_id, entries=[], plan_id=PROPOSAL_PLAN_ID, markdown=outcome.proposal))
    if deps.cancels is not None:
        # Let go before the settlement goes out: whoever is told it settled finds nothing of it to stop.
        deps.cancels.release(item.call.id)
    await deps.recorder.record(
        *plan,
        ToolCallSettled(
            turn_id=state.turn_id,
            tool_call_id=item.call.id,
            status="failed" if outcome.failed else "completed",
            content=outcome.content,
            raw_output=outcome.raw_output,
            result=ToolResultMessage(
                tool_call_id=item.call.id, name=item.call.name, parts=outcome.parts, is_error=outcome.failed
            ),
            error_code=outcome.error_code,
        ),
    )


async def ask_attachment(deps: TurnDeps, state: TurnState, path: Path, request: ApprovalRequest) -> None:
    """An attachment outside the session's directories: a real ``read`` call the user approves or refuses.

    Raises ``PermissionDeniedError`` when refused (after settling the call)."""
    call_id = new_tool_call_id()
    presentation = Presentation(title=request.title, kind="read", locations=[Location(path=str(path))])
    await deps.recorder.record(
        ToolCallStarted(
            turn_id=state.turn_id,
            tool_call_id=call_id,
            name="read_attachment",
            title=presentation.title,
            tool_kind="read",
            raw_input=request.raw_input,
            locations=presentation.locations,
            marks_run=True,
        )
    )
    try:
        await _approvals(deps, state).grant(presentation, Approval(call_id, request=request))
    except PermissionDeniedError as exc:
        await _settle_attachment(deps, state, call_id, failed=True, text=str(exc))
        raise
    await _settle_attachment(deps, state, call_id, failed=False, text=f"Read {path} as a prompt attachment.")


def sanitized(outcome: ToolOutcome[Any], *, session_id: str, tool: str) -> ToolOutcome[Any]:
    """``outcome`` with its result serialised for the record (``record_output``), hidden characters removed and
    lone surrogates replaced in every text part, display block and ``raw_output``; what was removed is logged."""
    removals = Removals()
    parts = [_clean(part, removals) for part in outcome.parts]
    content = [_clean(block, removals) for block in outcome.content]
    raw_output, found = sanitize_json(record_output(outcome.raw_output))
    removals.add(found)
    if not removals:
        return replace(outcome, raw_output=raw_output)
    _log.warning(
        "hidden or unencodable characters removed from a tool result",
        session_id=session_id,
        tool=tool,
        removed=removals.as_log(),
    )
    return replace(outcome, parts=parts, content=content, raw_output=raw_output)


def _clean(model: M, removals: Removals) -> M:
    cleaned, found = sanitize_json(model.model_dump())
    if not found:
        return model
    removals.add(found)
    return type(model).model_validate(cleaned)


def _approvals(deps: TurnDeps, state: TurnState) -> ApprovalFlow:
    return ApprovalFlow(
        turn_id=state.turn_id,
        workspace=deps.env.workspace,
        mode=lambda: deps.surface.mode,
        gate=deps.gate,
        recorder=deps.recorder,
        timeout_s=deps.permission_timeout_s,
        rules=deps.rules,
    )


async def _settle_attachment(deps: TurnDeps, state: TurnState, call_id: str, *, failed: bool, text: str) -> None:
    await deps.recorder.record(
        ToolCallSettled(
            turn_id=state.turn_id,
            tool_call_id=call_id,
            status="failed" if failed else "completed",
            content=[TextBlock(text=text)],
            result=None,
        )
    )


def _raw_input(call: ToolCallPart) -> Any:
    """The arguments as an object when they parse, else the raw text the model wrote."""
    parsed = call.parsed_arguments()
    return parsed if parsed is not None else call.arguments


def _prepare(
    call: ToolCallPart, by_name: dict[str, AnyTool], deps: TurnDeps, state: TurnState, *, truncated: bool
) -> PreparedCall:
    tool = by_name.get(call.name)
    fallback = Presentation(title=call.name, kind="other")
    if truncated:
        error: ToolError = ToolInputError(
            "the response hit the output-token limit, so these arguments are cut off; the call was not run"
        )
        return PreparedCall(call, None, fallback, error)
    if tool is None:
        available = ", ".join(sorted(by_name)) or "none"
        why = deps.surface.why_unavailable(call.name)
        error = ToolInputError(f"no tool {call.name!r} is available now ({why}); tools: {available}")
        return PreparedCall(call, None, fallback, error)
    arguments = call.parsed_arguments()
    if arguments is None:
        snippet = call.arguments[:200]
        error = ToolInputError(f"{call.name}: arguments must be a JSON object; got {snippet!r}")
        return PreparedCall(call, None, fallback, error)
    try:
        parsed = parse_call(tool, arguments)
        presentation = parsed.present(_context(call, deps, state))
    except ToolError as exc:
        return PreparedCall(call, None, fallback, exc)
    return PreparedCall(call, parsed, presentation, None, reads_only=parsed.reads_only())


def _expected(item: PreparedCall, deps: TurnDeps) -> PreparedCall:
    """``item`` registered where a client may stop it (before its announcement goes out, until it settles), with
    its command's stop when it is announced with an agent-owned terminal (whose id is the call's)."""
    if deps.cancels is None:
        return item
    terminal = any(isinstance(block, AgentTerminalBlock) for block in item.presentation.content)
    return replace(item, stop=deps.cancels.expect(item.call.id, terminal=terminal))


def _context(call: ToolCallPart, deps: TurnDeps, state: TurnState, *, stop: CommandStop | None = None) -> ToolContext:
    async def progress(content: list[Any]) -> None:
        await deps.recorder.live(LiveToolProgress(call.id, content))

    async def terminal_output(data: str, fallback: list[Any]) -> None:
        # Live only: the settlement stores what the terminal kept, cleaned with the rest of the result.
        shown = [_clean(block, Removals()) for block in fallback]
        await deps.recorder.live(LiveTerminalOutput(call.id, call.id, clean_text(data), shown))

    env = deps.env
    present = env.client_present is None or env.client_present()
    return ToolContext(
        env=env,
        turn_id=state.turn_id,
        tool_call_id=call.id,
        mode=deps.surface.mode,
        progress=progress,
        terminal_output=terminal_output,
        files=env.editor_files if present else None,
        terminals=env.editor_terminals if present else None,
        stop=stop,
    )


async def _cleared(
    item: PreparedCall, deps: TurnDeps, state: TurnState, ctx: ToolContext
) -> Approval[Any] | ToolOutcome[Any]:
    """The call's granted approval when it may run; else the failure it settles with (it failed its checks, or was
    refused)."""
    parsed = item.parsed
    if item.error is not None or parsed is None:
        return _failure(item.error or ToolInputError(f"unknown tool {item.call.name!r}"))

    async def check() -> Approval[Any]:
        approval = await parsed.approval(ctx)
        if approval.tool_call_id != item.call.id:
            raise ToolError(f"{item.call.name} asked for approval under another call's id; the call was not run")
        return await _approvals(deps, state).grant(item.presentation, approval)

    return await _guarded(item, deps, check)


async def _perform(
    item: PreparedCall, approval: Approval[Any], deps: TurnDeps, state: TurnState, ctx: ToolContext
) -> ToolOutcome[Any]:
    """Run a cleared call with its granted approval: stored as running first, with the file changes the approval
    planned (persist before execute: from here the log says this call ran, or may have, if the turn stops, and holds
    what each file it may change held before)."""
    parsed = item.parsed
    assert parsed is not None
    await deps.recorder.record(
        ToolCallRunning(turn_id=state.turn_id, tool_call_id=item.call.id, file_changes=approval.records())
    )
    return await _guarded(item, deps, lambda: parsed.run(approval, ctx))


async def _guarded(
    item: PreparedCall, deps: TurnDeps, work: Callable[[], Awaitable[_Done]]
) -> _Done | ToolOutcome[Any]:
    """``work`` for ``item``: a ``ToolError`` is the call's failure, any other exception a crash (logged); a
    cancelled turn and a failing store stop the turn instead; the client stopping this one call
    (``TurnDeps.cancels``) is its failure as ``cancelled``."""
    try:
        if deps.cancels is None:
            return await work()
        with deps.cancels.scope(item.call.id) as stopping:
            done = await work()
        return _cancelled() if stopping.cancelled_caught else done
    except ToolError as exc:
        return _failure(exc)
    except (TurnCancelledByClient, StorageError):
        raise
    except Exception as exc:
        return _crashed(item, deps, exc)


def _crashed(item: PreparedCall, deps: TurnDeps, exc: Exception) -> ToolOutcome[Any]:
    _log.exception("tool crashed", tool=item.call.name, session_id=deps.env.session_id)
    return _failure(ToolError(f"{item.call.name} failed unexpectedly: {type(exc).__name__}: {exc}"))


def _cancelled() -> ToolOutcome[Any]:
    text = "Error (cancelled): the user stopped this call"
    return ToolOutcome(parts=[TextPart(text=text)], content=[TextBlock(text=text)], failed=True, error_code="cancelled")


def _failure(exc: ToolError) -> ToolOutcome[Any]:
    text = f"Error ({exc.code}): {exc}"
    return ToolOutcome(parts=[TextPart(text=text)], content=[TextBlock(text=text)], failed=True, error_code=exc.code)
