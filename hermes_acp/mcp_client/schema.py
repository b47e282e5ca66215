"""Make an MCP tool's ``inputSchema`` acceptable to every provider without changing what it accepts.

MCP servers publish whatever JSON Schema their framework produced; providers are pickier. ``normalise_schema``
returns a new schema (the input is never mutated) where:

- the top level is ``{"type": "object", "properties": {...}}`` (filled in when missing; a schema that is not an
  object at all becomes an empty object schema);
- draft-07 ``definitions`` move to ``$defs`` and every ``$ref`` into them is rewritten, so references stay valid;
- ``$schema`` / ``$id`` at the top are dropped (some providers reject them);
- ``required`` keeps only names that are properties;
- an ``array`` without ``items`` gets ``items: {}``; an ``object`` without ``properties`` gets ``{}``;
- ``anyOf``/``oneOf`` of ``const`` values become one ``enum``; ``anyOf [X, {type: null}]`` becomes ``X`` plus
  ``"null"`` in its type (when X has a plain ``type``);
- every string at any depth (descriptions, titles, enums, defaults, examples, property names) passes the one
  sanitizer (``core.sanitize``); what it removed is added to ``removals`` when the caller passes one.

Pure functions; nothing here knows the mcp SDK.
"""

from __future__ import annotations

from typing import Any

from hermes_acp.core.sanitize import Removals, sanitize_json

__all__ = ["normalise_schema"]

_DROP_AT_TOP = ("$schema", "$id")


def normalise_schema(schema: object, removals: Removals | None = None) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    cleaned, found = sanitize_json(schema)
    if removals is not None:
        removals.add(found)
    out: dict[str, Any] = cleaned  # a new tree: the sanitizer copies every dict and list
    for key in _DROP_AT_TOP:
        out.pop(key, None)
    if "definitions" in out:
        legacy = out.pop("definitions")
        if isinstance(legacy, dict):
            out["$defs"] = {**legacy, **(out.get("$defs") or {})}
    top_type = out.get("type")
    if top_type is None:
        out["type"] = "object"
    elif top_type != "object":
        return {"type": "object", "properties": {}}
    out = _walk(out)
    if not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    return out


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = (
    "items",
    "additionalProperties",
    "additionalItems",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)


def _walk(node: Any) -> Any:
    """Normalise one schema node, recursing only through keywords that hold schemas (not ``enum``, ``default``…)."""
    if not isinstance(node, dict):
        return node
    node = dict(node)
    for key in _SCHEMA_MAPS:
        value = node.get(key)
        if isinstance(value, dict):
            node[key] = {name: _walk(sub) for name, sub in value.items()}
    for key in _SCHEMA_LISTS:
        value = node.get(key)
        if isinstance(value, list):
            node[key] = [_walk(sub) for sub in value]
    for key in _SCHEMA_VALUES:
        value = node.get(key)
        if isinstance(value, dict):
            node[key] = _walk(value)
        elif key == "items" and isinstance(value, list):
            node[key] = [_walk(sub) for sub in value]
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/definitions/"):
        node["$ref"] = "#/$defs/" + ref.removeprefix("#/definitions/")
    node = _collapse_unions(node)
    kind = node.get("type")
    if (kind == "object" or (isinstance(kind, list) and "object" in kind)) and not isinstance(
        node.get("properties"), dict
    ):
        node["properties"] = {}
    if (kind == "array" or (isinstance(kind, list) and "array" in kind)) and "items" not in node:
        node["items"] = {}
    if "required" in node:
        required = node["required"]
        properties = node.get("properties")
        names = properties if isinstance(properties, dict) else {}
        kept = [r for r in required if isinstance(r, str) and r in names] if isinstance(required, list) else []
        if kept:
            node["required"] = kept
        else:
            node.pop("required")
    return node


def _collapse_unions(node: dict[str, Any]) -> dict[str, Any]:
    for keyword in ("anyOf", "oneOf"):
        options = node.get(keyword)
        if not isinstance(options, list) or not options or not all(isinstance(o, dict) for o in options):
            continue
        if all(set(o) <= {"const", "type", "title", "description"} and "const" in o for o in options):
            values = [o["const"] for o in options]
            types = {o.get("type") for o in options}
            rest = {k: v for k, v in node.items() if k != keyword}
            collapsed: dict[str, Any] = {**rest, "enum": values}
            if len(types) == 1 and None not in types:
                collapsed["type"] = types.pop()
            return collapsed
        non_null = [o for o in options if o.get("type") != "null"]
        if len(options) == 2 and len(non_null) == 1 and isinstance(non_null[0].get("type"), str):
            rest = {k: v for k, v in node.items() if k != keyword}
            merged = {**non_null[0], **rest}
            merged["type"] = [non_null[0]["type"], "null"]
            return merged
    return node
