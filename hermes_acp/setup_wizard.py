"""``hermes-acp --setup``: choose a model provider in a terminal and write it to config.toml.

This is the ``terminal`` authentication method editors offer (clients that show forms get the same setup inside
the editor: ``onboarding.flow``). It offers the same services (``onboarding.presets``), checks the answers as the
forms do (``onboarding.forms``), and writes them the one way config.toml is edited (``onboarding.config_file``:
tomlkit keeps the user's comments and other keys, the new file must load before it replaces the old one, which is
kept as a backup). It shows what it wrote, and never stores an API key (only the name of the variable holding it).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from hermes_acp.errors import ConfigError
from hermes_acp.home import default_home
from hermes_acp.onboarding.config_file import ProviderChoice, write_choice
from hermes_acp.onboarding.forms import NO_KEY, Invalid, read_model, read_service
from hermes_acp.onboarding.presets import PRESETS

__all__ = ["run_setup"]


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
        for number, offered in enumerate(PRESETS, start=1):
            say(f"  {number}) {offered.label}")
        choice = _ask("Service", "1")
        if not choice.isdigit() or not 1 <= int(choice) <= len(PRESETS):
            say(f"Unknown choice {choice[:20]!r}; nothing written.")
            return 2
        chosen = PRESETS[int(choice) - 1]
        answers: dict[str, object] = {"preset": chosen.id}
        if chosen.kind is None:
            answers["kind"] = _ask("API: openai (OpenAI-compatible) or anthropic", "openai")
        answers["base_url"] = _ask("Base URL", chosen.base_url)
        model = _ask("Model id (as the provider names it)")
        vision = _ask("Does the model accept images? (y/n)", "n").lower().startswith("y")
        answers["api_key_env"] = _ask(f"Environment variable holding the API key ({NO_KEY}: none)", chosen.key_env)
    except EOFError:
        say("\nNo terminal input; nothing written. Run `hermes-acp --setup` in a terminal.")
        return 2
    service = read_service(answers)
    picked = read_model({"model": model, "vision": vision})
    for answer in (service, picked):
        if isinstance(answer, Invalid):
            say(f"{answer.problem[:1].upper()}{answer.problem[1:]}; nothing written.")
            return 2
    assert not isinstance(service, Invalid)
    assert not isinstance(picked, Invalid)
    provider = ProviderChoice(
        provider_id=chosen.id,
        kind=service.kind,
        base_url=service.base_url,
        api_key_env=service.api_key_env,
        model=picked.model,
        vision=picked.vision,
    )
    try:
        written = write_choice(path, provider, os.environ, home=home)
    except ConfigError as exc:
        say(str(exc))
        return 1
    if written.backup is not None:
        say(f"Kept the previous file as {written.backup}")
    say(f"Wrote {path}:\n{written.text}")
    if service.api_key_env and not os.environ.get(service.api_key_env):
        say(f"Remember to set {service.api_key_env} in the environment your editor starts hermes-acp with.")
    return 0
