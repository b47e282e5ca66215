"""Every frame the test harnesses record, checked against the official ACP JSON schema.

The schema is the npm package ``@agentclientprotocol/sdk`` 2.4.0's ``schema/v1/schema.json`` (stable) and
``schema.unstable.json`` (stable plus unstable), fetched by ``.ci/acp-schema-setup.sh`` into ``.ci-tools/``. Each
definition names its method (``x-method``) and which side handles it (``x-side``), so a frame is validated against
exactly its own definition: a request's params, a notification's params, and a response's result (matched to the
request by id, per direction) or error. Methods only the unstable schema has (``session/fork``) use it, and so do
``session/update`` notifications of a kind only the unstable schema has (``plan_update``, ``plan_removed``,
``subagent_update``, ``session_message``); the legacy ``session/set_model`` (gone from the schema, still sent by
JetBrains) and ``_``-prefixed extensions are not in either and are skipped.

``FrameLog`` is what the harnesses fill (``observe`` fits the acp SDK connection's ``observers``); at teardown they
call ``check``. Without the schema the check does nothing, except under ``HERMES_REQUIRE_LANES=1`` (CI), where a
missing schema fails the test.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import jsonschema
from referencing import Registry, Resource

from .lanes import REQUIRE_LANES_ENV

__all__ = ["SCHEMA_DIR", "FrameLog", "hidden_from_the_sdk", "read_frame", "schema_problems"]

REPO = Path(__file__).resolve().parent.parent.parent
SCHEMA_DIR = Path(
    os.environ.get("HERMES_ACP_SCHEMA_DIR", REPO / ".ci-tools" / "acp-schema" / "package" / "schema" / "v1")
)
Direction = Literal["to_agent", "to_client"]
_NOT_IN_SCHEMA = frozenset({"session/set_model"})
"""Methods we answer that the schema no longer has (JetBrains still sends ``session/set_model``)."""


SDK_UNKNOWN_UPDATES = frozenset({"subagent_update", "session_message", "session_message_chunk"})
"""``session/update`` kinds the acp SDK's Python client (1.0) does not know: it would log a validation error for
each. The harnesses log such frames (and check them) but do not hand them to it."""


def read_frame(line: bytes) -> Any:
    """One stdout line as JSON (None when it is not: the stdout check says so)."""
    try:
        return json.loads(line)
    except ValueError:
        return None


def hidden_from_the_sdk(message: Any) -> bool:
    """A ``session/update`` of a kind the SDK's client cannot read (a child session's, unstable)."""
    if not isinstance(message, dict) or message.get("method") != "session/update":
        return False
    params = message.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    return isinstance(update, dict) and update.get("sessionUpdate") in SDK_UNKNOWN_UPDATES


@dataclass
class FrameLog:
    """Frames in both directions, in order: ``to_agent`` (what the client sent) and ``to_client``."""

    frames: list[tuple[Direction, dict[str, Any]]] = field(default_factory=list)
    _arrived: anyio.Event | None = None

    def add(self, direction: Direction, message: Any) -> None:
        if isinstance(message, dict):
            self.frames.append((direction, message))
            if self._arrived is not None:
                self._arrived.set()
                self._arrived = None

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> None:
        """Wait (bounded) until ``predicate`` holds, re-checking after each frame."""
        with anyio.fail_after(timeout):
            while not predicate():
                if self._arrived is None:
                    self._arrived = anyio.Event()
                await self._arrived.wait()

    def observe(self, event: Any) -> None:
        """An acp SDK connection observer on the client's side of the connection."""
        direction: Direction = "to_client" if getattr(event.direction, "value", "") == "incoming" else "to_agent"
        self.add(direction, event.message)

    def observe_sent(self, event: Any) -> None:
        """The same for what the client sends only (where what it receives is recorded as read, in order)."""
        if getattr(event.direction, "value", "") != "incoming":
            self.add("to_agent", event.message)

    def check(self, *, only: Direction | None = None) -> None:
        """Fail with every frame the schema rejects (``only``: check one direction, e.g. where the test sends
        malformed frames on purpose)."""
        if not (SCHEMA_DIR / "schema.json").is_file():
            if os.environ.get(REQUIRE_LANES_ENV) == "1":
                raise AssertionError(f"the ACP schema is missing at {SCHEMA_DIR}: run `bash .ci/acp-schema-setup.sh`")
            return
        frames = [(d, m) for d, m in self.frames if only is None or d == only]
        problems = schema_problems(frames, pending=_requests(self.frames))
        assert not problems, "frames that do not validate against the ACP schema:\n" + "\n".join(problems[:20])


def _requests(frames: list[tuple[Direction, dict[str, Any]]]) -> dict[tuple[Direction, Any], str]:
    """(direction of the request, id) → method, for matching responses to the requests they answer."""
    return {
        (d, m["id"]): m["method"]
        for d, m in frames
        if isinstance(m.get("method"), str) and isinstance(m.get("id"), str | int)
    }


def schema_problems(
    frames: list[tuple[Direction, dict[str, Any]]], *, pending: dict[tuple[Direction, Any], str]
) -> list[str]:
    problems: list[str] = []
    for direction, message in frames:
        target = _target(direction, message, pending)
        if target is None:
            continue
        definition, instance = target
        validator = _validator(definition, unstable=_unstable_update(message))
        if validator is None:
            problems.append(f"{direction} {_brief(message)}: no schema definition {definition}")
            continue
        error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(top)"
            problems.append(f"{direction} {_brief(message)}: {definition} at {where}: {error.message[:300]}")
    return problems


def _target(
    direction: Direction, message: dict[str, Any], pending: dict[tuple[Direction, Any], str]
) -> tuple[str, Any] | None:
    """(definition name, the part of ``message`` it describes), or None for a frame the schema does not cover."""
    method = message.get("method")
    if isinstance(method, str):
        if method.startswith("_") or method in _NOT_IN_SCHEMA:
            return None
        kind = "Request" if "id" in message else "Notification"
        side = "protocol" if method.startswith("$/") else ("agent" if direction == "to_agent" else "client")
        name = _definitions().get((method, side, kind))
        return (name or f"for {method}", message.get("params"))
    if "error" in message:
        return ("Error", message["error"])
    asked = pending.get(("to_client" if direction == "to_agent" else "to_agent", message.get("id")))
    if asked is None or asked.startswith("_") or asked in _NOT_IN_SCHEMA:
        return None
    side = "agent" if direction == "to_client" else "client"
    name = _definitions().get((asked, side, "Response"))
    return (name or f"for the answer to {asked}", message.get("result"))


@functools.cache
def _schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    stable = json.loads((SCHEMA_DIR / "schema.json").read_text())
    unstable = json.loads((SCHEMA_DIR / "schema.unstable.json").read_text())
    return stable, unstable


@functools.cache
def _definitions() -> dict[tuple[str, str, str], str]:
    """(method, side, Request | Notification | Response) → definition name; stable first, then unstable."""
    found: dict[tuple[str, str, str], str] = {}
    for root in reversed(_schemas()):
        for name, definition in root["$defs"].items():
            method, side = definition.get("x-method"), definition.get("x-side")
            if not isinstance(method, str) or not isinstance(side, str):
                continue
            for kind in ("Request", "Notification", "Response"):
                if name.endswith(kind):
                    found[(method, side, kind)] = name
    return found


def _unstable_update(message: dict[str, Any]) -> bool:
    """A ``session/update`` whose kind only the unstable schema has."""
    params = message.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    kind = update.get("sessionUpdate") if isinstance(update, dict) else None
    return message.get("method") == "session/update" and kind in _unstable_update_kinds()


@functools.cache
def _unstable_update_kinds() -> frozenset[str]:
    def kinds(root: dict[str, Any]) -> set[str]:
        return {variant["properties"]["sessionUpdate"]["const"] for variant in root["$defs"]["SessionUpdate"]["oneOf"]}

    stable, unstable = _schemas()
    return frozenset(kinds(unstable) - kinds(stable))


@functools.cache
def _validator(definition: str, *, unstable: bool = False) -> jsonschema.protocols.Validator | None:
    stable, unstable_root = _schemas()
    if unstable:
        root = unstable_root if definition in unstable_root["$defs"] else None
    else:
        root = (
            stable if definition in stable["$defs"] else unstable_root if definition in unstable_root["$defs"] else None
        )
    if root is None:
        return None
    uri = "urn:acp:stable" if root is stable else "urn:acp:unstable"
    registry: Registry[Any] = Registry().with_resource(uri, Resource.from_contents(root))
    schema = {"$ref": f"{uri}#/$defs/{definition}"}
    cls = jsonschema.validators.validator_for(root)
    return cls(schema, registry=registry)


def _brief(message: dict[str, Any]) -> str:
    text = json.dumps(message, ensure_ascii=False)
    return text if len(text) <= 200 else text[:200] + "…"
