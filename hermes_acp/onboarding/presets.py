"""The services the setup offers, each with the address and key variable it usually has.

A preset fills the base URL (the user may give another: a server on another host or port) and names the
environment variable its key is usually in; ``custom`` has neither and asks for both. The local servers need no key
by default. The provider id written to config.toml is the preset's id. A local server's preset also says how it is
started (``start``), for the user told that nothing answers at its address (``start_hint``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

__all__ = ["CUSTOM", "PRESETS", "Preset", "preset", "start_hint"]

Kind = Literal["openai", "anthropic"]


@dataclass(frozen=True, slots=True)
class Preset:
    id: str
    label: str
    kind: Kind | None
    """None: the user chooses (custom)."""
    base_url: str | None
    key_env: str | None
    """The variable the key is usually in; None: no key by default (local servers)."""
    start: str | None = None
    """A local server's question and command for a user whom nothing answered: "is Ollama running? `ollama serve`"."""


CUSTOM = "custom"
PRESETS: tuple[Preset, ...] = (
    Preset(
        "ollama",
        "Ollama (on this machine)",
        "openai",
        "http://127.0.0.1:11434/v1",
        None,
        "is Ollama running? `ollama serve`",
    ),
    Preset(
        "lmstudio",
        "LM Studio (on this machine)",
        "openai",
        "http://127.0.0.1:1234/v1",
        None,
        "is LM Studio's server running? `lms server start`",
    ),
    Preset("vllm", "vLLM", "openai", "http://127.0.0.1:8000/v1", None, "is vLLM running? `vllm serve MODEL`"),
    Preset(
        "llamacpp",
        "llama.cpp server",
        "openai",
        "http://127.0.0.1:8080/v1",
        None,
        "is llama-server running? `llama-server -m MODEL.gguf`",
    ),
    Preset("openrouter", "OpenRouter", "openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    Preset("openai", "OpenAI", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    Preset("anthropic", "Anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    Preset("deepseek", "DeepSeek", "openai", "https://api.deepseek.com", "DEEPSEEK_API_KEY"),
    Preset(CUSTOM, "Custom: any OpenAI-compatible or Anthropic server", None, None, None),
)


def preset(preset_id: str) -> Preset | None:
    return next((p for p in PRESETS if p.id == preset_id), None)


def start_hint(base_url: str, provider_id: str | None = None) -> str | None:
    """How to start the local server that should answer at ``base_url``: the preset's of ``provider_id`` (the setup
    names a provider after its preset), else the one whose usual address has the same port on this machine."""
    chosen = preset(provider_id) if provider_id else None
    if chosen is not None and chosen.start:
        return chosen.start
    parts = urlsplit(base_url)
    try:
        port = parts.port
    except ValueError:
        return None
    if parts.hostname not in _LOOPBACK or port is None:
        return None
    for offered in PRESETS:
        if offered.start and offered.base_url and urlsplit(offered.base_url).port == port:
            return offered.start
    return None


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
