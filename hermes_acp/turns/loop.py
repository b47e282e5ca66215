"""The turn loop: one prompt turn, from the user's message to the model's final answer, as explicit phases.

``run_turn`` starts in ``Converting`` and runs one step per phase (``hermes_acp.turns.phases``), each returning the
next phase or ``Ended``: convert and store the prompt → build a request (compacting the history first when the
request would pass the compaction threshold, ``hermes_acp.turns.compaction``) → stream the response and store it
with its calls announced (``hermes_acp.turns.streaming``, ``hermes_acp.turns.tool_calls``) → run the calls in
batches (consecutive reads together, anything else alone) → the next request, until the model stops,
``max_turn_requests`` is reached, or the turn is stopped. A request the provider refuses as too long for the context
is compacted for and sent again, once (both compactions only while automatic compaction is on). After every model
call and every compaction the editor gets the context meter (``hermes_acp.turns.meter``). Every step ends on the
durable write that completes its phase, so the phase value always says what is stored and what is open.

Steering messages (``deps.steering``) are taken at the safe points only: each ``BetweenRequests`` step (after the
prompt, and after every response whose calls have all settled) applies what arrived, as a user message stored as
``SteeringApplied``, before the next request is built. A response that would end the turn while a message waits
leads to one more request instead; a turn that ends without taking one (a cancel, an error, the request limit)
reports it as not applied, in the same write as its end.

When a step raises, ``ENDINGS`` (one table) says how the turn ends: which way the open work is settled, which stop
reason is stored, whether the user is told and whether the error goes on to the caller. ``settle`` is the one
place that knows what each phase leaves open: the prompt not yet stored, a compaction the editor saw start, text
streamed but not stored, announced calls (those running "cancelled", the rest "not run"). When the store itself
failed, the open calls are settled in the editor only, with the words the repair before the session's next turn
stores (a reload by a new process before that repair says the same "outcome unknown" / "not run", in crash
recovery's words).

Guarantees (the invariants in docs/architecture.md): the response and its calls are stored before any tool runs,
and a call is stored as running before it runs; a result is stored before it is emitted; tool-call ids are the
provider's (fresh ones only for missing or duplicate ids); every announced call settles, whatever happens; a
cancelled turn ends ``cancelled`` after settling what was open. It knows neither ACP nor any concrete provider,
tool or store.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal, assert_never

import anyio
import structlog

from hermes_acp.core import (
    DisplayBlock,
    NoticeAdded,
    SessionEvent,
    SteeringApplied,
    StopReason,
    TextBlock,
    TextPart,
    TurnEnded,
    UserMessage,
    UserPrompted,
)
from hermes_acp.core.ids import new_compaction_id, new_message_id
from hermes_acp.errors import (
    ContextLengthError,
    ProviderAuthError,
    ProviderError,
    StorageError,
    TurnFailure,
    failure_of,
)
from hermes_acp.providers.base import ModelStopReason, ProviderRequest
from hermes_acp.tools.base import AnyTool

from .approvals import TurnCancelledByClient
from .compaction import compact, log_compaction
from .context import fixed_tokens
from .meter import Meter
from .phases import BetweenRequests, Compacting, Converting, Ended, Phase, RunningTool, Streaming
from .ports import LiveCompaction
from .prompt_input import ConvertedPrompt, convert_prompt
from .settlements import (
    CANCELLED,
    INTERRUPTED,
    STORE_FAILED,
    Failure,
    dropped_input,
    failed_settlements,
    interrupted_message,
)
from .state import TurnDeps, TurnResult, TurnState
from .streaming import PartialResponse, stream_response
from .tool_calls import announce, ask_attachment, batch_end, run_calls

__all__ = ["CLEANUP_TIMEOUT_S", "ENDINGS", "Ending", "TurnDeps", "TurnResult", "TurnState", "run_turn", "settle"]

CLEANUP_TIMEOUT_S = 5.0
"""Bound on the shielded work that settles a stopped turn."""
_log = structlog.get_logger("hermes_acp.turns")

SettleReason = Literal["cancelled", "failed", "store_failed"]
_RAN: Final[dict[SettleReason, Failure]] = {"cancelled": CANCELLED, "failed": INTERRUPTED, "store_failed": STORE_FAILED}
"""What a call that was running when the turn stopped settles with, by why it stopped."""


@dataclass(frozen=True, slots=True)
class Ending:
    """How a turn whose step raised ends."""

    settle: SettleReason
    stop: StopReason | None
    """The stop reason stored with the settlement; None when nothing can be stored (the store failed)."""
    propagate: bool
    """Raise on after settling: the prompt answers with an error, or the cancellation goes on."""
    notice: bool = False
    """Tell the user, in the transcript, that the model request failed."""
    advice: str = ""
    """What to do about it, after the notice."""
    log: bool = False
    """A bug of ours: log it with its traceback."""


TOO_LONG_ADVICE = (
    " The conversation does not fit the model's context window, even compacted. To go on: `/compact` with"
    " instructions that keep less, switch to a model with a larger context window (`/model`), or start a new"
    " session; if one tool result or attachment is that large, ask for a smaller part of it."
)
ENDINGS: Final[tuple[tuple[type[BaseException], Ending], ...]] = (
    (TurnCancelledByClient, Ending("cancelled", "cancelled", propagate=False)),
    (StorageError, Ending("store_failed", None, propagate=True)),
    (ProviderAuthError, Ending("failed", "end_turn", propagate=False, notice=True)),
    (ContextLengthError, Ending("failed", "end_turn", propagate=False, notice=True, advice=TOO_LONG_ADVICE)),
    (ProviderError, Ending("failed", "end_turn", propagate=False, notice=True)),
    (Exception, Ending("failed", "end_turn", propagate=True, log=True)),
)
"""From exception to ending, first match wins. Before these: the backend's cancellation (``session/cancel``,
shutdown) ends the turn ``cancelled`` and goes on (``_CANCELLED``). Anything else (``KeyboardInterrupt``…) is not
a turn's business and propagates untouched."""
_CANCELLED: Final = Ending("cancelled", "cancelled", propagate=True)
_NOT_TAKEN: Final[dict[SettleReason, str]] = {
    "cancelled": "the turn it was sent to was cancelled first",
    "failed": "the turn it was sent to stopped on an error first",
    "store_failed": "the turn it was sent to stopped on an error first",
}
"""Why a steering message still waiting when a turn stopped was not applied, by why the turn stopped."""


def ending_for(exc: BaseException) -> Ending | None:
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return _CANCELLED
    return next((ending for kind, ending in ENDINGS if isinstance(exc, kind)), None)


async def run_turn(
    state: TurnState,
    deps: TurnDeps,
    display: list[DisplayBlock],
    *,
    notices: Sequence[str] = (),
    notes: Sequence[str] = (),
    prompt: str | None = None,
    input_id: str | None = None,
    message_id: str | None = None,
) -> TurnResult:
    """Run one prompt turn to its end. Cancellation propagates after the turn was settled and stored.

    ``notices`` are shown to the user with the prompt (e.g. an MCP server that failed to start); ``notes`` are for
    the model, after the prompt's text (e.g. the MCP servers that wait for the user to sign in). ``prompt``: what
    the model gets instead of ``display`` (a slash command's expanded text; the transcript still shows
    ``display``). ``input_id``: the queued input the prompt waited as; ``message_id``: the id to store the prompt
    with (a fresh one when None)."""
    current: Phase | Ended = Converting(
        display=display,
        notices=tuple(notices),
        notes=tuple(notes),
        prompt=prompt,
        input_id=input_id,
        message_id=message_id or new_message_id(),
    )
    try:
        while not isinstance(current, Ended):
            current = await _step(current, state, deps)
    except BaseException as exc:
        ending = ending_for(exc)
        if ending is None or isinstance(current, Ended):
            raise
        result = await _finish(current, exc, ending, state, deps)
        if ending.propagate:
            raise
        return result
    finally:
        if deps.cancels is not None:  # every call the turn announced has settled (``settle`` let go of the rest)
            deps.cancels.release_all()
    limit = current.limit
    said = limit.message.rstrip(".") if limit is not None else "The turn ended first"
    why = said[0].lower() + said[1:]
    await deps.recorder.record(
        *_steers_not_taken(state, deps, why),
        TurnEnded(turn_id=state.turn_id, stop_reason=current.stop_reason, usage=state.usage),
    )
    return TurnResult(stop_reason=current.stop_reason, usage=state.usage, failure=limit)


def _steers_not_taken(state: TurnState, deps: TurnDeps, why: str) -> list[SessionEvent]:
    """Close the steering inbox; each message still waiting, reported as not applied (``why``)."""
    left = deps.steering.close() if deps.steering is not None else []
    return [dropped_input(s.input_id, "steering", s.display, why, turn_id=state.turn_id) for s in left]


def _ending_now(deps: TurnDeps) -> bool:
    """Whether the turn may end here: no steering message waits (and from now on none is taken)."""
    return deps.steering is None or deps.steering.close_if_empty()


async def _step(phase: Phase, state: TurnState, deps: TurnDeps) -> Phase | Ended:
    match phase:
        case Converting():
            return await _convert(phase, state, deps)
        case BetweenRequests():
            return await _between(state, deps)
        case Compacting():
            return await _compact(phase, state, deps)
        case Streaming():
            return await _stream(phase, state, deps)
        case RunningTool():
            return await _run_tool(phase, state, deps)
        case _:
            assert_never(phase)


async def _convert(phase: Converting, state: TurnState, deps: TurnDeps) -> Phase:
    if phase.prompt is not None:
        converted = ConvertedPrompt(UserMessage(parts=[TextPart(text=phase.prompt)]))
    else:
        converted = await _converted(phase.display, state, deps)
    if phase.notes:
        notes = [TextPart(text=note) for note in phase.notes]
        converted = replace(converted, message=UserMessage(parts=[*converted.message.parts, *notes]))
    await deps.recorder.record(
        UserPrompted(
            turn_id=state.turn_id,
            message_id=phase.message_id,
            display=phase.display,
            message=converted.message,
            input_id=phase.input_id,
            sender_session_id=deps.sender_session_id,
        ),
        *[
            NoticeAdded(turn_id=state.turn_id, message_id=new_message_id(), text=text)
            for text in [*phase.notices, *converted.notices]
        ],
    )
    return BetweenRequests()


async def _converted(display: list[DisplayBlock], state: TurnState, deps: TurnDeps) -> ConvertedPrompt:
    return await convert_prompt(
        display,
        workspace=deps.env.workspace,
        ask_outside=lambda path, request: ask_attachment(deps, state, path, request),
        images=deps.env.images,
    )


async def _between(state: TurnState, deps: TurnDeps) -> Phase | Ended:
    if state.requests >= deps.max_requests:
        text = f"The turn reached its limit of {deps.max_requests} model requests first."
        return Ended("max_turn_requests", TurnFailure(kind="turn_requests", message=text, limit="max_turn_requests"))
    spent = await _within_budget(state, deps)
    if spent is not None:
        return Ended("max_turn_requests", spent)
    await _apply_steering(state, deps)
    return _next_request(state, deps)


async def _within_budget(state: TurnState, deps: TurnDeps) -> TurnFailure | None:
    """The budget's notices that are due, stored; the failure to stop with when a cap is spent."""
    if deps.budget is None:
        return None
    check = deps.budget.check()
    if check.notices:
        await deps.recorder.record(
            *[NoticeAdded(turn_id=state.turn_id, message_id=new_message_id(), text=text) for text in check.notices]
        )
    if check.stop is not None:  # the meter as the turn stops: what was spent (a subagent's work included)
        await deps.recorder.live(Meter.of(deps).usage(tuple(deps.surface.tools())))
    return check.stop


async def _apply_steering(state: TurnState, deps: TurnDeps) -> None:
    """The steering messages that arrived, added to the history as user messages, in one write (a safe point)."""
    steers = deps.steering.take() if deps.steering is not None else []
    events: list[SessionEvent] = []
    for steer in steers:
        converted = await _converted(steer.display, state, deps)
        events.append(
            SteeringApplied(
                turn_id=state.turn_id,
                input_id=steer.input_id,
                message_id=new_message_id(),
                display=steer.display,
                message=converted.message,
            )
        )
        events.extend(
            NoticeAdded(turn_id=state.turn_id, message_id=new_message_id(), text=text) for text in converted.notices
        )
    if events:
        await deps.recorder.record(*events)


def _next_request(state: TurnState, deps: TurnDeps) -> Phase | Ended:
    tools = tuple(deps.surface.tools())
    state.requests += 1
    meter = Meter.of(deps)
    request = meter.request(tools)
    if deps.compaction.automatic and meter.measure(request).used > deps.compaction.threshold * meter.window:
        return Compacting(tools=tools, trigger="threshold", compaction_id=new_compaction_id())
    return _streaming(deps, request, tools)


def _streaming(
    deps: TurnDeps, request: ProviderRequest, tools: tuple[AnyTool, ...], *, retry: bool = False
) -> Streaming:
    # What the usage the response reports is anchored with (the tool surface may differ at the next request).
    deps.recorder.projection.sent_fixed = fixed_tokens(request)
    return Streaming(request=request, tools=tools, partial=PartialResponse(message_id=new_message_id()), retry=retry)


async def _compact(phase: Compacting, state: TurnState, deps: TurnDeps) -> Phase:
    """Compact the history (one write, when done), then build the request it made room for."""
    started = time.perf_counter()
    event = await compact(
        deps, turn_id=state.turn_id, compaction_id=phase.compaction_id, trigger=phase.trigger, tools=phase.tools
    )
    meter = Meter.of(deps)
    if event is not None:
        await deps.recorder.record(event)
        if event.usage is not None:  # the summary request is one of the turn's model calls
            state.usage = state.usage + event.usage
            if deps.budget is not None:
                deps.budget.charge(event.model_id or deps.model.id, event.usage)
        await deps.recorder.live(meter.usage(phase.tools))
        log_compaction(event, session_id=deps.env.session_id, started=started)
    return _streaming(deps, meter.request(phase.tools), phase.tools, retry=phase.trigger == "overflow")


async def _stream(phase: Streaming, state: TurnState, deps: TurnDeps) -> Phase | Ended:
    try:
        done = await stream_response(
            deps.provider,
            phase.request,
            phase.partial,
            recorder=deps.recorder,
            turn_id=state.turn_id,
            model_id=deps.model.id,
            checkpoints=deps.checkpoints,
        )
    except ContextLengthError as exc:
        if phase.retry or phase.partial.text or phase.partial.thinking or not deps.compaction.automatic:
            raise
        _log.info(
            "the provider refused the request as too long; compacting", session_id=deps.env.session_id, error=str(exc)
        )
        return Compacting(tools=phase.tools, trigger="overflow", compaction_id=new_compaction_id())
    if done.usage is not None:
        state.usage = state.usage + done.usage
        if deps.budget is not None:
            deps.budget.charge(deps.model.id, done.usage)
    calls = await announce(deps, state, phase.partial.message_id, done, list(phase.tools))
    await deps.recorder.live(Meter.of(deps).usage(phase.tools))
    if calls:
        return RunningTool(calls=calls, next=0, model_stop=done.stop_reason)
    return Ended(_turn_stop(done.stop_reason)) if _ending_now(deps) else BetweenRequests()


async def _run_tool(phase: RunningTool, state: TurnState, deps: TurnDeps) -> Phase | Ended:
    end = batch_end(phase.calls, phase.next)
    await run_calls(phase.calls[phase.next : end], deps, state)
    if end < len(phase.calls):
        return RunningTool(calls=phase.calls, next=end, model_stop=phase.model_stop)
    if phase.model_stop in ("max_tokens", "refusal") and _ending_now(deps):
        return Ended(_turn_stop(phase.model_stop))
    return BetweenRequests()


def _turn_stop(reason: ModelStopReason) -> StopReason:
    if reason in ("max_tokens", "refusal"):
        return reason
    return "end_turn"


async def settle(
    phase: Phase, reason: SettleReason, state: TurnState, deps: TurnDeps, *, then: Sequence[SessionEvent] = ()
) -> None:
    """Settle what ``phase`` leaves open, in one write with ``then`` (raises ``StorageError``).

    ``store_failed`` stores nothing: the open calls are settled in the editor only, with the words the repair will
    store; the prompt and streamed text cannot be kept (checkpoints already stored are, by the repair)."""
    if deps.cancels is not None:  # before anyone is told they settled: nothing of them can be stopped any more
        deps.cancels.release_all()
    projection = deps.recorder.projection
    if reason == "store_failed":
        await deps.recorder.show_unstored(*failed_settlements(projection, STORE_FAILED))
        return
    events: list[SessionEvent] = []
    match phase:
        case Converting():
            events.append(_kept_prompt(state, phase, deps.sender_session_id))
        case Streaming():
            partial = phase.partial
            message = interrupted_message(
                turn_id=state.turn_id,
                message_id=partial.message_id,
                model_id=deps.model.id,
                text=partial.shown_text,
                thinking=partial.shown_thinking,
            )
            if message is not None:
                events.append(message)
        case Compacting():
            if projection.compaction_id != phase.compaction_id:  # not stored: the editor saw it start
                status: Literal["cancelled", "failed"] = "cancelled" if reason == "cancelled" else "failed"
                await deps.recorder.live(LiveCompaction(phase.compaction_id, status))
        case BetweenRequests() | RunningTool():
            pass  # everything but the open calls is stored
        case _:
            assert_never(phase)
    events.extend(failed_settlements(projection, _RAN[reason]))
    await deps.recorder.record(*events, *then)


async def _finish(phase: Phase, exc: BaseException, ending: Ending, state: TurnState, deps: TurnDeps) -> TurnResult:
    """Settle a turn whose step raised ``exc`` and store how it ended, shielded and bounded.

    Returns the result for an ending that does not propagate; raises ``StorageError`` when the settlement itself
    could not be stored (the open calls are then settled in the editor only)."""
    if ending.log:
        _log.exception("turn failed", session_id=deps.env.session_id)
    then: list[SessionEvent] = _steers_not_taken(state, deps, _NOT_TAKEN[ending.settle])
    if ending.notice:
        _log.warning("model request failed", session_id=deps.env.session_id, error=str(exc))
        text = f"⚠ The model request failed: {exc}{ending.advice}"
        then.append(NoticeAdded(turn_id=state.turn_id, message_id=new_message_id(), text=text))
    refused: StorageError | None = None
    with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT_S):
        if ending.stop is not None:
            stop = TurnEnded(turn_id=state.turn_id, stop_reason=ending.stop, usage=state.usage)
            try:
                await settle(phase, ending.settle, state, deps, then=[*then, stop])
            except StorageError as failure:
                refused = failure
        if ending.stop is None or refused is not None:
            await settle(phase, "store_failed", state, deps)
    if refused is not None and not ending.propagate:
        raise refused
    why = failure_of(exc, model=deps.model.id) if ending.notice and isinstance(exc, ProviderError) else None
    return TurnResult(stop_reason=ending.stop or "end_turn", usage=state.usage, failure=why)


def _kept_prompt(state: TurnState, phase: Converting, sender: str | None) -> UserPrompted:
    """The prompt of a turn stopped while it was converted: kept in the log (a replay shows it), not for the model,
    which never got it."""
    text = "".join(b.text for b in phase.display if isinstance(b, TextBlock))
    return UserPrompted(
        turn_id=state.turn_id,
        message_id=phase.message_id,
        display=phase.display,
        message=UserMessage(parts=[TextPart(text=text)]),
        for_model=False,
        input_id=phase.input_id,
        sender_session_id=sender,
    )
