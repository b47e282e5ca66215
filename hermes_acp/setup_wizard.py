"""``hermes-acp --setup``: choose a model provider in a terminal and write it to config.toml, once it has worked.

This is the ``terminal`` authentication method editors offer (clients that show forms get the same setup inside
the editor: ``onboarding.flow``). It asks what the forms ask, in their order, starting from the provider in use
(``forms.Current``): the service, its address and the *name* of the key's variable (checked by ``forms``); then it
asks the server for its models (``reach.reach``) and stops when nothing answers or the key is refused; it offers the
models the server lists (or asks for an id when it lists none), sends the same test request as the form
(``reach.try_request``), and only when that worked writes config.toml the one way it is edited
(``onboarding.config_file``: tomlkit keeps the user's comments and other keys, the new file must load before it
replaces the old one, which is kept as a backup), with every listed model. It never stores an API key (only the
name of the variable holding it), and writes nothing that failed.

Exit status: 0 written; 1 the service did not work (nothing answers, the key is refused or not set here, the test
request failed) or the file could not be written; 2 an answer that cannot work, or no terminal to ask in.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from hermes_acp.config import load_settings
from hermes_acp.errors import ConfigError
from hermes_acp.home import config_file, default_home
from hermes_acp.onboarding.config_file import ProviderChoice, write_choice
from hermes_acp.onboarding.forms import NO_KEY, Current, Invalid, read_model, read_service
from hermes_acp.onboarding.presets import PRESETS
from hermes_acp.onboarding.reach import reach, sentence, try_request
from hermes_acp.providers.catalog import ModelCatalog

if TYPE_CHECKING:
    from hermes_acp.providers.probe import ModelListing

__all__ = ["run_setup"]

NOTHING_WRITTEN = "nothing was written"


def _asker(ask: Callable[[str], str]) -> Callable[..., str]:
    def question(text: str, default: str | None = None) -> str:
        suffix = f" [{default}]" if default else ""
        answer = ask(f"{text}{suffix}: ").strip()
        return answer or (default or "")

    return question


def run_setup(say: Callable[[str], None], ask: Callable[[str], str]) -> int:
    """Ask in the terminal through ``ask``, report through ``say`` (the command line passes print and input)."""
    env = dict(os.environ)
    home = default_home(env)
    path = Path(config_file(env))
    current = _current(env, home, path)
    say(f"Hermes ACP setup — writes {path} once a test request has worked")
    try:
        return _run(say, _asker(ask), env, path, home=home, current=current)
    except EOFError:
        say(f"\nNo terminal input; {NOTHING_WRITTEN}. Run `hermes-acp --setup` in a terminal.")
        return 2


def _run(
    say: Callable[[str], None],
    ask: Callable[..., str],
    env: dict[str, str],
    path: Path,
    *,
    home: Path,
    current: Current | None,
) -> int:
    ids = [p.id for p in PRESETS]
    for number, offered in enumerate(PRESETS, start=1):
        say(f"  {number}) {offered.label}")
    start = str(ids.index(current.preset_id) + 1) if current else "1"
    choice = ask("Service", start)
    if not choice.isdigit() or not 1 <= int(choice) <= len(PRESETS):
        say(f"Unknown choice {choice[:20]!r}; {NOTHING_WRITTEN}.")
        return 2
    chosen = PRESETS[int(choice) - 1]
    same = current is not None and current.preset_id == chosen.id
    answers: dict[str, object] = {"preset": chosen.id}
    if chosen.kind is None:
        answers["kind"] = ask(
            "API: openai (OpenAI-compatible) or anthropic", current.kind if current and same else "openai"
        )
    answers["base_url"] = ask("Base URL", current.base_url if current and same else chosen.base_url)
    key_default = (current.api_key_env or NO_KEY) if current and same else chosen.key_env
    answers["api_key_env"] = ask(f"Environment variable holding the API key ({NO_KEY}: none)", key_default)
    service = read_service(answers)
    if isinstance(service, Invalid):
        return _refused(say, service.problem)
    api_key = None
    if service.api_key_env is not None:
        api_key = env.get(service.api_key_env) or None
        if api_key is None:
            say(
                f"{service.api_key_env} is not set in this terminal, so the service cannot be asked; {NOTHING_WRITTEN}."
                f" Export it here (and where your editor starts the agent), then run `hermes-acp --setup` again."
            )
            return 1
    asked = partial(reach, service.kind, service.base_url, service.api_key_env, api_key, provider_id=chosen.id)
    reached = anyio.run(asked)
    if reached.failure is not None:
        return _failed(say, reached.failure)
    listed = reached.listing.ids
    model_default = current.model if current and same and (current.model in listed or not listed) else None
    picked = _pick_model(say, ask, reached.listing, service.base_url, model_default)
    vision = ask("Does the model accept images? (y/n)", "n").lower().startswith("y")
    model = read_model({"model": picked, "vision": vision})
    if isinstance(model, Invalid):
        return _refused(say, model.problem)
    provider = ProviderChoice(
        provider_id=chosen.id,
        kind=service.kind,
        base_url=service.base_url,
        api_key_env=service.api_key_env,
        model=model.model,
        vision=model.vision,
        listed=listed,
    )
    say(f"Sending a test request to {provider.model_ref}…")
    failure = anyio.run(try_request, provider, api_key)
    if failure is not None:
        return _failed(say, f"the test request to {provider.model_ref} failed: {failure}")
    try:
        written = write_choice(path, provider, env, home=home)
    except ConfigError as exc:
        say(str(exc))
        return 1
    if written.backup is not None:
        say(f"Kept the previous file as {written.backup}")
    say(f"The test request worked. Wrote {path}:\n{written.text}")
    return 0


def _pick_model(
    say: Callable[[str], None], ask: Callable[..., str], listing: ModelListing, base_url: str, default: str | None
) -> str:
    """The model: one the server listed (by number or id), or an id typed when it lists none."""
    listed = listing.ids
    if not listed:
        say(f"The server did not list its models ({listing.problem or 'no list'}): type the model's id.")
        return ask("Model id (as the provider names it)", default)
    say(f"Models at {base_url} ({len(listed)}):")
    for number, model_id in enumerate(listed, start=1):
        say(f"  {number}) {model_id}")
    picked = ask("Model (number or id)", default or listed[0])
    return listed[int(picked) - 1] if picked.isdigit() and 1 <= int(picked) <= len(listed) else picked


def _current(env: dict[str, str], home: Path, path: Path) -> Current | None:
    """The provider in use, to start from; None when there is none or the settings do not load (the setup then
    starts from the first service, and the file's problem shows when the new one is checked)."""
    try:
        settings = load_settings(env, home=home, config_file=path)
        return Current.of(settings, ModelCatalog.from_settings(settings, env).default_id)
    except ConfigError:
        return None


def _refused(say: Callable[[str], None], problem: str) -> int:
    say(f"{sentence(problem[:1].upper() + problem[1:])}; {NOTHING_WRITTEN}.")
    return 2


def _failed(say: Callable[[str], None], failure: str) -> int:
    say(f"Setup stopped: {sentence(failure)}; {NOTHING_WRITTEN}.")
    return 1
