"""Every frame the test harnesses record, checked against the official ACP JSON schema.

The schema is the npm package ``@agentclientprotocol/sdk`` 2.4.0's ``schema/v1/schema.json`` (stable) and
``schema.unstable.json`` (stable plus unstable), fetched by ``.ci/acp-schema-setup.sh`` into ``.ci-tools/``. Each
definition names its method (``x-method``) and which side handles it (``x-side``), so a frame is validated against
exactly its own definition: a request's params, a notification's params, and a response's result (matched to the
request by id, per direction) or error. Methods only the unstable schema has (``session/fork``) use it, and so do
``session/update`` notifications of a kind only the unstable schema has (``plan_update``, ``plan_removed``,
``subagent_update``, ``session_message``); the legacy ``session/set_model`` (gone from the schema, still sent by
JetBrains) and ``_``-prefixed extensions are not in either and are skipped.

ACP v2 frames (a connection whose ``initialize`` answered ``protocolVersion: 2``, or ``version=2``) are checked
against ``schema/v2``: each frame against the stable definition where it has one, and against the unstable schema
(a superset: unstable methods, update kinds and fields such as an idle state's ``usage``) always. The v2 schema is
open by design (every union has an "other" variant), so a v1 frame leaking onto a v2 connection (a ``tool_call``,
a v1 diff, ``current_mode_update``) would validate; ``acp_v2_closed`` checks every v2 frame against the closed
lists of the unions' known variants as well.

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

from .acp_v2_closed import closed_problems
from .lanes import REQUIRE_LANES_ENV

__all__ = [
    "SCHEMA_DIR",
    "Direction",
    "FrameLog",
    "hidden_from_the_sdk",
    "negotiated_version",
    "read_frame",
    "schema_dir",
    "schema_problems",
]

REPO = Path(__file__).resolve().parent.parent.parent
SCHEMA_DIR = Path(
    os.environ.get("HERMES_ACP_SCHEMA_DIR", REPO / ".ci-tools" / "acp-schema" / "package" / "schema" / "v1")
)
Direction = Literal["to_agent", "to_client"]
Version = Literal[1, 2]
_NOT_IN_SCHEMA: dict[int, frozenset[str]] = {1: frozenset({"session/set_model"}), 2: frozenset()}
"""Methods we answer that the schema no longer has (JetBrains still sends ``session/set_model``, on v1 only)."""


def schema_dir(version: int) -> Path:
    """The folder of ``version``'s schema (beside v1's: ``HERMES_ACP_SCHEMA_DIR`` names v1's)."""
    return SCHEMA_DIR if version == 1 else SCHEMA_DIR.parent / f"v{version}"


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

    def check(self, *, only: Direction | None = None, version: Version | None = None) -> None:
        """Fail with every frame the schema rejects (``only``: check one direction, e.g. where the test sends
        malformed frames on purpose), against the schema of ``version`` (None: the one the connection's
        ``initialize`` chose)."""
        version = negotiated_version(self.frames) if version is None else version
        folder = schema_dir(version)
        if not (folder / "schema.json").is_file():
            if os.environ.get(REQUIRE_LANES_ENV) == "1":
                raise AssertionError(f"the ACP schema is missing at {folder}: run `bash .ci/acp-schema-setup.sh`")
            return
        frames = [(d, m) for d, m in self.frames if only is None or d == only]
        problems = schema_problems(frames, pending=_requests(self.frames), version=version)
        assert not problems, "frames that do not validate against the ACP schema:\n" + "\n".join(problems[:20])


def negotiated_version(frames: list[tuple[Direction, dict[str, Any]]]) -> Version:
    """The version the first answered ``initialize`` among ``frames`` chose (1 when there is none)."""
    asked = {m.get("id") for d, m in frames if d == "to_agent" and m.get("method") == "initialize"}
    for direction, message in frames:
        if direction == "to_client" and "method" not in message and message.get("id") in asked:
            result = message.get("result")
            if isinstance(result, dict) and result.get("protocolVersion") == 2:
                return 2
            if isinstance(result, dict):
                return 1
    return 1


def _requests(frames: list[tuple[Direction, dict[str, Any]]]) -> dict[tuple[Direction, Any], str]:
    """(direction of the request, id) → method, for matching responses to the requests they answer."""
    return {
        (d, m["id"]): m["method"]
        for d, m in frames
        if isinstance(m.get("method"), str) and isinstance(m.get("id"), str | int)
    }


def schema_problems(
    frames: list[tuple[Direction, dict[str, Any]]],
    *,
    pending: dict[tuple[Direction, Any], str],
    version: Version = 1,
) -> list[str]:
    problems: list[str] = []
    for direction, message in frames:
        target = _target(direction, message, pending, version)
        if target is None:
            continue
        definition, instance = target
        validators = _validators(definition, message, version)
        if not validators:
            problems.append(f"{direction} {_brief(message)}: no schema definition {definition}")
            continue
        for validator in validators:
            error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
            if error is not None:
                where = "/".join(str(p) for p in error.absolute_path) or "(top)"
                problems.append(f"{direction} {_brief(message)}: {definition} at {where}: {error.message[:300]}")
                break
        else:
            if version == 2:
                method = message.get("method")
                asked = pending.get(("to_client" if direction == "to_agent" else "to_agent", message.get("id")))
                problems += [
                    f"{direction} {_brief(message)}: {problem}"
                    for problem in closed_problems(
                        method if isinstance(method, str) else asked, definition, instance, _schemas(2)[1]["$defs"]
                    )
                ]
    return problems


def _target(
    direction: Direction, message: dict[str, Any], pending: dict[tuple[Direction, Any], str], version: int
) -> tuple[str, Any] | None:
    """(definition name, the part of ``message`` it describes), or None for a frame the schema does not cover."""
    skipped = _NOT_IN_SCHEMA[version]
    method = message.get("method")
    if isinstance(method, str):
        if method.startswith("_") or method in skipped:
            return None
        kind = "Request" if "id" in message else "Notification"
        side = "protocol" if method.startswith("$/") else ("agent" if direction == "to_agent" else "client")
        name = _definitions(version).get((method, side, kind))
        return (name or f"for {method}", message.get("params"))
    if "error" in message:
        return ("Error", message["error"])
    asked = pending.get(("to_client" if direction == "to_agent" else "to_agent", message.get("id")))
    if asked is None or asked.startswith("_") or asked in skipped:
        return None
    side = "agent" if direction == "to_client" else "client"
    name = _definitions(version).get((asked, side, "Response"))
    return (name or f"for the answer to {asked}", message.get("result"))


@functools.cache
def _schemas(version: int = 1) -> tuple[dict[str, Any], dict[str, Any]]:
    folder = schema_dir(version)
    stable = json.loads((folder / "schema.json").read_text())
    unstable = json.loads((folder / "schema.unstable.json").read_text())
    return stable, unstable


@functools.cache
def _definitions(version: int = 1) -> dict[tuple[str, str, str], str]:
    """(method, side, Request | Notification | Response) → definition name; stable first, then unstable."""
    found: dict[tuple[str, str, str], str] = {}
    for root in reversed(_schemas(version)):
        for name, definition in root["$defs"].items():
            method, side = definition.get("x-method"), definition.get("x-side")
            if not isinstance(method, str) or not isinstance(side, str):
                continue
            for kind in ("Request", "Notification", "Response"):
                if name.endswith(kind):
                    found[(method, side, kind)] = name
    return found


def _validators(definition: str, message: dict[str, Any], version: int) -> list[jsonschema.protocols.Validator]:
    """v1: the stable definition, or the unstable one for what only the unstable schema has. v2: the stable one
    where the frame is stable, and the unstable one always."""
    stable, unstable = _schemas(version)
    in_stable = definition in stable["$defs"] and not _unstable_update(message, version)
    in_unstable = definition in unstable["$defs"]
    if version == 1:
        chosen = [_validator(definition, "stable", 1)] if in_stable else []
        return chosen or ([_validator(definition, "unstable", 1)] if in_unstable else [])
    roots: list[Literal["stable", "unstable"]] = ["stable"] if in_stable else []
    return [_validator(definition, root, version) for root in [*roots, *(["unstable"] if in_unstable else [])]]


def _unstable_update(message: dict[str, Any], version: int) -> bool:
    """A ``session/update`` whose kind only the unstable schema has."""
    params = message.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    kind = update.get("sessionUpdate") if isinstance(update, dict) else None
    return message.get("method") == "session/update" and kind in _unstable_update_kinds(version)


@functools.cache
def _unstable_update_kinds(version: int) -> frozenset[str]:
    def kinds(root: dict[str, Any]) -> set[str]:
        union = root["$defs"]["SessionUpdate"]
        variants = union.get("oneOf") or union.get("anyOf") or []
        return {
            v["properties"]["sessionUpdate"]["const"]
            for v in variants
            if "const" in v.get("properties", {}).get("sessionUpdate", {})
        }

    stable, unstable = _schemas(version)
    return frozenset(kinds(unstable) - kinds(stable))


@functools.cache
def _validator(
    definition: str, root_name: Literal["stable", "unstable"], version: int
) -> jsonschema.protocols.Validator:
    stable, unstable = _schemas(version)
    root = stable if root_name == "stable" else unstable
    uri = f"urn:acp:v{version}:{root_name}"
    registry: Registry[Any] = Registry().with_resource(uri, Resource.from_contents(root))
    schema = {"$ref": f"{uri}#/$defs/{definition}"}
    cls = jsonschema.validators.validator_for(root)
    return cls(schema, registry=registry)


def _brief(message: dict[str, Any]) -> str:
    text = json.dumps(message, ensure_ascii=False)
    return text if len(text) <= 200 else text[:200] + "…"
