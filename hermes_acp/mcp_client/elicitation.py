"""Questions an MCP server asks the user (``elicitation/create``, form and URL mode), checked both ways.

``read_question`` turns the server's params into a ``FormQuestion`` or a ``UrlQuestion``, or refuses them
(``ValueError``, which the server gets as an invalid-params error): a message of at most ``MAX_MESSAGE_CHARS``, a
form schema that is the spec's restricted subset (an object of at most ``MAX_FIELDS`` top-level properties, each a
string — optionally an enum or ``oneOf`` of consts —, number, integer, boolean, or an array of enum strings; no
nesting), at most ``MAX_SCHEMA_BYTES`` of JSON; a URL that is ``http(s)`` and at most ``MAX_URL_CHARS``. Every
text (message, titles, descriptions, the URL) passes the one sanitizer. ``check_answer`` checks the user's answer
against the question before it goes back: only for a form accept, only the schema's keys, each of its type (enum
members from the list, numbers within bounds, strings within their lengths), every required one present, at most
``MAX_ELICITATION_ANSWER_BYTES`` of JSON; an answer that does not fit is sent back as ``cancel`` (the server never
gets what it did not ask for).

``Questions`` is the port the question goes through (phase 2: the session's editor, ACP ``elicitation/create`` of
the same mode, with the server's name shown); ``Answer`` what comes back. The tool call a question belongs to is
the one whose ``tools/call`` is running in the caller's context (``calling``), set around every call. Pure
functions and data; nothing here knows the mcp SDK or ACP.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from hermes_acp.core.bounds import MAX_ELICITATION_ANSWER_BYTES
from hermes_acp.core.sanitize import sanitize_json, sanitize_text

__all__ = [
    "MAX_FIELDS",
    "MAX_MESSAGE_CHARS",
    "MAX_SCHEMA_BYTES",
    "MAX_URL_CHARS",
    "Answer",
    "FormQuestion",
    "Questions",
    "UrlQuestion",
    "calling",
    "check_answer",
    "read_question",
    "server_elicitation_id",
]

MAX_MESSAGE_CHARS = 4000
MAX_FIELDS = 32
MAX_SCHEMA_BYTES = 64 * 1024
MAX_URL_CHARS = 8192
MAX_ID_CHARS = 256
_STRING_FORMATS = frozenset({"email", "uri", "date", "date-time"})
_TEXT_KEYS = ("title", "description")

calling: ContextVar[str | None] = ContextVar("hermes_mcp_calling", default=None)
"""The id of the tool call whose ``tools/call`` runs in this context (set around each call)."""

Mode = Literal["form", "url"]


@dataclass(frozen=True, slots=True)
class FormQuestion:
    server: str
    message: str
    schema: dict[str, Any]
    """The restricted schema, checked and sanitized (the same shape ACP's form mode takes)."""
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class UrlQuestion:
    server: str
    message: str
    url: str
    elicitation_id: str
    """Unique within the session (the server's own id is mapped back when it says it is complete)."""
    tool_call_id: str | None = None


Question = FormQuestion | UrlQuestion


@dataclass(frozen=True, slots=True)
class Answer:
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class Questions(Protocol):
    """Where a server's questions go (phase 2: the session's editor)."""

    def can_ask(self, mode: Mode) -> bool:
        """Whether a question of this mode can be put to someone now; False: declined at once."""
        ...

    async def ask(self, question: Question) -> Answer:
        """Put the question to the user; their answer (``cancel`` when nobody answered in time)."""
        ...

    async def completed(self, server: str, elicitation_id: str) -> None:
        """The server says the URL question ``elicitation_id`` (ours) is done (``notifications/elicitation/
        complete``); called at most once per URL question."""
        ...


def read_question(server: str, params: Mapping[str, Any], *, elicitation_id: str) -> Question:
    """The server's ``elicitation/create`` params as a question (``elicitation_id``: ours, for a URL question);
    ``ValueError`` naming what is wrong."""
    mode = params.get("mode", "form")
    message = params.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ValueError("message: a non-empty string is required")
    if len(message) > MAX_MESSAGE_CHARS:
        raise ValueError(f"message: {len(message):,} characters, over the limit of {MAX_MESSAGE_CHARS:,}")
    text, _ = sanitize_text(message)
    tool_call_id = calling.get()
    if mode == "url":
        return UrlQuestion(server, text, _url(params.get("url")), elicitation_id, tool_call_id)
    if mode != "form":
        raise ValueError(f"mode: {mode!r} is not supported (form and url are)")
    return FormQuestion(server, text, _schema(params.get("requestedSchema")), tool_call_id)


def server_elicitation_id(params: Mapping[str, Any]) -> str:
    """The server's id of a URL question (checked: a string of at most ``MAX_ID_CHARS``)."""
    value = params.get("elicitationId")
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        raise ValueError(f"elicitationId: a string of 1 to {MAX_ID_CHARS} characters is required")
    return value


def _url(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("url: a string is required")
    if len(value) > MAX_URL_CHARS:
        raise ValueError(f"url: {len(value):,} characters, over the limit of {MAX_URL_CHARS:,}")
    clean, removals = sanitize_text(value)
    if removals or any(ch.isspace() for ch in clean):
        raise ValueError("url: hidden or blank characters are not allowed in an address")
    parts = urlsplit(clean)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("url: only http:// and https:// addresses are opened")
    return clean


def _schema(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError("requestedSchema: an object is required")
    size = len(json.dumps(value, default=str))
    if size > MAX_SCHEMA_BYTES:
        raise ValueError(f"requestedSchema: {size:,} bytes, over the limit of {MAX_SCHEMA_BYTES:,}")
    if value.get("type") != "object":
        raise ValueError('requestedSchema: type must be "object"')
    properties = value.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        raise ValueError("requestedSchema: properties must be a non-empty object")
    if len(properties) > MAX_FIELDS:
        raise ValueError(f"requestedSchema: {len(properties)} properties, over the limit of {MAX_FIELDS}")
    checked = {str(name): _field(str(name), spec) for name, spec in properties.items()}
    required = value.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) and r in checked for r in required):
        raise ValueError("requestedSchema: required must list names of its properties")
    schema: dict[str, Any] = {"type": "object", "properties": checked}
    if required:
        schema["required"] = list(dict.fromkeys(required))
    for key in _TEXT_KEYS:
        if isinstance(value.get(key), str):
            schema[key] = value[key]
    clean: dict[str, Any] = sanitize_json(schema)[0]
    return clean


def _field(name: str, spec: object) -> dict[str, Any]:
    if not isinstance(spec, Mapping):
        raise ValueError(f"requestedSchema.{name}: an object is required")
    kind = spec.get("type")
    out: dict[str, Any] = {"type": kind}
    for key in _TEXT_KEYS:
        if isinstance(spec.get(key), str):
            out[key] = spec[key]
    if kind == "string":
        _copy_ints(spec, out, name, "minLength", "maxLength")
        fmt = spec.get("format")
        if fmt is not None:
            if fmt not in _STRING_FORMATS:
                raise ValueError(f"requestedSchema.{name}: format {fmt!r} is not one of {sorted(_STRING_FORMATS)}")
            out["format"] = fmt
        if "enum" in spec:
            out["enum"] = _strings(spec["enum"], f"{name}.enum")
            names = spec.get("enumNames")
            if names is not None:
                out["enumNames"] = _strings(names, f"{name}.enumNames")
        if "oneOf" in spec:
            out["oneOf"] = _consts(spec["oneOf"], f"{name}.oneOf")
        _default(spec, out, name, str)
    elif kind in ("number", "integer"):
        for key in ("minimum", "maximum"):
            bound = spec.get(key)
            if bound is not None:
                if not _is_number(bound):
                    raise ValueError(f"requestedSchema.{name}.{key}: a number is required")
                out[key] = bound
        _default(spec, out, name, int if kind == "integer" else (int, float))
    elif kind == "boolean":
        _default(spec, out, name, bool)
    elif kind == "array":
        items = spec.get("items")
        if not isinstance(items, Mapping):
            raise ValueError(f"requestedSchema.{name}.items: an object is required")
        if "enum" in items and items.get("type") == "string":
            out["items"] = {"type": "string", "enum": _strings(items["enum"], f"{name}.items.enum")}
        elif "anyOf" in items:
            out["items"] = {"anyOf": _consts(items["anyOf"], f"{name}.items.anyOf")}
        else:
            raise ValueError(f"requestedSchema.{name}.items: only a list of enum strings is allowed")
        _copy_ints(spec, out, name, "minItems", "maxItems")
        if "default" in spec:
            out["default"] = _strings(spec["default"], f"{name}.default", allow_empty=True)
    else:
        raise ValueError(
            f"requestedSchema.{name}: type {kind!r} is not allowed (string, number, integer, boolean, array)"
        )
    return out


def _copy_ints(spec: Mapping[str, Any], out: dict[str, Any], name: str, *keys: str) -> None:
    for key in keys:
        value = spec.get(key)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"requestedSchema.{name}.{key}: a non-negative integer is required")
            out[key] = value


def _default(spec: Mapping[str, Any], out: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> None:
    if "default" in spec:
        value = spec["default"]
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise ValueError(f"requestedSchema.{name}.default: not of the field's type")
        out["default"] = value


def _strings(value: object, where: str, *, allow_empty: bool = False) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or not (value or allow_empty):
        raise ValueError(f"requestedSchema.{where}: a list of strings is required")
    if len(value) > 256:
        raise ValueError(f"requestedSchema.{where}: more than 256 choices")
    return list(value)


def _consts(value: object, where: str) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value or len(value) > 256:
        raise ValueError(f"requestedSchema.{where}: a list of 1 to 256 {{const, title}} objects is required")
    out = []
    for item in value:
        if not isinstance(item, Mapping) or not isinstance(item.get("const"), str):
            raise ValueError(f"requestedSchema.{where}: each entry needs a string const")
        entry = {"const": item["const"]}
        if isinstance(item.get("title"), str):
            entry["title"] = item["title"]
        out.append(entry)
    return out


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_answer(question: Question, answer: Answer) -> dict[str, Any]:
    """The result to send the server: ``{"action"}`` (+ ``content`` for a form accept that fits the schema); an
    accept whose content does not fit becomes ``cancel``."""
    if answer.action != "accept":
        return {"action": answer.action if answer.action in ("decline", "cancel") else "cancel"}
    if isinstance(question, UrlQuestion):
        return {"action": "accept"}
    content = answer.content or {}
    if _fits(question.schema, content):
        return {"action": "accept", "content": dict(content)}
    return {"action": "cancel"}


def _fits(schema: Mapping[str, Any], content: Mapping[str, Any]) -> bool:
    try:
        size = len(json.dumps(content))
    except (TypeError, ValueError):
        return False
    properties: Mapping[str, Any] = schema["properties"]
    if size > MAX_ELICITATION_ANSWER_BYTES or not set(content) <= set(properties):
        return False
    if any(name not in content or content[name] is None for name in schema.get("required", [])):
        return False
    return all(value is None or _value_fits(properties[name], value) for name, value in content.items())


def _value_fits(spec: Mapping[str, Any], value: object) -> bool:
    kind = spec["type"]
    if kind == "string":
        allowed = _choices(spec)
        if not isinstance(value, str) or (allowed is not None and value not in allowed):
            return False
        return bool(spec.get("minLength", 0) <= len(value) <= spec.get("maxLength", len(value)))
    if kind in ("number", "integer"):
        if not _is_number(value) or (kind == "integer" and not isinstance(value, int)):
            return False
        assert isinstance(value, int | float)
        return bool(spec.get("minimum", value) <= value <= spec.get("maximum", value))
    if kind == "boolean":
        return isinstance(value, bool)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return False
    items = spec["items"]
    allowed = set(items.get("enum") or [c["const"] for c in items.get("anyOf", [])])
    if not set(value) <= allowed:
        return False
    return bool(spec.get("minItems", 0) <= len(value) <= spec.get("maxItems", len(value)))


def _choices(spec: Mapping[str, Any]) -> set[str] | None:
    if "enum" in spec:
        return set(spec["enum"])
    if "oneOf" in spec:
        return {c["const"] for c in spec["oneOf"]}
    return None
