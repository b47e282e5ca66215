"""The model-facing ``computer_use`` tool: one JSON schema with an ``action`` discriminator, and its parser.

The schema is a constant, identical byte for byte for every session and every driver (prompt caches depend on
it): what a given driver cannot do is refused at call time (e.g. ``foreground_unsupported``), never by changing
the schema. ``ComputerUseInput`` parses and checks the arguments, including which fields each action needs.

It deliberately knows nothing about drivers, targets or images.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "ACTIONS",
    "DESCRIPTION",
    "INPUT_SCHEMA",
    "OBSERVATION_ACTIONS",
    "Action",
    "ComputerUseInput",
    "schema_text",
]

Action = Literal[
    "capture", "click", "double_click", "right_click", "drag", "scroll", "type", "key", "set_value", "wait",
    "list_apps", "list_windows", "focus_app", "verify_state",
]  # fmt: skip
ACTIONS: tuple[str, ...] = Action.__args__  # type: ignore[attr-defined]
OBSERVATION_ACTIONS = frozenset({"capture", "wait", "list_apps", "list_windows", "verify_state"})
MAX_WAIT_S = 30.0

DESCRIPTION = (
    "Operate desktop apps. Loop: capture → act → check. `capture` (app name, or pid/window_id; none = frontmost "
    "window) returns a screenshot and numbered elements and binds the target: every later input goes to that "
    "window until the next capture or focus_app (`app` on an input action only checks it). Act by `element` "
    "index from the latest capture; use `coordinate` [x, y] (pixels of the latest capture's image) only for "
    'what has no element. Input is background by default; `delivery_mode: "foreground"` raises the window '
    "for one action and needs its own approval. Each action result has `ok` (the call went through) apart from "
    "`effect`, and a `verdict.decision`: done | verify_fresh_state (capture or verify_state before repeating: "
    "a repeat can double-fire) | escalate (one rung: `recommended` px = coordinates, foreground) | deny (do not "
    "retry). An outcome_unknown error means the input may have landed: capture, never repeat blindly. "
    'app="screen" captures the whole display (pixels only, no target).'
)

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS)},
        "mode": {
            "type": "string",
            "enum": ["som", "vision", "ax"],
            "description": "capture: som = screenshot with numbered boxes + elements (default); vision = "
            "screenshot only; ax = elements only, no image.",
        },
        "app": {
            "type": "string",
            "description": 'capture/focus_app: app name or window title to target ("screen" = whole display, '
            '"desktop" = the desktop shell). Input actions: a check that the target is this app.',
        },
        "pid": {"type": "integer", "description": "capture/focus_app/list_windows: target process."},
        "window_id": {"type": "integer", "description": "capture/focus_app: exact window from list_windows."},
        "element": {"type": "integer", "description": "Element index from the latest capture."},
        "coordinate": {
            "type": "array",
            "items": {"type": "number"},
            "minItems": 2,
            "maxItems": 2,
            "description": "[x, y] in pixels of the latest capture's image.",
        },
        "button": {"type": "string", "enum": ["left", "right", "middle"]},
        "modifiers": {"type": "array", "items": {"type": "string"}, "description": 'e.g. ["shift"]'},
        "from_element": {"type": "integer"},
        "to_element": {"type": "integer"},
        "from_coordinate": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        "to_coordinate": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        "direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
        "amount": {"type": "integer", "minimum": 1, "maximum": 50, "description": "scroll steps (default 3)"},
        "text": {"type": "string", "description": "type: text to type (into `element` or the focused field)."},
        "keys": {"type": "string", "description": 'key: one key or a combination, e.g. "return", "ctrl+s".'},
        "value": {"type": "string", "description": "set_value: the new value of `element`."},
        "seconds": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_S},
        "raise_window": {"type": "boolean", "description": "focus_app: also bring the window to the front."},
        "delivery_mode": {"type": "string", "enum": ["background", "foreground"]},
        "bring_to_front": {
            "type": "boolean",
            "description": "With foreground delivery only: activate the window before the action.",
        },
        "expect": {
            "type": "array",
            "items": {"type": "object"},
            "minItems": 1,
            "maxItems": 8,
            "description": 'verify_state predicates, e.g. {"element": {"selector": {"role": "label"}, '
            '"value_equals": "5"}} or {"window": {"exists": true}}.',
        },
        "capture_after": {"type": "boolean", "description": "After a successful action, capture the target."},
    },
    "required": ["action"],
    "additionalProperties": False,
}

Point = Annotated[list[float], Field(min_length=2, max_length=2)]
_NEEDS: dict[str, tuple[str, ...]] = {"type": ("text",), "key": ("keys",), "set_value": ("value",),
                                      "scroll": ("direction",), "verify_state": ("expect",)}  # fmt: skip


class ComputerUseInput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    action: Action
    mode: Literal["som", "vision", "ax"] | None = None
    app: str | None = None
    pid: int | None = None
    window_id: int | None = None
    element: int | None = None
    coordinate: Point | None = None
    button: Literal["left", "right", "middle"] | None = None
    modifiers: list[str] | None = None
    from_element: int | None = None
    to_element: int | None = None
    from_coordinate: Point | None = None
    to_coordinate: Point | None = None
    direction: Literal["up", "down", "left", "right"] | None = None
    amount: Annotated[int, Field(ge=1, le=50)] | None = None
    text: str | None = None
    keys: str | None = None
    value: str | None = None
    seconds: Annotated[float, Field(ge=0, le=MAX_WAIT_S)] | None = None
    raise_window: bool | None = None
    delivery_mode: Literal["background", "foreground"] | None = None
    bring_to_front: bool | None = None
    expect: Annotated[list[dict[str, Any]], Field(min_length=1, max_length=8)] | None = None
    capture_after: bool | None = None

    @property
    def foreground(self) -> bool:
        return self.delivery_mode == "foreground" or (self.action == "focus_app" and self.raise_window is True)

    @model_validator(mode="after")
    def _per_action(self) -> ComputerUseInput:
        action = self.action
        for name in _NEEDS.get(action, ()):
            if getattr(self, name) is None:
                raise ValueError(f"action {action!r} needs {name!r}")
        if action in ("click", "double_click", "right_click") and (self.element is None) == (self.coordinate is None):
            raise ValueError(f"action {action!r} needs exactly one of 'element' or 'coordinate'")
        if action == "drag" and (
            (self.from_element is None) == (self.from_coordinate is None)
            or (self.to_element is None) == (self.to_coordinate is None)
        ):
            raise ValueError(
                "action 'drag' needs one of from_element/from_coordinate and one of to_element/to_coordinate"
            )
        if action == "set_value" and self.element is None:
            raise ValueError("action 'set_value' needs 'element'")
        if self.bring_to_front and self.delivery_mode != "foreground":
            raise ValueError('bring_to_front needs delivery_mode "foreground"')
        if action == "focus_app" and self.app is None and self.pid is None and self.window_id is None:
            raise ValueError("action 'focus_app' needs 'app', 'pid' or 'window_id'")
        if action not in ("capture", "focus_app", "list_windows") and (
            self.pid is not None or self.window_id is not None
        ):
            raise ValueError(
                "pid/window_id choose a target only in capture or focus_app; input goes to the captured target"
            )
        return self


def schema_text() -> str:
    """The schema as the model receives it (for byte-stability checks)."""
    return json.dumps(INPUT_SCHEMA, sort_keys=True, separators=(",", ":"))
