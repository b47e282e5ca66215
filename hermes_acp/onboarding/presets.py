"""The services the setup offers, each with the address and key variable it usually has.

A preset fills the base URL (the user may give another: a server on another host or port) and names the
environment variable its key is usually in; ``custom`` has neither and asks for both. The local servers need no key
by default. The provider id written to config.toml is the preset's id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["CUSTOM", "PRESETS", "Preset", "preset"]

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


CUSTOM = "custom"
PRESETS: tuple[Preset, ...] = (
    Preset("ollama", "Ollama (on this machine)", "openai", "http://127.0.0.1:11434/v1", None),
    Preset("lmstudio", "LM Studio (on this machine)", "openai", "http://127.0.0.1:1234/v1", None),
    Preset("vllm", "vLLM", "openai", "http://127.0.0.1:8000/v1", None),
    Preset("llamacpp", "llama.cpp server", "openai", "http://127.0.0.1:8080/v1", None),
    Preset("openrouter", "OpenRouter", "openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    Preset("openai", "OpenAI", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    Preset("anthropic", "Anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    Preset("deepseek", "DeepSeek", "openai", "https://api.deepseek.com", "DEEPSEEK_API_KEY"),
    Preset(CUSTOM, "Custom: any OpenAI-compatible or Anthropic server", None, None, None),
)


def preset(preset_id: str) -> Preset | None:
    return next((p for p in PRESETS if p.id == preset_id), None)
