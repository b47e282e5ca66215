"""Input schemas normalised for providers: valid references, filled-in objects, nothing accepted that was not."""

from __future__ import annotations

from typing import Any

from hermes_acp.mcp_client import normalise_schema


def _resolve(schema: dict[str, Any], ref: str) -> Any:
    node: Any = schema
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_missing_type_and_properties_are_filled_in() -> None:
    assert normalise_schema({}) == {"type": "object", "properties": {}}
    assert normalise_schema(None) == {"type": "object", "properties": {}}
    assert normalise_schema({"properties": {"a": {"type": "string"}}}) == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
    }
    assert normalise_schema({"type": "array"}) == {"type": "object", "properties": {}}


def test_definitions_move_to_defs_and_every_reference_still_resolves() -> None:
    schema: dict[str, Any] = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "definitions": {
            "Stop": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "Trip": {
                "type": "object",
                "properties": {"stops": {"type": "array", "items": {"$ref": "#/definitions/Stop"}}},
            },
        },
        "properties": {"trip": {"$ref": "#/definitions/Trip"}},
        "required": ["trip"],
    }
    out = normalise_schema(schema)
    assert "definitions" not in out and "$schema" not in out
    assert set(out["$defs"]) == {"Stop", "Trip"}
    refs = _refs(out)
    assert sorted(refs) == ["#/$defs/Stop", "#/$defs/Trip"]
    assert all(isinstance(_resolve(out, r), dict) for r in refs)
    assert schema["properties"]["trip"]["$ref"] == "#/definitions/Trip", "the input is not mutated"


def test_required_is_pruned_to_real_properties_and_property_names_are_never_keywords() -> None:
    schema = {
        "type": "object",
        "properties": {
            "required": {"type": "boolean"},
            "type": {"type": "string"},
            "items": {"type": "array"},
            "nested": {"type": "object"},
        },
        "required": ["required", "ghost"],
    }
    out = normalise_schema(schema)
    assert set(out["properties"]) == {"required", "type", "items", "nested"}
    assert out["required"] == ["required"]
    assert out["properties"]["items"] == {"type": "array", "items": {}}
    assert out["properties"]["nested"] == {"type": "object", "properties": {}}
    assert "required" not in normalise_schema({"type": "object", "properties": {}, "required": ["x"]})


def test_unions_of_constants_become_enums_and_nullable_unions_collapse() -> None:
    out = normalise_schema(
        {
            "type": "object",
            "properties": {
                "colour": {"anyOf": [{"const": "red", "type": "string"}, {"const": "blue", "type": "string"}]},
                "limit": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": None},
                "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            },
        }
    )
    props = out["properties"]
    assert props["colour"] == {"enum": ["red", "blue"], "type": "string"}
    assert props["limit"] == {"type": ["integer", "null"], "minimum": 1, "default": None}
    assert props["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}


def test_enum_and_default_values_are_left_alone() -> None:
    schema = {
        "type": "object",
        "properties": {"mode": {"type": "string", "enum": ["required", "type"], "default": {"required": 1}}},
    }
    assert normalise_schema(schema) == schema
