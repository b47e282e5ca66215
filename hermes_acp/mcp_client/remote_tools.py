"""MCP tools as model-facing ``Tool``s: each server tool, and list/read helpers for resources and prompts.

Everything a server says passes the one sanitizer (``core.sanitize``) here, before the model or the editor sees it,
and each removal is logged with the server and what it came in (``tools/list``, a result, an error): a tool's title
and description (then capped) and its input schema at any depth (``schema``); every ``tools/call``,
``resources/list|read`` and ``prompts/list|get`` answer, ``structuredContent`` and ``_meta`` included; and the
messages of errors the server caused. The remote tool name is kept as the server spelled it (calls need it); the
model sees the name ``naming`` made.

``McpTool`` wraps one entry of a server's ``tools/list``: its input schema normalised for providers
(``schema``), ``readOnlyHint: true`` makes it read-only
(no approval inside the workspace, retried once after a reconnect, offered in ``read_only`` mode, run beside the
other reads of the same response); any other tool
asks for approval under the scope ``mcp:<server>:<tool>`` and is never retried when its outcome is unknown.
Presentation: ``<server>: <title>``, kind ``read`` for read-only tools and ``other`` for the rest. While a call runs,
the server's progress notifications are shown on its card as one line (``⏳ step 2 (2/3)``: its message, sanitized
and capped, with the count), at most one per ``progress_interval_s``; the server's questions during the call are
tied to it (``tool_call_id``).

When a server advertises resources or prompts it also gets ``list_resources`` / ``read_resource`` or
``list_prompts`` / ``get_prompt`` (all read-only). The names are given by ``naming``; this module knows neither the
mcp SDK nor how the connection is kept.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Mapping
from typing import Any, Final, Literal, TypeVar

import anyio
import structlog

from hermes_acp.core.content import TextBlock
from hermes_acp.core.sanitize import Removals, sanitize_json, sanitize_text
from hermes_acp.errors import ToolError, ToolInputError
from hermes_acp.tools.approval import Approval
from hermes_acp.tools.base import Presentation, ToolOutcome
from hermes_acp.tools.context import ApprovalRequest, ToolContext

from .connection import ServerConnection
from .results import outcome_from_result, outcome_from_text
from .schema import normalise_schema
from .wire_port import ProgressFn

__all__ = ["MAX_DESCRIPTION_CHARS", "MAX_PROGRESS_CHARS", "UTILITY_TOOLS", "McpTool", "Utility", "UtilityTool"]

MAX_DESCRIPTION_CHARS = 2000
MAX_PROGRESS_CHARS = 300
PROGRESS_SHOW_S = 5.0
"""Bound on showing one progress update (the card's channel is the turn's)."""
Utility = Literal["list_resources", "read_resource", "list_prompts", "get_prompt"]
UTILITY_TOOLS: dict[str, tuple[Utility, ...]] = {
    "resources": ("list_resources", "read_resource"),
    "prompts": ("list_prompts", "get_prompt"),
}


_log = structlog.get_logger("hermes_acp.mcp")
T = TypeVar("T")


def _logged(removals: Removals, server: str, source: str) -> None:
    if removals:
        _log.warning(
            "hidden text removed from an MCP server's output", server=server, source=source, **removals.as_log()
        )


def _cleaned(value: T, server: str, source: str) -> T:
    """``value`` (JSON-like) through the sanitizer, the removals logged."""
    clean, removals = sanitize_json(value)
    _logged(removals, server, source)
    return clean  # type: ignore[no-any-return]


async def _answer(call: Awaitable[T], server: str, source: str) -> T:
    """A request's answer, cleaned; an error's message (which may quote the server) cleaned too."""
    try:
        return _cleaned(await call, server, source)
    except ToolError as exc:
        message, removals = sanitize_text(str(exc))
        if removals:
            _logged(removals, server, f"{source} error")
            exc.args = (message,)
        raise


def _description(text: str) -> str:
    clean = text.strip()
    return clean if len(clean) <= MAX_DESCRIPTION_CHARS else clean[: MAX_DESCRIPTION_CHARS - 1] + "…"


def _check_required(name: str, schema: Mapping[str, Any], arguments: dict[str, Any]) -> None:
    required = schema.get("required")
    missing = [key for key in required if key not in arguments] if isinstance(required, list) else []
    if missing:
        raise ToolInputError(f"{name}: missing required argument(s): {', '.join(missing)}")


class McpTool:
    def __init__(self, name: str, connection: ServerConnection, remote: Mapping[str, Any]):
        self._connection = connection
        self.name: Final = name
        self.server: Final = connection.name
        self.remote_name: Final = str(remote["name"])
        """The name as the server spelled it (sent back in calls; never shown)."""
        removals = Removals()
        shown, found = sanitize_json({k: v for k, v in remote.items() if k != "inputSchema"})
        removals.add(found)
        annotations = shown.get("annotations") if isinstance(shown.get("annotations"), Mapping) else {}
        assert isinstance(annotations, Mapping)
        self.read_only: Final = annotations.get("readOnlyHint") is True
        title = annotations.get("title") or shown.get("title") or shown.get("name") or name
        self.title: Final = str(title)
        self.description: Final = _description(str(shown.get("description") or self.title))
        self.input_schema: Final = normalise_schema(remote.get("inputSchema"), removals)
        _logged(removals, connection.name, f"tools/list ({self.title})")

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        _check_required(self.name, self.input_schema, arguments)
        return arguments

    def present(self, parsed: dict[str, Any], ctx: ToolContext) -> Presentation:
        return Presentation(title=f"{self.server}: {self.title}", kind="read" if self.read_only else "other")

    def reads_only(self, parsed: dict[str, Any]) -> bool:
        return bool(self.read_only)

    async def approval(self, parsed: dict[str, Any], ctx: ToolContext) -> Approval[Any]:
        if self.read_only:
            return Approval(ctx.tool_call_id)
        request = ApprovalRequest(
            scope=f"mcp:{self.server}:{self.remote_name}",
            title=f"{self.server}: {self.title}",
            mutating=True,
            raw_input=parsed,
        )
        return Approval(ctx.tool_call_id, request=request)

    async def run(self, parsed: dict[str, Any], approval: Approval[Any], ctx: ToolContext) -> ToolOutcome[Any]:
        call = self._connection.call_tool(
            self.remote_name,
            parsed,
            read_only=self.read_only,
            tool_call_id=ctx.tool_call_id,
            on_progress=_progress_card(ctx, self.server, self._connection.timeouts.progress_interval_s),
        )
        result = await _answer(call, self.server, f"tools/call {self.title}")
        return await outcome_from_result(result, cache_dir=ctx.env.cache_dir, gate=ctx.env.images)


def _progress_card(ctx: ToolContext, server: str, interval_s: float) -> ProgressFn:
    """The server's progress notifications of one call as its card's live content, at most one per ``interval_s``
    (the later ones in between are dropped: the next one shown, or the result, replaces them anyway)."""
    last = -math.inf

    async def show(progress: float, total: float | None, message: str | None) -> None:
        nonlocal last
        now = anyio.current_time()
        if now - last < interval_s:
            return
        last = now
        count = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        text = ""
        if message:
            text, removals = sanitize_text(message.strip())
            _logged(removals, server, "notifications/progress")
            text = text if len(text) <= MAX_PROGRESS_CHARS else text[: MAX_PROGRESS_CHARS - 1] + "…"
        line = f"⏳ {text} ({count})" if text else f"⏳ {count}"
        with anyio.move_on_after(PROGRESS_SHOW_S):
            await ctx.progress([TextBlock(text=line)])

    return show


_UTILITY_SPECS: dict[Utility, tuple[str, dict[str, Any]]] = {
    "list_resources": (
        "List the resources of MCP server {server} (uri, name, description).",
        {"type": "object", "properties": {}},
    ),
    "read_resource": (
        "Read one resource of MCP server {server} by its uri (from list_resources).",
        {
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "The resource's uri."}},
            "required": ["uri"],
        },
    ),
    "list_prompts": (
        "List the prompt templates of MCP server {server} (name, arguments, description).",
        {"type": "object", "properties": {}},
    ),
    "get_prompt": (
        "Get one prompt template of MCP server {server}, filled in with its arguments.",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The prompt's name (from list_prompts)."},
                "arguments": {
                    "type": "object",
                    "description": "The prompt's arguments, as strings.",
                    "additionalProperties": {"type": "string"},
                    "properties": {},
                },
            },
            "required": ["name"],
        },
    ),
}


class UtilityTool:
    """A read-only helper over a server's resources or prompts."""

    read_only = True

    def __init__(self, name: str, connection: ServerConnection, utility: Utility):
        self._connection = connection
        self.name: Final = name
        self.utility: Final = utility
        text, schema = _UTILITY_SPECS[utility]
        self.description: Final = text.format(server=_description(connection.name))
        self.input_schema: Final = schema

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        _check_required(self.name, self.input_schema, arguments)
        for key in ("uri", "name"):
            if key in arguments and not isinstance(arguments[key], str):
                raise ToolInputError(f"{self.name}: {key} must be a string")
        extra = arguments.get("arguments")
        if extra is not None and (not isinstance(extra, dict) or not all(isinstance(v, str) for v in extra.values())):
            raise ToolInputError(f"{self.name}: arguments must be an object of strings")
        return arguments

    def present(self, parsed: dict[str, Any], ctx: ToolContext) -> Presentation:
        target = parsed.get("uri") or parsed.get("name")
        label = self.utility.replace("_", " ")
        return Presentation(
            title=f"{self._connection.name}: {label}" + (f" {target}" if target else ""),
            kind="read",
        )

    async def approval(self, parsed: dict[str, Any], ctx: ToolContext) -> Approval[Any]:
        return Approval(ctx.tool_call_id)

    def reads_only(self, parsed: dict[str, Any]) -> bool:
        return True

    async def run(self, parsed: dict[str, Any], approval: Approval[Any], ctx: ToolContext) -> ToolOutcome[Any]:
        conn = self._connection
        if self.utility == "list_resources":
            resources = await _answer(conn.list_resources(), conn.name, "resources/list")
            lines = [
                f"- {r.get('uri')} — {r.get('name')}"
                + (f": {r['description']}" if r.get("description") else "")
                + (f" ({r['mimeType']})" if r.get("mimeType") else "")
                for r in resources
            ]
            return outcome_from_text(_listing(f"Resources of {conn.name}:", lines))
        if self.utility == "list_prompts":
            prompts = await _answer(conn.list_prompts(), conn.name, "prompts/list")
            lines = []
            for p in prompts:
                args = ", ".join(
                    str(a.get("name")) + ("" if a.get("required") else "?") for a in p.get("arguments") or []
                )
                lines.append(f"- {p.get('name')}({args})" + (f": {p['description']}" if p.get("description") else ""))
            return outcome_from_text(_listing(f"Prompts of {conn.name}:", lines))
        if self.utility == "read_resource":
            uri = str(parsed["uri"])
            read = conn.read(lambda wire: wire.read_resource(uri), "resources/read")
            result = await _answer(read, conn.name, "resources/read")
            return await outcome_from_result(
                _resource_content(result), cache_dir=ctx.env.cache_dir, gate=ctx.env.images
            )
        name = str(parsed["name"])
        arguments = {str(k): str(v) for k, v in (parsed.get("arguments") or {}).items()}
        got = conn.read(lambda wire: wire.get_prompt(name, arguments), "prompts/get")
        result = await _answer(got, conn.name, "prompts/get")
        return await outcome_from_result(_prompt_content(result), cache_dir=ctx.env.cache_dir, gate=ctx.env.images)


def _listing(title: str, lines: list[str]) -> str:
    return title + ("\n" + "\n".join(lines) if lines else "\n(none)")


def _resource_content(result: Mapping[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for item in result.get("contents") or []:
        media = str(item.get("mimeType") or "")
        if "blob" in item and media.startswith("image/"):
            content.append({"type": "image", "data": item["blob"], "mimeType": media})
        else:
            content.append({"type": "resource", "resource": item})
    return {"content": content, "_meta": result.get("_meta")}


def _prompt_content(result: Mapping[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if result.get("description"):
        content.append({"type": "text", "text": f"Prompt: {result['description']}"})
    for message in result.get("messages") or []:
        block = message.get("content")
        role = message.get("role", "user")
        if isinstance(block, Mapping) and block.get("type") == "text":
            content.append({"type": "text", "text": f"[{role}] {block.get('text', '')}"})
        elif isinstance(block, Mapping):
            content.append({"type": "text", "text": f"[{role}]"})
            content.append(dict(block))
    return {"content": content, "_meta": result.get("_meta")}
