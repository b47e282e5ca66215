"""Front matter of the Markdown files a session reads (prompt files, skills): split it off, and read it as YAML.

``split_front_matter`` finds a leading ``---`` … ``---`` block; ``read_yaml_fields`` reads one as YAML, the way
the Agent Skills format defines it, with PyYAML's safe loading (libyaml's parser when installed: no tags, no
objects, no code), and builds only the fields asked for. A block that is not a mapping, that does not parse, or
that nests too deep is a ``FrontMatterError`` with a reason a user can act on. PyYAML is imported on first use (a
worker thread reads skills), never at start-up. This module knows neither commands nor skills.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

__all__ = ["FrontMatterError", "read_yaml_fields", "split_front_matter"]

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(?:(.*?)\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.S)


class FrontMatterError(ValueError):
    """The front matter cannot be read; the message says why."""


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(the front matter's text, or None when the file has none; the rest of the file)."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return None, text
    return match.group(1) or "", text[match.end() :]


def read_yaml_fields(raw: str, names: Collection[str]) -> dict[str, Any]:
    """The fields ``names`` of ``raw`` (front matter text, a YAML mapping), as YAML reads them; raises
    ``FrontMatterError``. The whole text must be valid YAML, but only these fields' values are built: nothing else
    can cost time or memory (aliases repeated a billion times included)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        node = yaml.compose(raw, Loader=loader)
        if node is None:
            return {}
        if not isinstance(node, yaml.MappingNode):
            kind = {"tag:yaml.org,2002:seq": "list"}.get(node.tag, "scalar")
            raise FrontMatterError(f"the front matter is a YAML {kind}, not a mapping of fields")
        constructor = yaml.constructor.SafeConstructor()
        return {
            key.value: constructor.construct_object(value, deep=True)
            for key, value in node.value
            if isinstance(key, yaml.ScalarNode) and key.value in names
        }
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        reason = getattr(exc, "problem", None) or exc
        raise FrontMatterError(f"the front matter is not valid YAML{line}: {reason}") from None
    except RecursionError:
        raise FrontMatterError("the front matter nests too deep to read") from None
