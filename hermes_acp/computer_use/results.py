"""What the driver's answers mean: the result envelope, refusals, and the action result in all its generations.

``DriverReply`` is one ``tools/call`` result split into structured content, texts and images (picked by type,
never by position; legacy drivers that put JSON in the text are merged in). ``DriverRefusal`` is an ``isError``
result as a ``ComputerUseError`` carrying the driver's code (shape A ``refusal.code``, B/C top-level ``code``),
its escalation advice and hint. ``ActionReport`` normalises a successful action from the legacy open object
(``path``/``verified``/``escalation.recommended``), the closed ActionResult (``effect``/``route``/``delivery``/
``escalation.target``) and the 0.37 additions (``summary``/``hint``); transport success (``ok``) stays apart from
the semantic ``effect`` (docs/cua-driver.md §4.2). How the model reads a report is ``outputs``' business.

It deliberately knows nothing about MCP, sessions or the model-facing schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes_acp.errors import ComputerUseError, DriverCode, ToolErrorCode

__all__ = ["ActionReport", "ComputerUseRefusal", "DriverRefusal", "DriverReply", "action_report", "refusal_report"]

_RUNG = {"pixel": "px", "px": "px", "foreground": "foreground", "page": "page", "session": "session"}


@dataclass(slots=True)
class DriverReply:
    structured: dict[str, Any]
    texts: list[str]
    images: list[tuple[str, str]]
    """(media type, base64) of every image part, in order."""
    is_error: bool = False
    elapsed_s: float = 0.0

    @property
    def text(self) -> str:
        return "\n".join(self.texts)

    @property
    def code(self) -> str | None:
        refusal = self.structured.get("refusal")
        if isinstance(refusal, Mapping) and refusal.get("code"):
            return str(refusal["code"])
        code = self.structured.get("code") or self.structured.get("reason_code")
        return str(code) if code else None

    @classmethod
    def parse(cls, raw: Mapping[str, Any], elapsed_s: float = 0.0) -> DriverReply:
        structured = raw.get("structuredContent")
        merged: dict[str, Any] = {}
        texts: list[str] = []
        images: list[tuple[str, str]] = []
        for part in raw.get("content") or []:
            if not isinstance(part, Mapping):
                continue
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
                merged.update(_json_object(part["text"]))
            elif part.get("type") == "image" and isinstance(part.get("data"), str):
                images.append((str(part.get("mimeType") or "image/png"), part["data"]))
        if isinstance(structured, Mapping):
            merged.update(structured)
        legacy_png = merged.pop("screenshot_png_b64", None)
        if not images and isinstance(legacy_png, str):
            images.append(("image/png", legacy_png))
        return cls(merged, texts, images, raw.get("isError") is True, elapsed_s)


def _json_object(text: str) -> dict[str, Any]:
    stripped = text.strip()
    if not stripped.startswith("{"):
        return {}
    try:
        value = json.loads(stripped)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class ComputerUseRefusal(ComputerUseError):
    """A computer_use failure with its own code (ours or the driver's) and optional details for the model."""

    def __init__(self, message: str, *, code: ToolErrorCode, details: Mapping[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.details = dict(details or {})


class DriverRefusal(ComputerUseRefusal):
    """The driver answered ``isError``: a refusal or a failure, with the driver's own code and advice."""

    def __init__(self, tool: str, reply: DriverReply):
        code: ToolErrorCode = DriverCode(reply.code) if reply.code else "driver_error"
        refusal = reply.structured.get("refusal")
        message = ""
        if isinstance(refusal, Mapping) and refusal.get("message"):
            message = str(refusal["message"])
        message = message or reply.text or str(reply.structured.get("detail") or "") or f"{tool} failed"
        details: dict[str, Any] = {}
        hint = reply.structured.get("hint") or reply.structured.get("suggestion")
        if hint:
            details["hint"] = str(hint)
        rung = _recommended(reply.structured.get("escalation"))
        if rung:
            details["escalation"] = {"recommended": rung}
        super().__init__(f"{tool}: {message}", code=code, details=details)


def _recommended(escalation: Any) -> str | None:
    if not isinstance(escalation, Mapping):
        return None
    rung = escalation.get("recommended") or escalation.get("target")
    return _RUNG.get(str(rung), str(rung)) if rung else None


@dataclass(slots=True)
class ActionReport:
    """One input action as the model reads it: transport ``ok`` apart from semantic ``effect``/``verified``."""

    ok: bool
    effect: str | None = None
    verified: bool | None = None
    recommended: str | None = None
    escalation_reason: str | None = None
    code: ToolErrorCode | None = None
    message: str | None = None
    route: str | None = None
    delivery_mode: str | None = None
    degraded: bool | None = None
    hint: str | None = None
    evidence: list[Any] | None = None
    """The driver's evidence for the effect (at most four entries)."""
    resolved_window: dict[str, Any] | None = None


def action_report(reply: DriverReply) -> ActionReport:
    data = reply.structured
    escalation = data.get("escalation")
    delivery = data.get("delivery")
    evidence = data.get("evidence")
    verified = data.get("verified")
    report = ActionReport(
        ok=not reply.is_error,
        effect=str(data["effect"]) if data.get("effect") else None,
        verified=verified if isinstance(verified, bool) else None,
        recommended=_recommended(escalation),
        escalation_reason=str(escalation.get("reason")) if isinstance(escalation, Mapping) and "reason" in escalation
        else None,
        code=DriverCode(reply.code) if reply.code else None,
        message=str(data.get("summary") or reply.text or "")[:500] or None,
        route=str(data.get("route") or data.get("path") or "") or None,
        delivery_mode=str(delivery["mode"]) if isinstance(delivery, Mapping) and delivery.get("mode") else None,
        degraded=data["degraded"] if isinstance(data.get("degraded"), bool) else None,
        hint=str(data["hint"]) if data.get("hint") else None,
    )  # fmt: skip
    if isinstance(evidence, list) and evidence:
        report.evidence = evidence[:4]
    if isinstance(data.get("resolved_window"), Mapping):
        report.resolved_window = dict(data["resolved_window"])
    return report


def refusal_report(refusal: ComputerUseRefusal) -> ActionReport:
    """An action the driver (or we) refused, in the same shape as a delivered one."""
    escalation = refusal.details.get("escalation")
    recommended = escalation.get("recommended") if isinstance(escalation, Mapping) else None
    hint = refusal.details.get("hint")
    return ActionReport(
        ok=False,
        code=refusal.code,
        message=str(refusal)[:800],
        recommended=str(recommended) if recommended else None,
        hint=str(hint) if hint else None,
    )
