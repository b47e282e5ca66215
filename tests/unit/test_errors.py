"""The error tree drawn in ``hermes_acp.errors`` is the code's own, and every registered code is used."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import hermes_acp
from hermes_acp import errors
from hermes_acp.computer_use.results import ComputerUseRefusal, DriverRefusal
from hermes_acp.providers.scripted import ScriptExhaustedError

PACKAGE = Path(hermes_acp.__file__).parent
ELSEWHERE = {cls.__name__: cls for cls in (ComputerUseRefusal, DriverRefusal, ScriptExhaustedError)}


def _drawn() -> dict[str, str | None]:
    """class name → the parent the drawing puts it under."""
    doc = errors.__doc__ or ""
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        match = re.match(r"^(\s*)(?:[│ ]*)(?:├── |└── )?([A-Z][A-Za-z]+Error|[A-Z][A-Za-z]+Refusal)\b", line)
        if not match:
            continue
        depth = line.find(match.group(2))
        name = match.group(2)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[name] = stack[-1][1] if stack else None
        stack.append((depth, name))
    return parents


def test_the_drawn_tree_is_the_class_tree() -> None:
    drawn = _drawn()
    defined = {
        name: cls
        for name, cls in vars(errors).items()
        if isinstance(cls, type) and issubclass(cls, errors.HermesError) and cls.__module__ == errors.__name__
    }
    assert set(defined) | set(ELSEWHERE) == set(drawn), "every error class is drawn, and nothing else"
    for name, cls in {**defined, **ELSEWHERE}.items():
        parent = cls.__mro__[1].__name__
        assert drawn[name] == (None if cls is errors.HermesError else parent), name


def test_every_registered_code_is_used_and_every_class_code_is_registered() -> None:
    source = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py") if p.name != "errors.py")
    codes = set(get_args(errors.ErrorCode))
    unused = sorted(code for code in codes if f'"{code}"' not in source and f"'{code}'" not in source)
    class_codes = {
        cls.code
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, errors.ToolError) and isinstance(cls.__dict__.get("code"), str)
    }
    assert unused == [] or set(unused) <= class_codes, f"codes nobody produces: {unused}"
    assert class_codes <= codes
