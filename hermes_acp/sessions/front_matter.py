"""Front matter of the Markdown files a session reads (prompt files, skills): split it off, and read it as YAML.

``split_front_matter`` finds a leading ``---`` … ``---`` block; ``read_yaml_mapping`` reads one as YAML, the way
the Agent Skills format defines it, with PyYAML's safe loader (libyaml's when installed: no tags, no objects, no
code). A block that is not a mapping, that does not parse, or that nests too deep is a ``FrontMatterError`` with
a reason a user can act on. PyYAML is imported on first use (a worker thread reads skills), never at start-up. This
module knows neither commands nor skills.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["FrontMatterError", "read_yaml_mapping", "split_front_matter"]

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(?:(.*?)\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.S)


class FrontMatterError(ValueError):
    """The front matter cannot be read; the message says why."""


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(the front matter's text, or None when the file has none; the rest of the file)."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return None, text
    return match.group(1) or "", text[match.end() :]


def read_yaml_mapping(raw: str) -> dict[str, Any]:
    """``raw`` (front matter text) as a YAML mapping; raises ``FrontMatterError``."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        value = yaml.load(raw, Loader=loader)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        reason = getattr(exc, "problem", None) or exc
        raise FrontMatterError(f"the front matter is not valid YAML{line}: {reason}") from None
    except RecursionError:
        raise FrontMatterError("the front matter nests too deep to read") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FrontMatterError(f"the front matter is a YAML {type(value).__name__}, not a mapping of fields")
    return value
