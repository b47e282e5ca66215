"""What ``computer_use`` answers, as models, and the one place they become a ``ToolOutcome``.

One model per kind of answer (a capture, a listing, ``verify_state``, ``focus_app``, ``wait`` and the input actions),
each ``{ok, action, ...}``. A field left unset is left out of the JSON (an absent key), and one set to None says so
(``"image": null``: the driver gave no usable screenshot). ``outcome`` renders one: the model reads the JSON
without ``meta`` (the timings are for the record), the editor a one-line summary or what the caller shows, and the
record keeps the model itself (serialised by the turn loop with the same rules).

It deliberately knows nothing about the driver, the desktop or approval.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from hermes_acp.core import DisplayBlock, ImagePart, TextBlock, TextPart
from hermes_acp.errors import ToolErrorCode
from hermes_acp.tools.base import ToolOutcome

from .results import ActionReport

__all__ = [
    "AppsOutput",
    "CaptureFailure",
    "CaptureOutput",
    "ComputerUseOutput",
    "Escalation",
    "FocusOutput",
    "ImageInfo",
    "InputOutput",
    "Timing",
    "VerifyOutput",
    "WaitOutput",
    "WindowsOutput",
    "given",
    "model_json",
    "outcome",
]


class _Shape(BaseModel):
    """A field that is None and was never set is left out; one set to None stays (``null``)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    @model_serializer(mode="wrap")
    def _leave_out_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items() if value is not None or key in self.model_fields_set}


class Timing(_Shape):
    total_ms: float
    driver_ms: float


class ImageInfo(_Shape):
    """The screenshot the model got: its size, the coordinate space input uses, and how it reached the model."""

    width: int
    height: int
    coordinates: str = "pixels of this image"
    route: str


def given(**values: Any) -> dict[str, Any]:
    """The values that are not None (to build a model whose None fields stay unset, so left out)."""
    return {key: value for key, value in values.items() if value is not None}


class ComputerUseOutput(_Shape):
    ok: bool = True
    action: str
    meta: Timing | None = None
    """How long the call took (the record only: the model's JSON leaves it out)."""

    def summary(self) -> str:
        """One line for the editor."""
        return f"{self.action} {'ok' if self.ok else 'failed'}"


class CaptureOutput(ComputerUseOutput):
    action: Literal["capture"] = "capture"
    mode: str
    app: str | None = None
    """``screen`` for the whole display."""
    target: dict[str, Any] | None = None
    windows: list[dict[str, Any]] | None = None
    image: ImageInfo | None = None
    screenshot_path: str | None = None
    note: str | None = None
    elements: list[dict[str, Any]] | None = None
    elements_total: int | None = None
    elements_file: str | None = None
    elements_note: str | None = None
    driver_truncated: bool | None = None
    screenshot_scale: float | None = None
    """The driver's backing scale of the screenshot (macOS: 2.0 on Retina; the window's units are points)."""
    bounds_scale: float | None = None
    bounds_note: str | None = None
    degraded: bool | None = None
    degraded_reason: str | None = None
    next: str | None = None


class CaptureFailure(_Shape):
    """A ``capture_after`` that failed (the action itself went through)."""

    ok: bool = False
    code: str
    message: str


AfterCapture = CaptureOutput | CaptureFailure | str
"""What ``capture_after`` brought: the capture, why it failed, or why it was skipped."""


class WaitOutput(ComputerUseOutput):
    action: Literal["wait"] = "wait"
    seconds: float
    capture_after: AfterCapture | None = None


class AppsOutput(ComputerUseOutput):
    action: Literal["list_apps"] = "list_apps"
    apps: list[dict[str, Any]]
    installed_not_running: list[str] | None = None
    note: str | None = None


class WindowsOutput(ComputerUseOutput):
    action: Literal["list_windows"] = "list_windows"
    windows: list[dict[str, Any]]


class VerifyOutput(ComputerUseOutput):
    action: Literal["verify_state"] = "verify_state"
    target: dict[str, Any]
    status: str
    satisfied: bool
    predicates: list[Any]
    note: str | None = None


class FocusOutput(ComputerUseOutput):
    action: Literal["focus_app"] = "focus_app"
    target: dict[str, Any]
    raised: bool | None = None
    next: str | None = None


class Escalation(_Shape):
    recommended: str | None = None
    reason: str | None = None


class InputOutput(ComputerUseOutput):
    """An input action: transport ``ok`` apart from the semantic ``effect``, and the ``verdict`` on what to do next."""

    target: dict[str, Any] | None = None
    effect: str | None = None
    verified: bool | None = None
    code: str | None = None
    message: str | None = None
    route: str | None = None
    delivery_mode: str | None = None
    degraded: bool | None = None
    hint: str | None = None
    escalation: Escalation | None = None
    evidence: list[Any] | None = None
    resolved_window: dict[str, Any] | None = None
    verdict: dict[str, Any]
    capture_after: AfterCapture | None = None

    @classmethod
    def of(
        cls, action: str, target: dict[str, Any] | None, report: ActionReport, verdict: dict[str, Any]
    ) -> InputOutput:
        escalation = None
        if report.recommended or report.escalation_reason:
            escalation = Escalation(
                **given(recommended=report.recommended or None, reason=report.escalation_reason or None)
            )
        return cls(
            ok=report.ok,
            action=action,
            verdict=verdict,
            **given(
                target=target,
                effect=report.effect,
                verified=report.verified,
                code=report.code,
                message=report.message,
                route=report.route,
                delivery_mode=report.delivery_mode,
                degraded=report.degraded,
                hint=report.hint,
                escalation=escalation,
                evidence=report.evidence,
                resolved_window=report.resolved_window,
            ),
        )

    def summary(self) -> str:
        """What happened and what the verdict says."""
        state = "ok" if self.ok else f"failed ({self.code})"
        effect = f", effect {self.effect}" if self.effect else ""
        decision = self.verdict.get("decision")
        message = f": {self.message}" if self.message else ""
        return f"{self.action} {state}{effect}" + (f" → {decision}" if decision else "") + message


def model_json(output: ComputerUseOutput) -> str:
    """The JSON the model reads (compact, without the record-only ``meta``)."""
    return output.model_dump_json(exclude={"meta"})


def outcome(
    output: ComputerUseOutput,
    *,
    content: list[DisplayBlock] | None = None,
    parts: list[TextPart | ImagePart] | None = None,
    failed: bool = False,
    error_code: ToolErrorCode | None = None,
) -> ToolOutcome[ComputerUseOutput]:
    """A computer_use answer as the turn loop takes it: the JSON first, then ``parts`` (an image, or its
    description) for the model; ``content`` for the editor (default: the JSON itself)."""
    text = model_json(output)
    return ToolOutcome(
        parts=[TextPart(text=text), *(parts or [])],
        content=content if content is not None else [TextBlock(text=text)],
        raw_output=output,
        failed=failed,
        error_code=error_code,
    )
