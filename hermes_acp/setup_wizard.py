"""``hermes-acp --setup``: choose a model provider in a terminal and write it to config.toml.

This is the ``terminal`` authentication method editors offer. It asks a few questions, writes the answers (TOML
escaped) to a temporary file beside config.toml, and replaces config.toml with it only once it loads, keeping a
backup of the old one. It shows what it wrote, and never stores an API key (only the name of the variable holding it).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from hermes_acp.config import load_settings
from hermes_acp.errors import ConfigError
from hermes_acp.home import default_home

__all__ = ["render_config", "run_setup"]

_PRESETS = {
    "1": (
        "local",
        "openai",
        "http://127.0.0.1:11434/v1",
        None,
        "Ollama / LM Studio / vLLM (OpenAI-compatible)",
    ),
    "2": ("openai", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "OpenAI"),
    "3": ("anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "Anthropic"),
    "4": ("openrouter", "openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "OpenRouter"),
}


def render_config(provider_id: str, kind: str, base_url: str, key_env: str | None, *, model: str, vision: bool) -> str:
    lines = [
        "[model]",
        f"default = {_toml_string(f'{provider_id}:{model}')}",
        "",
        f"[providers.{provider_id}]",
        f"kind = {_toml_string(kind)}",
        f"base_url = {_toml_string(base_url)}",
    ]
    if key_env:
        lines.append(f"api_key_env = {_toml_string(key_env)}")
    lines.append(f"models = [{{ id = {_toml_string(model)}, vision = {'true' if vision else 'false'} }}]")
    return "\n".join(lines) + "\n"


def _toml_string(value: str) -> str:
    """A TOML basic string: quote and backslash escaped, control characters (and DEL) as ``\\uXXXX``."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(f"\\u{ord(c):04X}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in escaped) + '"'


def _asker(ask: Callable[[str], str]) -> Callable[..., str]:
    def question(text: str, default: str | None = None) -> str:
        suffix = f" [{default}]" if default else ""
        answer = ask(f"{text}{suffix}: ").strip()
        return answer or (default or "")

    return question


def run_setup(say: Callable[[str], None], ask: Callable[[str], str]) -> int:
    """Ask in the terminal through ``ask``, report through ``say`` (the command line passes print and input)."""
    _ask = _asker(ask)
    home = default_home(os.environ)
    path = home / "config.toml"
    say(f"Hermes ACP setup — writes {path}")
    try:
        for key, (_, _, _, _, label) in _PRESETS.items():
            say(f"  {key}) {label}")
        choice = _ask("Provider", "1")
        if choice not in _PRESETS:
            say(f"Unknown choice {choice!r}; nothing written.")
            return 2
        provider_id, kind, base_url, key_env, _ = _PRESETS[choice]
        base_url = _ask("Base URL", base_url)
        model = _ask("Model id (as the provider names it)")
        if not model:
            say("A model id is needed; nothing written.")
            return 2
        vision = _ask("Does the model accept images? (y/n)", "n").lower().startswith("y")
        if key_env:
            key_env = _ask("Environment variable holding the API key", key_env)
    except EOFError:
        say("\nNo terminal input; nothing written. Run `hermes-acp --setup` in a terminal.")
        return 2
    text = render_config(provider_id, kind, base_url, key_env, model=model, vision=vision)
    home.mkdir(parents=True, exist_ok=True)
    fd, draft = tempfile.mkstemp(dir=home, prefix="config.", suffix=".toml.new")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        load_settings(os.environ, home=home, config_file=Path(draft))
    except (ConfigError, UnicodeEncodeError) as exc:
        os.unlink(draft)
        say(f"The new configuration does not load, so {path} was left as it was: {exc}")
        return 1
    if path.exists():
        backup = path.with_suffix(".toml.bak")
        shutil.copy2(path, backup)
        say(f"Kept the previous file as {backup}")
    os.replace(draft, path)
    say(f"Wrote {path}:\n{text}")
    if key_env and not os.environ.get(key_env):
        say(f"Remember to set {key_env} in the environment your editor starts hermes-acp with.")
    return 0
