"""The turn loop: request → stream → store → tool calls → results → next request, until the model stops.

``run_turn`` drives one prompt turn with explicit state (``TurnState``) and wiring (``TurnDeps``). It talks only
to ports and base seams: the provider seam, the tool seam, the recorder (store + sink) and the permission gate.
Guarantees it keeps (DESIGN §4): the assistant message is stored before any tool runs; a result is stored before
it is emitted; tool-call ids are the provider's (fresh ones only for missing or duplicate ids); every announced
call settles, whatever happens; cancellation ends the turn with ``cancelled`` after settling what was open.
It knows neither ACP nor any concrete provider, tool or store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import structlog

from hermes_acp.core import (
    AssistantMessage,
    AssistantMessageStored,
    DisplayBlock,
    Location,
    ModeId,
    NoticeAdded,
    PlanUpdated,
    StopReason,
    TextBlock,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolCallSettled,
    ToolCallStarted,
    ToolResultMessage,
    TurnEnded,
    Usage,
    UserMessage,
    UserPrompted,
)
from hermes_acp.core.ids import new_message_id, new_tool_call_id
from hermes_acp.core.messages import AssistantPart
from hermes_acp.errors import (
    PermissionDeniedError,
    ProviderAuthError,
    ProviderError,
    ProviderStreamError,
    StorageError,
    ToolError,
    ToolInputError,
)
from hermes_acp.providers.base import (
    ModelProvider,
    ModelStopReason,
    ResponseDone,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
)
from hermes_acp.providers.catalog import CatalogModel
from hermes_acp.tools.base import Presentation, Tool, ToolOutcome
from hermes_acp.tools.context import (
    ApprovalRequest,
    EditorFiles,
    EditorTerminals,
    ImageGate,
    ToolContext,
    Workspace,
)
from hermes_acp.tools.sandbox import Sandbox

from .approvals import ApprovalFlow, TurnCancelledByClient
from .ports import LiveTextChunk, LiveThoughtChunk, LiveToolProgress, PermissionGate
from .prompt_input import convert_prompt
from .recorder import Recorder
from .request import build_request
from .server_tools import server_tool_events
from .settlements import Failure, failed_settlements

__all__ = ["CLEANUP_TIMEOUT_S", "TurnDeps", "TurnResult", "TurnState", "run_turn"]

CLEANUP_TIMEOUT_S = 5.0
"""Bound on the shielded work that settles a cancelled or failed turn."""
_CANCELLED_TEXT = "Cancelled: the turn was stopped before this call finished; its outcome may be partial."
_NOT_RUN_TEXT = "Not run: the turn was stopped before this call started."
_log = structlog.get_logger("hermes_acp.turns")


@dataclass(frozen=True, kw_only=True)
class TurnDeps:
    """Immutable wiring of one turn."""

    session_id: str
    model: CatalogModel
    provider: ModelProvider
    system_prompt: str
    tool_surface: Callable[[], Sequence[Tool]]
    """Derived before every request from session state (DESIGN §4.6)."""
    recorder: Recorder
    gate: PermissionGate
    workspace: Workspace
    mode: Callable[[], ModeId]
    max_requests: int
    permission_timeout_s: float
    cache_dir: Path
    files: EditorFiles | None = None
    terminals: EditorTerminals | None = None
    images: ImageGate | None = None
    """The session's image gate (DESIGN §7): prompt images, tool-result images and MCP images all pass it."""
    sandbox: Sandbox | None = None
    """How the session's commands are contained (``[sandbox]``)."""


@dataclass(kw_only=True)
class _Partial:
    """The response being streamed, kept so a cancel or a broken stream can store what was shown."""

    message_id: str
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class TurnState:
    """Mutable state of one turn."""

    turn_id: str
    requests: int = 0
    usage: Usage = field(default_factory=Usage)
    partial: _Partial | None = None
    running_call: str | None = None
    """The tool call executing right now (the others still open were never started)."""
    unstored_prompt: list[DisplayBlock] | None = None
    """The user's prompt while it is converted, before it is stored (asking about an attachment takes a while)."""


@dataclass(frozen=True, slots=True)
class TurnResult:
    stop_reason: StopReason
    usage: Usage


async def run_turn(
    state: TurnState, deps: TurnDeps, display: list[DisplayBlock], *, notices: Sequence[str] = ()
) -> TurnResult:
    """Run one prompt turn to its end. Cancellation propagates after the turn was settled and stored.

    ``notices`` are shown to the user with the prompt (e.g. an MCP server that failed to start).
    """
    recorder = deps.recorder
    state.unstored_prompt = display
    try:
        converted = await convert_prompt(
            display,
            workspace=deps.workspace,
            ask_outside=lambda path, req: _ask_outside(state, deps, path, req),
            images=deps.images,
        )
        await recorder.record(
            UserPrompted(
                turn_id=state.turn_id, message_id=new_message_id(), display=display, message=converted.message
            ),
            *[
                NoticeAdded(turn_id=state.turn_id, message_id=new_message_id(), text=n)
                for n in [*notices, *converted.notices]
            ],
        )
        state.unstored_prompt = None
        stop = await _loop(state, deps)
    except TurnCancelledByClient:
        await _settle_interrupted(state, deps)
        return await _end(state, deps, "cancelled")
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT_S):
            await _settle_interrupted(state, deps)
            await recorder.record(TurnEnded(turn_id=state.turn_id, stop_reason="cancelled", usage=state.usage))
        raise
    except StorageError:
        await _settle_live_only(state, deps)
        raise
    except ProviderError as exc:
        await _settle_interrupted(state, deps)
        if isinstance(exc, ProviderAuthError):
            await _end(state, deps, "end_turn")
            raise
        _log.warning("model request failed", session_id=deps.session_id, error=str(exc))
        await recorder.record(
            NoticeAdded(turn_id=state.turn_id, message_id=new_message_id(), text=f"⚠ The model request failed: {exc}")
        )
        return await _end(state, deps, "end_turn")
    except Exception:
        # A bug of ours: the prompt answers with an error, but nothing is left spinning or half-stored.
        _log.exception("turn failed", session_id=deps.session_id)
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT_S):
            await _settle_interrupted(state, deps)
            await recorder.record(TurnEnded(turn_id=state.turn_id, stop_reason="end_turn", usage=state.usage))
        raise
    return await _end(state, deps, stop)


async def _ask_outside(state: TurnState, deps: TurnDeps, path: Path, request: ApprovalRequest) -> None:
    """An attachment outside the session's directories: a real ``read`` call the user approves or refuses."""
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
        )
    )
    flow = _approvals(state, deps)
    try:
        await flow.check(call_id, presentation, request)
    except PermissionDeniedError as exc:
        await _settle_attachment(state, deps, call_id, failed=True, text=str(exc))
        raise
    await _settle_attachment(state, deps, call_id, failed=False, text=f"Read {path} as a prompt attachment.")


def _approvals(state: TurnState, deps: TurnDeps) -> ApprovalFlow:
    return ApprovalFlow(
        turn_id=state.turn_id,
        workspace=deps.workspace,
        mode=deps.mode,
        gate=deps.gate,
        recorder=deps.recorder,
        timeout_s=deps.permission_timeout_s,
    )


async def _settle_attachment(state: TurnState, deps: TurnDeps, call_id: str, *, failed: bool, text: str) -> None:
    await deps.recorder.record(
        ToolCallSettled(
            turn_id=state.turn_id,
            tool_call_id=call_id,
            status="failed" if failed else "completed",
            content=[TextBlock(text=text)],
            result=None,
        )
    )


async def _end(state: TurnState, deps: TurnDeps, stop: StopReason) -> TurnResult:
    await deps.recorder.record(TurnEnded(turn_id=state.turn_id, stop_reason=stop, usage=state.usage))
    return TurnResult(stop_reason=stop, usage=state.usage)


async def _loop(state: TurnState, deps: TurnDeps) -> StopReason:
    while True:
        if state.requests >= deps.max_requests:
            return "max_turn_requests"
        tools = list(deps.tool_surface())
        request = build_request(
            model=deps.model,
            system=deps.system_prompt,
            history=deps.recorder.projection.history,
            tools=tools,
            native_images=deps.images.route() == "native" if deps.images is not None else None,
        )
        state.requests += 1
        message_id, done = await _stream_response(state, deps, request)
        prepared = await _store_response(state, deps, message_id, done, tools)
        if not prepared:
            return _turn_stop(done.stop_reason)
        await _run_tool_calls(state, deps, prepared)
        if done.stop_reason in ("max_tokens", "refusal"):
            return _turn_stop(done.stop_reason)


def _turn_stop(reason: ModelStopReason) -> StopReason:
    if reason in ("max_tokens", "refusal"):
        return reason
    return "end_turn"


async def _stream_response(state: TurnState, deps: TurnDeps, request: Any) -> tuple[str, ResponseDone]:
    """Stream one response to the editor; return its message id and the final event, tool-call ids made unique."""
    partial = _Partial(message_id=new_message_id())
    state.partial = partial
    done: ResponseDone | None = None
    async with aclosing(deps.provider.stream(request)) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                if event.text:
                    partial.text.append(event.text)
                    await deps.recorder.live(LiveTextChunk(partial.message_id, event.text))
            elif isinstance(event, ThinkingDelta):
                if event.text:
                    partial.thinking.append(event.text)
                    await deps.recorder.live(LiveThoughtChunk(partial.message_id, event.text))
            elif isinstance(event, ToolCallDelta):
                continue
            else:
                done = event
    if done is None:
        raise ProviderStreamError("the model's stream ended without a final event", provider=deps.model.provider_id)
    if done.usage is not None:
        state.usage = state.usage + done.usage
    message = _with_unique_ids(done.message, deps.recorder.projection.tool_call_ids)
    return partial.message_id, done.model_copy(update={"message": message})


def _with_unique_ids(message: AssistantMessage, used: set[str]) -> AssistantMessage:
    """Keep the provider's ids; replace only a missing id or one already used in this session (DESIGN §4.4)."""
    seen: set[str] = set()
    parts: list[AssistantPart] = []
    changed = False
    for original in message.parts:
        part = original
        if isinstance(part, ToolCallPart) and (not part.id or part.id in used or part.id in seen):
            part = part.model_copy(update={"id": new_tool_call_id()})
            changed = True
        if isinstance(part, ToolCallPart):
            seen.add(part.id)
        parts.append(part)
    return message.model_copy(update={"parts": parts}) if changed else message


@dataclass(slots=True)
class _Prepared:
    call: ToolCallPart
    tool: Tool | None
    parsed: Any
    presentation: Presentation
    error: ToolError | None


async def _store_response(
    state: TurnState, deps: TurnDeps, message_id: str, done: ResponseDone, tools: list[Tool]
) -> list[_Prepared]:
    """Store the response and announce its tool calls in one write, so no stored call is ever unannounced (DESIGN
    §4.3, §4.5); return the calls, prepared to run."""
    by_name = {t.name: t for t in tools}
    truncated = done.stop_reason == "max_tokens"
    prepared = [_prepare(call, by_name, deps, state, truncated=truncated) for call in done.message.tool_calls]
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
            )
            for p in prepared
        ],
    )
    state.partial = None
    return prepared


async def _run_tool_calls(state: TurnState, deps: TurnDeps, prepared: list[_Prepared]) -> None:
    approvals = _approvals(state, deps)
    for item in prepared:
        outcome = await _execute(item, state, deps, approvals)
        state.running_call = None
        if outcome.plan is not None:
            await deps.recorder.record(PlanUpdated(turn_id=state.turn_id, entries=outcome.plan))
        await _settle(state, deps, item.call, outcome)


def _raw_input(call: ToolCallPart) -> Any:
    """The arguments as an object when they parse, else the raw text the model wrote."""
    parsed = call.parsed_arguments()
    return parsed if parsed is not None else call.arguments


def _prepare(
    call: ToolCallPart, by_name: dict[str, Tool], deps: TurnDeps, state: TurnState, *, truncated: bool
) -> _Prepared:
    tool = by_name.get(call.name)
    fallback = Presentation(title=call.name, kind="other")
    if truncated:
        error: ToolError = ToolInputError(
            "the response hit the output-token limit, so these arguments are cut off; the call was not run"
        )
        return _Prepared(call, tool, None, fallback, error)
    if tool is None:
        available = ", ".join(sorted(by_name)) or "none"
        error = ToolInputError(
            f"no tool {call.name!r} is available now (the session is in {deps.mode()} mode); tools: {available}"
        )
        return _Prepared(call, None, None, fallback, error)
    arguments = call.parsed_arguments()
    if arguments is None:
        snippet = call.arguments[:200]
        error = ToolInputError(f"{call.name}: arguments must be a JSON object; got {snippet!r}")
        return _Prepared(call, tool, None, fallback, error)
    try:
        parsed = tool.validate(arguments)
    except ToolError as exc:
        return _Prepared(call, tool, None, fallback, exc)
    ctx = _context(call, deps, state)
    try:
        presentation = tool.present(parsed, ctx)
    except ToolError as exc:
        return _Prepared(call, tool, None, fallback, exc)
    return _Prepared(call, tool, parsed, presentation, None)


def _context(call: ToolCallPart, deps: TurnDeps, state: TurnState) -> ToolContext:
    async def progress(content: list[Any]) -> None:
        await deps.recorder.live(LiveToolProgress(call.id, content))

    return ToolContext(
        session_id=deps.session_id,
        turn_id=state.turn_id,
        tool_call_id=call.id,
        workspace=deps.workspace,
        mode=deps.mode(),
        progress=progress,
        cache_dir=deps.cache_dir,
        files=deps.files,
        terminals=deps.terminals,
        images=deps.images,
        sandbox=deps.sandbox,
    )


async def _execute(item: _Prepared, state: TurnState, deps: TurnDeps, approvals: ApprovalFlow) -> ToolOutcome:
    if item.error is not None or item.tool is None:
        return _failure(item.error or ToolInputError(f"unknown tool {item.call.name!r}"))
    ctx = _context(item.call, deps, state)
    try:
        request = await item.tool.approval(item.parsed, ctx)
        if request is not None:
            await approvals.check(item.call.id, item.presentation, request)
        await deps.recorder.live(LiveToolProgress(item.call.id))
        state.running_call = item.call.id  # only now: a cancel during the permission prompt leaves it "not run"
        return await item.tool.run(item.parsed, ctx)
    except ToolError as exc:
        return _failure(exc)
    except TurnCancelledByClient:
        raise
    except Exception as exc:
        _log.exception("tool crashed", tool=item.call.name, session_id=deps.session_id)
        return _failure(ToolError(f"{item.call.name} failed unexpectedly: {type(exc).__name__}: {exc}"))


def _failure(exc: ToolError) -> ToolOutcome:
    text = f"Error ({exc.code}): {exc}"
    return ToolOutcome(parts=[TextPart(text=text)], content=[TextBlock(text=text)], failed=True, error_code=exc.code)


async def _settle(state: TurnState, deps: TurnDeps, call: ToolCallPart, outcome: ToolOutcome) -> None:
    await deps.recorder.record(
        ToolCallSettled(
            turn_id=state.turn_id,
            tool_call_id=call.id,
            status="failed" if outcome.failed else "completed",
            content=outcome.content,
            raw_output=outcome.raw_output,
            result=ToolResultMessage(
                tool_call_id=call.id, name=call.name, parts=outcome.parts, is_error=outcome.failed
            ),
            error_code=outcome.error_code,
        )
    )


async def _settle_interrupted(state: TurnState, deps: TurnDeps) -> None:
    """Store what a broken or cancelled turn showed, and fail every call that is still open."""
    prompt, state.unstored_prompt = state.unstored_prompt, None
    if prompt is not None:
        await deps.recorder.record(_kept_prompt(state, prompt))
    partial, state.partial = state.partial, None
    if partial is not None and (partial.text or partial.thinking):
        parts: list[TextPart | ThinkingPart | ToolCallPart] = []
        if partial.thinking:
            parts.append(ThinkingPart(text="".join(partial.thinking)))
        if partial.text:
            parts.append(TextPart(text="".join(partial.text)))
        await deps.recorder.record(
            AssistantMessageStored(
                turn_id=state.turn_id,
                message_id=partial.message_id,
                message=AssistantMessage(parts=parts),
                model_id=deps.model.id,
                interrupted=True,
            )
        )
    events = _interrupted_settlements(state, deps)
    if events:
        await deps.recorder.record(*events)


def _kept_prompt(state: TurnState, display: list[DisplayBlock]) -> UserPrompted:
    """The prompt of a turn stopped while it was converted: kept in the log (a replay shows it), not for the model,
    which never got it."""
    text = "".join(b.text for b in display if isinstance(b, TextBlock))
    return UserPrompted(
        turn_id=state.turn_id,
        message_id=new_message_id(),
        display=display,
        message=UserMessage(parts=[TextPart(text=text)]),
        for_model=False,
    )


def _interrupted_settlements(state: TurnState, deps: TurnDeps) -> list[ToolCallSettled]:
    running, state.running_call = state.running_call, None

    def failure(call_id: str) -> Failure:
        return ("cancelled", _CANCELLED_TEXT) if call_id == running else ("not_run", _NOT_RUN_TEXT)

    return failed_settlements(deps.recorder.projection, failure)


async def _settle_live_only(state: TurnState, deps: TurnDeps) -> None:
    """The store refused a write: still settle every open card in the editor (not stored; the session's next turn,
    or a reload, settles these calls for good as "outcome unknown")."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT_S):
        for event in _interrupted_settlements(state, deps):
            await deps.recorder.sink.emit_event(event, live=True)
