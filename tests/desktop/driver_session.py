"""Talks to the real `cua-driver mcp --no-overlay` over stdio with the mcp 2.x client, recording every call.

`connect_driver(desktop, log_dir)` spawns the driver with the desktop's environment and yields a
`DriverSession` whose `call(tool, **arguments)` returns a `DriverReply` (structured payload, texts,
decoded images, is_error) and appends a `CallRecord`: the tool, its arguments, the elapsed seconds,
the structured payload and its *shape* (keys and JSON types, lists merged over their items). `write_records`
dumps those as JSON so the simulated driver can be compared against the real one.

Deliberately not known here: the desktop's processes, the apps, what a test asserts.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from fixtures.desktop import Desktop

CALL_LIMIT_S = 30.0
CONNECT_LIMIT_S = 30.0


def shape_of(value: Any) -> Any:
    """The JSON type skeleton of `value`: dicts keep their keys, lists merge their items, leaves are type names.

    A key that only some list items have ends in `?`; a leaf with several types reads `int|null`.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, dict):
        return {key: shape_of(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        merged: Any = None
        for item in value:
            merged = _merge(merged, shape_of(item))
        return [] if merged is None else [merged]
    return type(value).__name__


def _merge(left: Any, right: Any) -> Any:
    """Merges two shapes: dict keys missing on one side end in `?`, differing leaves become `a|b`."""
    if left is None:
        return right
    if isinstance(left, dict) and isinstance(right, dict):
        return _merge_dicts(left, right)
    if isinstance(left, list) and isinstance(right, list):
        items = [*left, *right]
        merged: Any = None
        for item in items:
            merged = _merge(merged, item)
        return [] if merged is None else [merged]
    if left == right:
        return left
    names = sorted({*shape_text(left).split("|"), *shape_text(right).split("|")})
    return "|".join(names)


def _merge_dicts(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    def split(shape: dict[str, Any]) -> dict[str, tuple[Any, bool]]:
        return {key.removesuffix("?"): (value, key.endswith("?")) for key, value in shape.items()}

    lefts, rights = split(left), split(right)
    merged: dict[str, Any] = {}
    for key in sorted(set(lefts) | set(rights)):
        if key in lefts and key in rights:
            value = _merge(lefts[key][0], rights[key][0])
            optional = lefts[key][1] or rights[key][1]
        else:
            value, optional = (lefts.get(key) or rights[key])[0], True
        merged[f"{key}?" if optional else key] = value
    return merged


def shape_text(shape: Any) -> str:
    return shape if isinstance(shape, str) else json.dumps(shape, sort_keys=True)


@dataclass(frozen=True)
class DriverReply:
    tool: str
    is_error: bool
    structured: dict[str, Any]
    texts: list[str]
    images: list[tuple[str, bytes]]
    """(mime type, decoded bytes) of each image part, in order."""
    content_types: list[str]


@dataclass(frozen=True)
class CallRecord:
    tool: str
    arguments: dict[str, Any]
    elapsed_s: float
    is_error: bool
    content_types: list[str]
    structured_shape: Any
    structured: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "arguments": self.arguments,
            "elapsed_s": round(self.elapsed_s, 4),
            "is_error": self.is_error,
            "content_types": self.content_types,
            "structured_shape": self.structured_shape,
            "structured": self.structured,
        }


@dataclass
class DriverSession:
    client: ClientSession
    server_info: dict[str, Any]
    records: list[CallRecord] = field(default_factory=list)

    async def call(self, tool: str, **arguments: Any) -> DriverReply:
        """One tools/call, bounded by CALL_LIMIT_S; a refusal comes back as `is_error`, never raised."""
        started = time.monotonic()
        with anyio.fail_after(CALL_LIMIT_S):
            result = await self.client.call_tool(tool, arguments)
        elapsed = time.monotonic() - started
        texts: list[str] = []
        images: list[tuple[str, bytes]] = []
        content_types: list[str] = []
        for block in result.content:
            if isinstance(block, types.TextContent):
                texts.append(block.text)
                content_types.append("text")
            elif isinstance(block, types.ImageContent):
                images.append((block.mime_type, base64.b64decode(block.data)))
                content_types.append(f"image:{block.mime_type}")
            else:
                content_types.append(block.type)
        structured = result.structured_content if isinstance(result.structured_content, dict) else {}
        self.records.append(
            CallRecord(
                tool=tool,
                arguments=arguments,
                elapsed_s=elapsed,
                is_error=result.is_error,
                content_types=content_types,
                structured_shape=shape_of(structured),
                structured=structured,
            )
        )
        return DriverReply(tool, result.is_error, structured, texts, images, content_types)

    async def ok(self, tool: str, **arguments: Any) -> DriverReply:
        """A call that must succeed; the failure message carries the driver's own text."""
        reply = await self.call(tool, **arguments)
        assert not reply.is_error, f"{tool} failed: {reply.texts} {reply.structured}"
        return reply


def write_records(records: list[CallRecord], path: Path, *, flow: str, server_info: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"flow": flow, "server_info": server_info, "calls": [record.as_json() for record in records]}
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


@asynccontextmanager
async def connect_driver(desktop: Desktop, log_dir: Path) -> AsyncIterator[DriverSession]:
    """Spawns the real driver inside `desktop` and completes the MCP handshake (bounded)."""
    command, *args = desktop.driver_command
    params = StdioServerParameters(command=command, args=args, env=dict(desktop.env))
    log_dir.mkdir(parents=True, exist_ok=True)
    with (log_dir / "cua-driver.log").open("w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as client:
                with anyio.fail_after(CONNECT_LIMIT_S):
                    initialized = await client.initialize()
                server_info = initialized.server_info.model_dump(mode="json", exclude_none=True)
                yield DriverSession(client=client, server_info=server_info)
