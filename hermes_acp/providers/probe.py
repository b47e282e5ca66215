"""Questions asked of a model service before it is configured: which models it lists, and whether a request to one
of them works. The in-editor setup and ``providers/set`` ask them; nothing here writes or keeps anything.

``list_models`` is ``GET {base_url}/models`` (OpenAI-compatible) or ``GET {base_url}/v1/models`` with
``anthropic-version`` (Anthropic), the key sent only to the service's own origin, bounded in time and size. What a
service lists is outside input: ids that are not short printable text are dropped, the list is cut at
``MAX_LISTED``. A service without the route, or one that refuses, gives a ``ModelListing`` with no ids and the
reason in words, the HTTP status it answered with, and whether anything answered at all (``answered``: False when
no connection could be made). ``try_model`` streams one tiny request through a provider built by the registry's
``build_provider`` from ``candidate_settings`` (no retries) and raises the provider's own ``ProviderError`` when it
fails, so the user reads the same explanation a turn would give.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Literal

import httpx

from hermes_acp.config import ModelEntry, ProviderSettings
from hermes_acp.core import TextPart, UserMessage
from hermes_acp.core.sanitize import clean_text
from hermes_acp.errors import ProviderStreamError

from ._http import HostBoundKeyAuth
from ._tls import verify_for
from .base import ModelProvider, ProviderRequest, ResponseDone

__all__ = ["MAX_LISTED", "ModelListing", "candidate_settings", "list_models", "try_model"]

MAX_LISTED = 200
"""More models than a form should offer; the rest are left out (and the user may type any id)."""
MAX_LISTING_BYTES = 4 * 1024 * 1024
MAX_ID_CHARS = 200
LIST_TIMEOUT_S = 10.0
TRY_TIMEOUT_S = 60.0
TRY_PROMPT = "Reply with the single word OK."
Kind = Literal["openai", "anthropic"]


@dataclass(frozen=True, slots=True)
class ModelListing:
    ids: tuple[str, ...]
    """The model ids the service listed (empty when it listed none or could not be asked)."""
    problem: str | None = None
    """Why there is no list, in words, when there is none."""
    status: int | None = None
    """The HTTP status of an answer other than 200."""
    answered: bool = True
    """False when nothing answered: no connection could be made to the server (refused, no such host, timed out)."""


async def list_models(
    kind: Kind,
    base_url: str,
    api_key: str | None,
    *,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = LIST_TIMEOUT_S,
    transport: httpx.AsyncBaseTransport | None = None,
) -> ModelListing:
    """The models ``base_url`` lists (see the module docstring); never raises for what the service does."""
    base = base_url.rstrip("/")
    if kind == "anthropic":
        url, sent = f"{base.removesuffix('/v1')}/v1/models", {"anthropic-version": "2023-06-01"}
        auth = HostBoundKeyAuth(base, "x-api-key", api_key) if api_key else None
    else:
        url, sent = f"{base}/models", {}
        auth = HostBoundKeyAuth(base, "Authorization", f"Bearer {api_key}") if api_key else None
    try:
        async with (
            httpx.AsyncClient(
                auth=auth,
                timeout=timeout_s,
                follow_redirects=False,
                transport=transport,
                headers=dict(headers or {}),
                verify=verify_for(base),
            ) as client,
            client.stream("GET", url, headers={**sent, "Accept": "application/json"}) as response,
        ):
            if response.status_code != 200:
                return ModelListing((), f"{url} answered HTTP {response.status_code}", status=response.status_code)
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body.extend(chunk)
                if len(body) > MAX_LISTING_BYTES:
                    return ModelListing((), f"{url} answered with more than {MAX_LISTING_BYTES // 1024 // 1024} MB")
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        return ModelListing((), f"{url} could not be reached ({type(exc).__name__})", answered=False)
    except httpx.HTTPError as exc:
        return ModelListing((), f"{url} could not be reached ({type(exc).__name__})")
    return _listed(bytes(body), url)


def _listed(body: bytes, url: str) -> ModelListing:
    try:
        payload = json.loads(body)
    except ValueError:
        return ModelListing((), f"{url} did not answer with JSON")
    entries = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        entries = payload.get("models") if isinstance(payload, dict) else None  # Ollama's own shape
    if not isinstance(entries, list):
        return ModelListing((), f"{url} answered without a list of models")
    ids: list[str] = []
    for entry in entries:
        raw = entry.get("id", entry.get("name")) if isinstance(entry, dict) else None
        if not isinstance(raw, str):
            continue
        model_id = clean_text(raw).strip()
        if model_id and len(model_id) <= MAX_ID_CHARS and model_id.isprintable() and model_id not in ids:
            ids.append(model_id)
        if len(ids) == MAX_LISTED:
            break
    if not ids:
        return ModelListing((), f"{url} listed no models")
    return ModelListing(tuple(ids))


def candidate_settings(kind: Kind, base_url: str, api_key_env: str | None, model: str) -> ProviderSettings:
    """Settings for trying one candidate configuration: no retries, short timeouts (the user is waiting)."""
    return ProviderSettings(
        kind=kind,
        base_url=base_url,
        api_key_env=api_key_env,
        models=[ModelEntry(id=model)],
        max_retries=0,
        timeout_s=TRY_TIMEOUT_S,
        connect_timeout_s=LIST_TIMEOUT_S,
    )


async def try_model(provider: ModelProvider, model: str) -> ResponseDone:
    """One small streamed request to ``model``; raises the provider's ``ProviderError`` when it fails."""
    request = ProviderRequest(
        model=model,
        system="This request checks that the model can be reached.",
        messages=[UserMessage(parts=[TextPart(text=TRY_PROMPT)])],
        max_output_tokens=16,
    )
    async with aclosing(provider.stream(request)) as events:
        async for event in events:
            if isinstance(event, ResponseDone):
                return event
    raise ProviderStreamError("the test request ended without an answer")
