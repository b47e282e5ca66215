"""``ComputerUseTool``: the ``computer_use`` tool of one session (the ``Tool`` seam of ``hermes_acp.tools``).

Order per call: parse → hard blocks (before any approval) → approval by action class (observation, and a
``focus_app`` that only binds the target, need none; input asks under ``computer_use:background`` or
``computer_use:foreground``, showing what will happen and the latest screenshot) → run. Capture binds the
sticky target; input goes to it, after the ``app=`` guard; a target bound on an earlier driver connection is
void. Input results keep transport ``ok`` apart from ``effect`` and carry a ``verdict`` (a refusal or a lost
mutation too); ``capture_after`` runs only after an ``ok`` action. Calls are serialised per session. Every answer is
one of the result models of ``outputs``, rendered there.

It deliberately knows nothing about MCP (``driver``), pixels (``images``/``gate``) or how approval is asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from pydantic import ValidationError

from hermes_acp.core import DisplayBlock, ImageBlock, ImagePart, TextBlock, TextPart, ToolKind
from hermes_acp.errors import ComputerUseError, OutcomeUnknownError, ToolInputError
from hermes_acp.images.gate import SessionImageGate
from hermes_acp.tools.approval import Approval
from hermes_acp.tools.base import Presentation, ToolOutcome, describe_validation_error
from hermes_acp.tools.context import ApprovalRequest, ToolContext

from .actions import describe, plan_input
from .capture import Capturer, CaptureResult
from .driver import DriverClient
from .elements import Seen
from .outputs import (
    AppsOutput,
    CaptureFailure,
    ComputerUseOutput,
    FocusOutput,
    InputOutput,
    Timing,
    VerifyOutput,
    WaitOutput,
    WindowsOutput,
    given,
    outcome,
)
from .results import ActionReport, ComputerUseRefusal, action_report, refusal_report
from .safety import check_keys, check_text
from .schema import DESCRIPTION, INPUT_SCHEMA, OBSERVATION_ACTIONS, ComputerUseInput
from .target import Target, mismatch
from .verdict import verdict

__all__ = ["SCOPE_BACKGROUND", "SCOPE_FOREGROUND", "ComputerUseTool"]

Outcome = ToolOutcome[ComputerUseOutput]

SCOPE_BACKGROUND = "computer_use:background"
SCOPE_FOREGROUND = "computer_use:foreground"
MAX_LISTED_APPS = 60
_KINDS: dict[str, ToolKind] = {"capture": "read", "list_apps": "read", "list_windows": "read", "verify_state": "read"}
_READING_ACTIONS = frozenset(_KINDS)
"""The actions that only read the desktop."""


@dataclass(slots=True)
class _Desk:
    """The session's view of the desktop: the sticky target and what its latest capture showed."""

    target: Target | None = None
    seen: Seen | None = None
    image: ImageBlock | None = None

    def bind(self, result: CaptureResult) -> None:
        self.target, self.seen, self.image = result.target, result.seen, result.editor_image


class ComputerUseTool:
    name = "computer_use"
    description = DESCRIPTION
    read_only = False

    def __init__(self, driver: DriverClient, gate: SessionImageGate, cache_dir: Path):
        self._driver = driver
        self._gate = gate
        self._capturer = Capturer(driver, gate, cache_dir)
        self._desk = _Desk()
        self._lock = anyio.Lock()

    @property
    def input_schema(self) -> dict[str, Any]:
        return INPUT_SCHEMA

    def validate(self, arguments: dict[str, Any]) -> ComputerUseInput:
        try:
            return ComputerUseInput.model_validate(arguments)
        except ValidationError as exc:
            raise ToolInputError(f"computer_use: {describe_validation_error(exc)}") from exc

    def _live_target(self) -> Target | None:
        target = self._desk.target
        return target if target is not None and target.generation == self._driver.generation else None

    def reads_only(self, parsed: ComputerUseInput) -> bool:
        """Captures and listings only read (they may run beside the other reads of a response; calls still take
        turns on the driver); input, ``wait`` and ``focus_app`` do not."""
        return parsed.action in _READING_ACTIONS

    def present(self, parsed: ComputerUseInput, ctx: ToolContext) -> Presentation:
        title = describe(parsed, self._live_target(), self._desk.seen)
        return Presentation(title=f"computer_use: {title}", kind=_KINDS.get(parsed.action, "other"))

    async def approval(self, parsed: ComputerUseInput, ctx: ToolContext) -> Approval[ComputerUseOutput]:
        if parsed.action == "key" and parsed.keys is not None:
            check_keys([parsed.keys, *(parsed.modifiers or [])])
        for text in (parsed.text, parsed.value):
            if text is not None and parsed.action in ("type", "set_value"):
                check_text(text)
        if parsed.action in OBSERVATION_ACTIONS or (parsed.action == "focus_app" and not parsed.raise_window):
            return Approval(ctx.tool_call_id)  # focus_app without raise_window only binds the target
        target = self._live_target()
        title = describe(parsed, target, self._desk.seen)
        lines = [title]
        if target is not None:
            lines.append(
                f"Target: {target.app} — window {target.title!r} (pid {target.pid}, window {target.window_id})"
            )
        elif parsed.action != "focus_app":
            lines.append("No target is bound yet: the call will be refused until a capture binds one.")
        lines.append("Delivery: foreground (raises the window)" if parsed.foreground else "Delivery: background")
        content: list[DisplayBlock] = [TextBlock(text="\n".join(lines))]
        if self._desk.image is not None and target is not None:
            content.append(self._desk.image)
        request = ApprovalRequest(
            scope=SCOPE_FOREGROUND if parsed.foreground else SCOPE_BACKGROUND,
            title=f"computer_use: {title}",
            mutating=True,
            content=content,
            raw_input=parsed.model_dump(exclude_none=True),
        )
        return Approval(ctx.tool_call_id, request=request)

    async def run(self, parsed: ComputerUseInput, approval: Approval[ComputerUseOutput], ctx: ToolContext) -> Outcome:
        async with self._lock:
            started, driver_before = anyio.current_time(), self._driver.busy_s
            done = await self._run(parsed)
            if done.raw_output is not None:
                done.raw_output.meta = Timing(
                    total_ms=round((anyio.current_time() - started) * 1000, 2),
                    driver_ms=round((self._driver.busy_s - driver_before) * 1000, 2),
                )
            return done

    async def _run(self, p: ComputerUseInput) -> Outcome:
        action = p.action
        if action == "capture":
            result = await self._capturer.capture(p.mode or "som", app=p.app, pid=p.pid, window_id=p.window_id)
            self._desk.bind(result)
            return self._capture_outcome(result)
        if action == "wait":
            seconds = p.seconds if p.seconds is not None else 1.0
            await anyio.sleep(seconds)
            return await self._after(WaitOutput(seconds=seconds), p)
        if action == "list_apps":
            return outcome(await self._list_apps())
        if action == "list_windows":
            rows = await self._capturer.windows(**({"pid": p.pid} if p.pid is not None else {}))
            if p.app is not None:
                needle = p.app.casefold()
                rows = [r for r in rows if needle in r.app.casefold() or needle in r.title.casefold()]
            return outcome(WindowsOutput(windows=[r.payload() for r in rows]))
        if action == "verify_state":
            return await self._verify(p)
        if action == "focus_app":
            return await self._focus(p)
        return await self._input(p)

    def _capture_outcome(self, result: CaptureResult) -> Outcome:
        return outcome(result.output, parts=result.parts, content=result.display)

    async def _list_apps(self) -> AppsOutput:
        reply = await self._driver.call("list_apps", {})
        apps = [a for a in reply.structured.get("apps") or [] if isinstance(a, dict)]
        with_windows = [a for a in apps if a.get("windows")]
        others = [a for a in apps if not a.get("windows") and a.get("running") is not False]
        rows = [
            {"name": a.get("name"), "pid": a.get("pid"), "windows": len(a.get("windows") or []),
             **({"bundle_id": a["bundle_id"]} if a.get("bundle_id") else {})}
            for a in [*with_windows, *others][:MAX_LISTED_APPS]
        ]  # fmt: skip
        installed = [str(a.get("name")) for a in apps if a.get("running") is False][:MAX_LISTED_APPS]
        running = len(with_windows) + len(others)
        return AppsOutput(
            apps=rows,
            **given(
                installed_not_running=installed or None,
                note=f"{running} running; apps with windows first" if running > MAX_LISTED_APPS else None,
            ),
        )

    def _require_target(self) -> Target:
        target = self._live_target()
        if target is not None:
            return target
        if self._desk.target is not None:
            raise ComputerUseRefusal(
                "the driver connection was rebuilt since the last capture, so its target and element map are void; "
                "capture again",
                code="stale_target",
            )
        raise ComputerUseRefusal(
            "no target: capture an app or window first (capture binds the target)", code="no_target"
        )

    async def _verify(self, p: ComputerUseInput) -> Outcome:
        target = self._require_target()
        surface = await self._driver.ensure()
        await self._driver.require(("accessibility",))
        if not surface.has("verify_state"):
            raise ComputerUseRefusal(
                "this driver has no verify_state; capture and read the values", code="unsupported_action"
            )
        args: dict[str, Any] = {"pid": target.pid, "window_id": target.window_id, "expect": p.expect}
        if p.seconds is not None and surface.accepts("verify_state", "timeout_ms"):
            args["timeout_ms"] = int(min(p.seconds, 10.0) * 1000)
        reply = await self._driver.call("verify_state", args)
        data = reply.structured
        status = str(data.get("status") or "unknown")
        predicates = data.get("predicates")
        note = "unknown is not success: capture and check, or restate the predicate" if status == "unknown" else None
        return outcome(
            VerifyOutput(
                target=target.payload(),
                status=status,
                satisfied=status == "satisfied",
                predicates=predicates if isinstance(predicates, list) else [],
                **given(note=note),
            )
        )

    async def _focus(self, p: ComputerUseInput) -> Outcome:
        target, _row = await self._capturer.bind(app=p.app, pid=p.pid, window_id=p.window_id)
        previous = self._desk.target
        if previous is None or (previous.pid, previous.window_id) != (target.pid, target.window_id):
            self._desk.seen, self._desk.image = None, None
        self._desk.target = target
        if p.raise_window:
            await self._raise(target)
        return outcome(
            FocusOutput(
                target=target.payload(),
                next="Capture to see the window and get its elements before acting.",
                **given(raised=True if p.raise_window else None),
            )
        )

    async def _raise(self, target: Target) -> None:
        surface = await self._driver.ensure()
        if not surface.has("bring_to_front"):
            raise ComputerUseRefusal("this driver cannot raise windows", code="foreground_unsupported")
        await self._driver.require(("accessibility",))
        args = {"pid": target.pid, "window_id": target.window_id}
        await self._driver.call("bring_to_front", surface.with_only("bring_to_front", args))

    async def _input(self, p: ComputerUseInput) -> Outcome:
        used_element, foreground = False, p.delivery_mode == "foreground"
        target = self._desk.target
        try:
            target = self._require_target()
            if p.app is not None and (refusal := mismatch(target, p.app)) is not None:
                raise refusal
            surface = await self._driver.ensure()
            await self._driver.require(("accessibility",))
            planned = plan_input(p, target=target, seen=self._desk.seen, surface=surface)
            used_element = planned.used_element
            if p.bring_to_front:
                await self._raise(target)
            reply = await self._driver.call(planned.tool, planned.args)
            report = action_report(reply)
        except ComputerUseRefusal as refusal:
            report = refusal_report(refusal)
        except OutcomeUnknownError as lost:
            report = ActionReport(ok=False, code=lost.code, message=str(lost))
        decided = verdict(report, used_element=used_element, foreground=foreground)
        output = InputOutput.of(p.action, target.payload() if target else None, report, decided)
        return await self._after(output, p, report)

    async def _after(
        self, output: WaitOutput | InputOutput, p: ComputerUseInput, report: ActionReport | None = None
    ) -> Outcome:
        """The action's outcome, plus a capture of the same target when asked and the action went through."""
        failed = report is not None and not report.ok
        parts: list[TextPart | ImagePart] = []
        display: list[DisplayBlock] = [TextBlock(text=output.summary())]
        target = self._live_target()
        if p.capture_after and not failed and target is not None:
            try:
                result = await self._capturer.capture("som", known=target)
            except ComputerUseError as exc:
                output.capture_after = CaptureFailure(code=exc.code, message=str(exc))
            else:
                self._desk.bind(result)
                output.capture_after = result.output
                parts.extend(result.parts)
                display.extend(block for block in result.display if isinstance(block, ImageBlock))
        elif p.capture_after and failed:
            output.capture_after = "skipped: the action failed (a screenshot now would look like success)"
        code = report.code if failed and report is not None else None
        return outcome(output, parts=parts, content=display, failed=failed, error_code=code)
