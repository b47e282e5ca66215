"""Asking a model service whether it can work, in the setup's words: nothing answers at its address (and how a local
server is started), the key in a variable was refused, the model is unknown there, or what else went wrong.

The in-editor setup (``flow``), the terminal setup (``setup_wizard``) and ``hermes-acp --check --probe`` all ask
through here, so a user reads the same sentence wherever a service fails. ``reach`` lists the service's models
(``providers.probe.list_models``) and says whether anything answered and whether the key was taken; ``try_request``
sends one tiny request to a model through the real provider, without retries (``providers.probe.try_model``). A
failure is a sentence without its final stop: the caller ends it ("…; nothing was written."). Nothing here writes or
keeps anything, and no key's value ever appears in a sentence (only its variable's name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from hermes_acp.errors import ProviderAuthError, ProviderError

from .presets import start_hint

if TYPE_CHECKING:
    from hermes_acp.providers.probe import ModelListing

    from .config_file import ProviderChoice

__all__ = ["Reached", "key_refused", "nothing_answers", "reach", "sentence", "try_request"]

Kind = Literal["openai", "anthropic"]


@dataclass(frozen=True, slots=True)
class Reached:
    listing: ModelListing
    """What the service listed (no ids when it has no list: the user types a model's id)."""
    failure: str | None
    """Why the setup cannot go on (nothing answered, the key was refused); None when the service answered."""


def nothing_answers(base_url: str, provider_id: str | None = None) -> str:
    """ "nothing answers at URL — is Ollama running? `ollama serve`" (the hint for a local server's address)."""
    hint = start_hint(base_url, provider_id)
    return (
        f"nothing answers at {base_url} — {hint}"
        if hint
        else (f"nothing answers at {base_url} (check the address, and that this machine can reach it)")
    )


def key_refused(api_key_env: str | None, base_url: str, status: int | None) -> str:
    """ "the key in VAR was refused (HTTP 401 from URL)", or what to do when no key was sent."""
    answered = f"HTTP {status} from {base_url}" if status else base_url
    if api_key_env:
        return f"the key in {api_key_env} was refused ({answered})"
    return f"{base_url} refused a request without a key ({answered}): name the variable that holds its key"


def sentence(text: str) -> str:
    """``text`` without a final stop, so that the caller's own ending does not make two ("…key.; nothing…")."""
    return text.rstrip().rstrip(".")


async def reach(
    kind: Kind, base_url: str, api_key_env: str | None, api_key: str | None, *, provider_id: str | None = None
) -> Reached:
    """The service's model list, and whether the setup can go on with it (see the module docstring)."""
    from hermes_acp.providers.probe import list_models  # httpx loads with the first question, not before

    listing = await list_models(kind, base_url, api_key)
    if not listing.answered:
        return Reached(listing, nothing_answers(base_url, provider_id))
    if listing.status in (401, 403):
        return Reached(listing, key_refused(api_key_env, base_url, listing.status))
    return Reached(listing, None)


async def try_request(choice: ProviderChoice, api_key: str | None) -> str | None:
    """None when one tiny request to the chosen model was answered; else what went wrong, in words."""
    from hermes_acp.providers.probe import candidate_settings, try_model
    from hermes_acp.providers.registry import build_provider

    settings = candidate_settings(choice.kind, choice.base_url, choice.api_key_env, choice.model)
    provider = build_provider(choice.provider_id, settings, api_key)
    try:
        await try_model(provider, choice.model)
    except ProviderAuthError as exc:
        return key_refused(choice.api_key_env, choice.base_url, exc.status)
    except ProviderError as exc:
        if exc.status == 404:
            return f"{choice.base_url} does not know the model {choice.model!r} (HTTP 404)"
        return sentence(str(exc))
    finally:
        await provider.aclose()
    return None
