"""The two forms of the in-editor setup and how their answers are read.

1. **The service**: a preset (``presets``), the API kind (for custom), a base URL (empty: the preset's) and the
   *name* of the environment variable holding the key (empty: the preset's; ``-``: none). No field ever asks for a
   key: elicitation forms must not carry secrets, and a value that is not a variable's name is refused without
   being repeated (it may be a key typed by mistake).
2. **The model**: one of the ids the server listed (its live ``/models``), or typed when it lists none; and
   whether the model takes images.

Both forms start from the provider in use (``Current``: its service, address, key variable and model), so ``/setup``
changes it rather than starting from empty fields.

Answers come from the editor, so they are read as outside input: every value is checked for its type, length and
characters, and a problem is told in words (``Invalid``). The schemas follow ACP's elicitation schema (string
properties with ``oneOf`` titles, ``enum``, ``pattern``, booleans); nothing here sends anything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from hermes_acp.config import Settings
from hermes_acp.exec.environment import EnvPolicy

from .presets import CUSTOM, PRESETS, Preset, preset

__all__ = [
    "NO_KEY",
    "Current",
    "Invalid",
    "ModelAnswer",
    "ServiceAnswer",
    "model_form",
    "read_model",
    "read_service",
    "service_form",
    "url_problem",
]

NO_KEY = "-"
MAX_URL_CHARS = 2000
MAX_MODEL_CHARS = 200
KEY_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,63}")
Kind = Literal["openai", "anthropic"]


@dataclass(frozen=True, slots=True)
class Invalid:
    problem: str


@dataclass(frozen=True, slots=True)
class Current:
    """The provider of the model in use: what the forms start from."""

    preset_id: str
    """Its preset (the setup names a provider after its preset), or ``custom`` for any other provider."""
    kind: Kind
    base_url: str
    api_key_env: str | None
    model: str

    @classmethod
    def of(cls, settings: Settings, model_id: str | None) -> Current | None:
        """The provider of ``model_id`` (``<provider id>:<model id>``) in ``settings``; None when it has none."""
        provider_id, _, model = (model_id or "").partition(":")
        provider = settings.providers.get(provider_id)
        if provider is None or not model:
            return None
        chosen = preset(provider_id)
        return cls(chosen.id if chosen else CUSTOM, provider.kind, provider.base_url, provider.api_key_env, model)


@dataclass(frozen=True, slots=True)
class ServiceAnswer:
    preset: Preset
    kind: Kind
    base_url: str
    api_key_env: str | None


@dataclass(frozen=True, slots=True)
class ModelAnswer:
    model: str
    vision: bool


def service_form(current: Current | None = None) -> tuple[str, dict[str, Any]]:
    message = (
        "Set up Hermes ACP (1 of 2): where should model requests go? Nothing is written until a test request has "
        "worked. Never type an API key here: name the environment variable that holds it."
    )
    schema: dict[str, Any] = {
        "type": "object",
        "title": "Model service",
        "properties": {
            "preset": {
                "type": "string",
                "title": "Service",
                "oneOf": [{"const": p.id, "title": p.label} for p in PRESETS],
                "default": PRESETS[0].id,
            },
            "kind": {
                "type": "string",
                "title": "API (for Custom)",
                "description": "The services above speak their own; a custom server speaks one of these.",
                "oneOf": [
                    {"const": "openai", "title": "OpenAI-compatible (chat completions)"},
                    {"const": "anthropic", "title": "Anthropic (Messages API)"},
                ],
                "default": "openai",
            },
            "base_url": {
                "type": "string",
                "title": "Base URL",
                "description": "Empty: the service's usual address (e.g. http://127.0.0.1:11434/v1 for Ollama). "
                "Required for Custom.",
                "maxLength": MAX_URL_CHARS,
            },
            "api_key_env": {
                "type": "string",
                "title": "Key variable (its name, not the key)",
                "description": "The environment variable the agent reads the key from, e.g. OPENROUTER_API_KEY. "
                f"Empty: the service's usual one; {NO_KEY} for none.",
                "maxLength": 64,
            },
        },
        "required": ["preset"],
    }
    if current is not None:
        defaults = {
            "preset": current.preset_id,
            "kind": current.kind,
            "base_url": current.base_url,
            "api_key_env": current.api_key_env or NO_KEY,
        }
        for name, value in defaults.items():
            schema["properties"][name]["default"] = value
    return message, schema


def read_service(content: Mapping[str, object]) -> ServiceAnswer | Invalid:
    chosen = preset(_text(content, "preset"))
    if chosen is None:
        return Invalid(f"choose one of the services: {', '.join(p.id for p in PRESETS)}")
    kind_text = _text(content, "kind") or "openai"
    if kind_text not in ("openai", "anthropic"):
        return Invalid("the API is either openai or anthropic")
    kind: Kind = chosen.kind or ("anthropic" if kind_text == "anthropic" else "openai")
    base_url = _text(content, "base_url").strip() or (chosen.base_url or "")
    if not base_url:
        return Invalid("a custom server needs its base URL (e.g. http://127.0.0.1:8000/v1)")
    problem = url_problem(base_url)
    if problem is not None:
        return Invalid(problem)
    named = _text(content, "api_key_env").strip()
    api_key_env = None if named == NO_KEY else (named or chosen.key_env)
    if api_key_env is not None:
        problem = _key_name_problem(api_key_env)
        if problem is not None:
            return Invalid(problem)
    return ServiceAnswer(chosen, kind, base_url.rstrip("/"), api_key_env)


def model_form(
    service: str, listed: Sequence[str], why_not_listed: str | None, current: str | None = None
) -> tuple[str, dict[str, Any]]:
    """``current``: the model in use, chosen by default when the server lists it (or typed already when it lists
    none)."""
    vision = {"type": "boolean", "title": "The model accepts images", "default": False}
    if listed:
        message = f"Set up Hermes ACP (2 of 2): choose the model of {service} ({len(listed)} listed by the server)."
        model: dict[str, Any] = {
            "type": "string",
            "title": "Model",
            "oneOf": [{"const": model_id, "title": model_id} for model_id in listed],
            "default": current if current in listed else listed[0],
        }
    else:
        message = (
            f"Set up Hermes ACP (2 of 2): the model of {service}. The server did not list its models "
            f"({why_not_listed or 'no list'}): type its id as the service names it."
        )
        model = {"type": "string", "title": "Model id", "minLength": 1, "maxLength": MAX_MODEL_CHARS}
        if current:
            model["default"] = current
    schema = {"type": "object", "properties": {"model": model, "vision": vision}, "required": ["model"]}
    return message, schema


def read_model(content: Mapping[str, object]) -> ModelAnswer | Invalid:
    model = _text(content, "model").strip()
    if not model:
        return Invalid("a model id is needed")
    if len(model) > MAX_MODEL_CHARS or not model.isprintable():
        return Invalid(f"a model id is printable text of at most {MAX_MODEL_CHARS} characters")
    vision = content.get("vision", False)
    return ModelAnswer(model, vision if isinstance(vision, bool) else False)


def _text(content: Mapping[str, object], key: str) -> str:
    value = content.get(key)
    return value if isinstance(value, str) else ""


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a provider's base URL (None: it can)."""
    if len(url) > MAX_URL_CHARS or not url.isprintable() or any(c.isspace() for c in url):
        return "the base URL must be one printable line without spaces"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the base URL cannot be read as a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "the base URL must start with http:// or https:// and name a host"
    if parts.username or parts.password:
        return "the base URL must not carry a user name or password (name a key variable instead)"
    if parts.query or parts.fragment:
        return "the base URL must not have a query (?…) or fragment (#…)"
    return None


def _key_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be the key variable; never repeats a value that is not a variable's name."""
    if not KEY_NAME.fullmatch(name):
        return (
            "the key variable must be the NAME of an environment variable (capitals, digits and _, e.g. "
            "OPENROUTER_API_KEY). If you typed the key itself, it was neither stored nor sent anywhere."
        )
    if EnvPolicy().allows(name):
        return (
            f"{name} is one of the variables every command the agent runs inherits; name a variable of its own for"
            f" the key (e.g. MY_PROVIDER_API_KEY): commands see only that short list and `[sandbox] pass_env`"
        )
    return None
