"""The one way the setup edits config.toml: tomlkit, so the user's comments, layout and other keys stay.

``write_choice`` puts a ``ProviderChoice`` in: ``[providers.<id>]`` gets the kind, base URL and key variable (never
a key), and its ``models`` the chosen model and every other model the server listed (so the model picker can switch
among them without another setup; the provider's models and keys already there stay), and ``[model] default``
names the chosen model. The new text is written to a temporary file beside config.toml, ``fsync``-ed, and must load,
settings and catalog both, before it is renamed over config.toml and the folder is ``fsync``-ed; the previous file
is kept as ``config.toml.bak``. Both are ``0600`` whatever the umask, reached from the folder without following a
link (``hermes_acp.anchored``: a config.toml that is a link is refused, not written through). Anything that goes
wrong is a ``ConfigError`` saying that config.toml was left as it was. One write at a time per process.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hermes_acp import anchored
from hermes_acp.config import Settings, load_settings
from hermes_acp.errors import ConfigError
from hermes_acp.providers.catalog import ModelCatalog

__all__ = ["ProviderChoice", "Written", "write_choice"]

_WRITING = threading.Lock()


@dataclass(frozen=True, slots=True)
class ProviderChoice:
    provider_id: str
    kind: Literal["openai", "anthropic"]
    base_url: str
    api_key_env: str | None
    model: str
    vision: bool = False
    listed: tuple[str, ...] = ()
    """Every model the server listed: written too, after the chosen one."""

    @property
    def model_ref(self) -> str:
        """``<provider id>:<model id>``, as the catalog and ``[model] default`` name it."""
        return f"{self.provider_id}:{self.model}"


@dataclass(frozen=True, slots=True)
class Written:
    path: Path
    backup: Path | None
    settings: Settings
    """The settings as they load from the new file (with the environment's providers)."""
    text: str


def write_choice(path: Path, choice: ProviderChoice, env: Mapping[str, str], *, home: Path) -> Written:
    """Write ``choice`` into the config file at ``path`` (see the module docstring)."""
    import tomlkit  # only when something is written

    with _WRITING:
        try:
            original = path.read_text(encoding="utf-8") if path.is_file() else ""
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path} cannot be read, so it was left as it was: {exc}") from exc
        try:
            document = tomlkit.parse(original)
        except tomlkit.exceptions.TOMLKitError as exc:
            raise ConfigError(f"{path} is not valid TOML ({exc}); it was left as it was: fix it first") from exc
        _put(document, choice)
        text = tomlkit.dumps(document)
        folder = path.parent
        draft = folder / f"config.{secrets.token_hex(6)}.toml.new"
        try:
            anchored.write_file(folder, draft, text.encode("utf-8"), folders=anchored.PRIVATE_FOLDER)
            settings = load_settings(env, home=home, config_file=draft)
            ModelCatalog.from_settings(settings, env)
        except (ConfigError, OSError, UnicodeEncodeError) as exc:
            with contextlib.suppress(OSError):
                anchored.remove_file(folder, draft)
            raise ConfigError(f"the new configuration does not load, so {path} was left as it was: {exc}") from exc
        try:
            backup = _back_up(path)
            anchored.rename(folder, draft, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                anchored.remove_file(folder, draft)
            raise ConfigError(f"{path} could not be replaced, so it was left as it was: {exc}") from exc
    return Written(path, backup, settings.model_copy(update={"config_file": path}), text)


def _back_up(path: Path) -> Path | None:
    """The file as it was, copied whole to ``<name>.bak`` (``0600``); None when there was none."""
    opened = anchored.open_read(path.parent, path)
    if opened is None:
        return None
    with opened:
        data = opened.read()
    backup = path.with_name(path.name + ".bak")
    anchored.write_file(path.parent, backup, data, keep_mode=False)
    return backup


def _put(document: Any, choice: ProviderChoice) -> None:
    import tomlkit

    model = document.get("model")
    if model is None:
        model = tomlkit.table()
        document["model"] = model
    if not isinstance(model, dict):
        raise ConfigError("config.toml: 'model' is not a table; it was left as it was")
    model["default"] = choice.model_ref
    providers = document.get("providers")
    if providers is None:
        providers = tomlkit.table(is_super_table=True)
        document["providers"] = providers
    if not isinstance(providers, tomlkit.items.Table):
        raise ConfigError("config.toml: 'providers' is not a table of [providers.<id>] sections; it was left as it was")
    section = providers.get(choice.provider_id)
    created = section is None
    if section is None:
        section = tomlkit.table()
        providers.append(choice.provider_id, section)
    elif not isinstance(section, tomlkit.items.Table):
        raise ConfigError(f"config.toml: providers.{choice.provider_id} is not a table; it was left as it was")
    section["kind"] = choice.kind
    section["base_url"] = choice.base_url
    if choice.api_key_env:
        section["api_key_env"] = choice.api_key_env
    else:
        with contextlib.suppress(KeyError):
            del section["api_key_env"]
    entry = tomlkit.inline_table()
    entry.update({"id": choice.model, "vision": choice.vision})
    models = section.get("models")
    if not isinstance(models, list):
        models = tomlkit.array()
        section["models"] = models
    known = {m if isinstance(m, str) else m.get("id") if isinstance(m, dict) else None for m in models}
    new: list[Any] = [] if choice.model in known else [entry]
    new += [model for model in dict.fromkeys(choice.listed) if model not in known and model != choice.model]
    for item in new:
        models.append(item)
    if len(new) > 1 and isinstance(models, tomlkit.items.Array):
        models.multiline(True)  # one model a line: a server's list stays readable
    if created:
        section.add(tomlkit.nl())  # a blank line before whatever section follows
