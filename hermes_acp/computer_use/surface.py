"""What the connected cua-driver accepts, read from its live ``tools/list`` (docs/cua-driver.md §2.2).

``DriverSurface`` holds, per driver tool, the input-schema properties. Every adaptation the backend makes
(element token vs index + snapshot id vs bare index, ``tree_format``, ``delivery_mode``, ``hotkey`` vs
``press_key`` modifiers, optional ``pid``/``window_id``/``session``) is decided here by inspecting those
schemas — never by comparing version numbers, which are kept only for reports.

It deliberately knows nothing about MCP or how a call is sent; it reads plain JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["REPLAY_SAFE_TOOLS", "DriverSurface", "DriverTool", "ElementForm"]

REPLAY_SAFE_TOOLS = frozenset(
    {
        "list_apps",
        "list_windows",
        "get_window_state",
        "get_screen_size",
        "get_desktop_state",
        "verify_state",
        "check_permissions",
    }
)
"""The only driver tools ever sent twice (after a timeout or a dropped transport): pure reads
(docs/architecture.md §4.7)."""

ElementForm = Literal["token", "index_snapshot", "index", "none"]
"""How a tool addresses an element: ``element_token`` (0.2x+), ``element_index`` + ``snapshot_id`` (0.2x only),
a bare ``element_index`` (legacy), or not at all (pixels only)."""


@dataclass(frozen=True, slots=True)
class DriverTool:
    name: str
    properties: frozenset[str]

    def accepts(self, prop: str) -> bool:
        return prop in self.properties

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> DriverTool:
        schema = raw.get("inputSchema") or raw.get("input_schema") or {}
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        return cls(
            name=str(raw.get("name", "")),
            properties=frozenset(properties) if isinstance(properties, Mapping) else frozenset(),
        )


@dataclass(frozen=True, slots=True)
class DriverSurface:
    tools: Mapping[str, DriverTool] = field(default_factory=dict)
    server_version: str | None = None
    """Reported for diagnostics only; behaviour never branches on it."""

    @classmethod
    def from_listing(cls, listing: Mapping[str, Any], *, server_version: str | None = None) -> DriverSurface:
        raw_tools = listing.get("tools")
        tools = {}
        for raw in raw_tools if isinstance(raw_tools, list) else []:
            if isinstance(raw, Mapping) and raw.get("name"):
                tool = DriverTool.from_json(raw)
                tools[tool.name] = tool
        return cls(tools=tools, server_version=server_version)

    def has(self, tool: str) -> bool:
        return tool in self.tools

    def accepts(self, tool: str, prop: str) -> bool:
        found = self.tools.get(tool)
        return found is not None and found.accepts(prop)

    def element_form(self, tool: str) -> ElementForm:
        """The element addressing ``tool`` accepts, by its input schema (never by advertised capabilities: #3613)."""
        found = self.tools.get(tool)
        if found is None:
            return "none"
        if found.accepts("element_token"):
            return "token"
        if found.accepts("element_index") and found.accepts("snapshot_id"):
            return "index_snapshot"
        if found.accepts("element_index"):
            return "index"
        return "none"

    def with_only(self, tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """``args`` without the optional keys ``tool``'s schema does not list (closed schemas reject them)."""
        found = self.tools.get(tool)
        if found is None or not found.properties:
            return dict(args)
        return {key: value for key, value in args.items() if key in found.properties}
