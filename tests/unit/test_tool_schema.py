"""Tool schemas as models see them: refs inlined, titles dropped, byte-stable."""

from __future__ import annotations

import json

from pydantic import BaseModel

from hermes_acp.tools import builtin_tools
from hermes_acp.tools.base import model_facing_schema


class Inner(BaseModel):
    title: str
    count: int = 1


class Outer(BaseModel):
    items: list[Inner]
    single: Inner | None = None


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


def test_refs_are_inlined_and_titles_dropped_but_a_property_called_title_stays() -> None:
    schema = model_facing_schema(Outer.model_json_schema())
    text = json.dumps(schema)
    assert "$ref" not in text
    assert "$defs" not in schema
    item = schema["properties"]["items"]["items"]
    assert set(item["properties"]) == {"title", "count"}
    assert "title" not in item
    assert item["properties"]["title"] == {"type": "string"}


def test_recursive_definitions_keep_their_ref() -> None:
    schema = model_facing_schema(Tree.model_json_schema())
    assert schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert "Tree" in schema["$defs"]


def test_builtin_schemas_are_plain_objects_without_refs_and_stable() -> None:
    first = json.dumps([t.input_schema for t in builtin_tools()])
    second = json.dumps([t.input_schema for t in builtin_tools()])
    assert first == second
    assert "$ref" not in first
    assert all(t.input_schema["type"] == "object" for t in builtin_tools())


class WithOptionals(BaseModel):
    limit: int | None = None
    nullable_with_default: int | None = 3
    inner: Inner | None = None


def test_an_optional_field_is_offered_without_its_null_alternative_and_null_is_still_taken() -> None:
    schema = model_facing_schema(WithOptionals.model_json_schema())
    properties = schema["properties"]
    assert properties["limit"] == {"type": "integer"}
    assert properties["nullable_with_default"]["anyOf"] == [{"type": "integer"}, {"type": "null"}], "a default kept"
    assert properties["inner"]["properties"]["title"] == {"type": "string"}, "a $ref behind the null is inlined"
    assert "required" not in schema
    assert WithOptionals.model_validate({"limit": None, "inner": None}).limit is None


def test_no_builtin_schema_offers_null() -> None:
    assert '{"type": "null"}' not in json.dumps([t.input_schema for t in builtin_tools()])
