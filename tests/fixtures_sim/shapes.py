"""Structural comparison of JSON-RPC responses: same key sets, same value types, same codes.

`shape` reduces a JSON value to its structure: objects keep their keys, lists merge their items into one
shape (the union of item keys, so a list of mixed elements compares as a whole), scalars become their
type, except the values of "code-like" keys (codes, effects, routes, statuses...) which are kept exactly.
`differences` lists where a fake's shape departs from a recorded one; a fake's union of scalar shapes
may be narrower than the recording's (it saw fewer kinds of rows), never wider.
"""

from __future__ import annotations

import json
from typing import Any

EXACT_KEYS = frozenset(
    {"code", "effect", "route", "mode", "since_status", "tree_format", "status", "screenshot_mime_type",
     "platform", "coordinate_frame", "reason", "unknown_reason", "recommended", "tool", "kind", "overall",
     "capture_scope", "effective_scope", "protocolVersion", "mimeType", "type", "active", "suggestion", "detail"}
)  # fmt: skip
Shape = tuple[str, Any]


def _scalar(value: Any, key: str | None) -> str:
    if key in EXACT_KEYS:
        return "=" + json.dumps(value, sort_keys=True)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "str"


def shape(value: Any, key: str | None = None) -> Shape:
    if isinstance(value, dict):
        return ("dict", {name: shape(item, name) for name, item in value.items()})
    if isinstance(value, list):
        merged: Shape | None = None
        for item in value:
            item_shape = shape(item, key)
            merged = item_shape if merged is None else merge(merged, item_shape)
        return ("list", merged)
    return ("union", frozenset({_scalar(value, key)}))


def merge(left: Shape, right: Shape) -> Shape:
    if left[0] == right[0] == "dict":
        keys = left[1].keys() | right[1].keys()
        return ("dict", {k: _merge_optional(left[1].get(k), right[1].get(k)) for k in keys})
    if left[0] == right[0] == "list":
        if left[1] is None or right[1] is None:
            return ("list", left[1] or right[1])
        return ("list", merge(left[1], right[1]))
    return ("union", _as_union(left) | _as_union(right))


def _merge_optional(left: Shape | None, right: Shape | None) -> Shape:
    if left is None:
        assert right is not None
        return right
    return left if right is None else merge(left, right)


def _as_union(value: Shape) -> frozenset[str]:
    return value[1] if value[0] == "union" else frozenset({value[0]})


def differences(recorded: Shape, fake: Shape, path: str = "$") -> list[str]:
    if recorded[0] == fake[0] == "dict":
        found = []
        missing, extra = recorded[1].keys() - fake[1].keys(), fake[1].keys() - recorded[1].keys()
        if missing:
            found.append(f"{path}: fake lacks {sorted(missing)}")
        if extra:
            found.append(f"{path}: fake adds {sorted(extra)}")
        for key in sorted(recorded[1].keys() & fake[1].keys()):
            found += differences(recorded[1][key], fake[1][key], f"{path}.{key}")
        return found
    if recorded[0] == fake[0] == "list":
        if recorded[1] is None or fake[1] is None:
            return []
        return differences(recorded[1], fake[1], f"{path}[]")
    if recorded[0] == fake[0] == "union" and fake[1] <= recorded[1]:
        return []
    return [f"{path}: recorded {_describe(recorded)}, fake {_describe(fake)}"]


def _describe(value: Shape) -> str:
    return sorted(value[1]).__repr__() if value[0] == "union" else value[0]
