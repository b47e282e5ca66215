"""TypedTool: the schema comes from the tool's own ``Input``, also for a subclass that changes it."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from hermes_acp.tools.base import TypedTool


class _First(BaseModel):
    alpha: int


class _Second(BaseModel):
    beta: str


class FirstTool(TypedTool[_First, None]):
    name = "first"
    description = "A tool."
    Input: ClassVar[type[BaseModel]] = _First


class SecondTool(FirstTool):
    name = "second"
    Input = _Second


def test_a_subclass_with_another_input_gets_its_own_schema() -> None:
    assert list(FirstTool().input_schema["properties"]) == ["alpha"]
    assert list(SecondTool().input_schema["properties"]) == ["beta"]
    assert list(FirstTool().input_schema["properties"]) == ["alpha"]
    assert SecondTool().input_schema is SecondTool().input_schema, "computed once per class"
