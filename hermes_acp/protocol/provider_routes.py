"""``providers/list``, ``providers/set`` and ``providers/disable`` (ACP 2.4.0, unstable): a client that manages
model endpoints routes our providers (advertised as ``agentCapabilities.providers``).

- **list**: every provider the settings have (config.toml's, the environment's, the client's own), each with both
  API types we speak and where it sends requests now (``current``: null when disabled); ``_meta.hermes`` says
  which routes live in memory only.
- **set**: replaces one provider's API type, base URL and headers. A provider that is not configured gets the models
  its endpoint lists (``GET /models`` with those headers); one that lists none is refused. The headers may carry
  keys: they are kept in this process's memory, redacted from the logs, never written to config.toml, and gone at
  restart; the answer says so in ``_meta``. A change applies to the next model request (a turn streaming now
  finishes on the old route).
- **disable**: the provider's models leave the catalog until it is set again; an unknown id is a success.

They act on the services of the connection that asks (a host keeps one registry and catalog per client
environment). After each change that catalog is replaced in place and every open session using it is told its new
options (``announce``).
Values are checked as outside input: ids, URLs (as the in-editor setup checks them) and header names and values
(no line breaks, bounded).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import structlog

from hermes_acp.errors import ConfigError, InvalidParamsError
from hermes_acp.jsonrpc.dispatcher import RequestContext
from hermes_acp.onboarding.forms import url_problem
from hermes_acp.providers.catalog import ModelCatalog
from hermes_acp.providers.registry import ProviderRegistry
from hermes_acp.providers.routing import ProviderRoute
from hermes_acp.sessions import SessionServices
from hermes_acp.telemetry import register_secret

from .wire import ProviderIdParams, SetProviderParams, parse

__all__ = ["SUPPORTED_API_TYPES", "ProviderRoutes"]

_log = structlog.get_logger("hermes_acp.protocol")
SUPPORTED_API_TYPES = ("openai", "anthropic")
MAX_HEADERS = 64
MAX_HEADER_CHARS = 8192
_PROVIDER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}")
IN_MEMORY_NOTE = (
    "kept in this process's memory only: config.toml is not changed, the headers are not stored, a restart forgets it"
)


class ProviderRoutes:
    """The three routes over one connection's services (its environment's registry and catalog)."""

    def __init__(self, services: Callable[[], SessionServices], announce: Callable[[ModelCatalog], Awaitable[None]]):
        self._services = services
        self._announce = announce

    def _registry(self) -> ProviderRegistry:
        return self._services().providers

    async def list(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        registry = self._registry()
        providers = []
        for provider_id, settings in registry.settings.providers.items():
            routed = provider_id in registry.routes
            providers.append(
                {
                    "providerId": provider_id,
                    "supported": list(SUPPORTED_API_TYPES),
                    "required": False,
                    "current": {"apiType": settings.kind, "baseUrl": settings.base_url},
                    "_meta": {"hermes": {"models": [m.id for m in settings.models], "inMemoryOnly": routed}},
                }
            )
        for provider_id in sorted(registry.disabled):
            providers.append(
                {"providerId": provider_id, "supported": list(SUPPORTED_API_TYPES), "required": False, "current": None}
            )
        return {"providers": providers}

    async def set(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        params = parse(SetProviderParams, raw)
        if not _PROVIDER_ID.fullmatch(params.provider_id):
            raise InvalidParamsError(
                "providerId: letters, digits, '.', '_' and '-', at most 64 (no ':')", field="providerId"
            )
        if params.api_type not in SUPPORTED_API_TYPES:
            raise InvalidParamsError(
                f"apiType: {params.api_type[:40]!r} is not supported; supported: {', '.join(SUPPORTED_API_TYPES)}",
                field="apiType",
                data={"supported": list(SUPPORTED_API_TYPES)},
            )
        problem = url_problem(params.base_url)
        if problem is not None:
            raise InvalidParamsError(f"baseUrl: {problem}", field="baseUrl")
        headers = _checked_headers(params.headers)
        kind: Literal["openai", "anthropic"] = "anthropic" if params.api_type == "anthropic" else "openai"
        base_url = params.base_url.rstrip("/")
        registry = self._registry()
        configured = registry.settings.providers.get(params.provider_id)
        models: tuple[str, ...] = ()
        if configured is None or not configured.models:
            from hermes_acp.providers.probe import list_models  # httpx loads with the first such request

            listing = await list_models(kind, base_url, None, headers=headers)
            if not listing.ids:
                raise InvalidParamsError(
                    f"providerId: {params.provider_id!r} has no configured models and its endpoint lists none"
                    f" ({listing.problem}); configure its models in config.toml first",
                    field="providerId",
                )
            models = listing.ids
        for value in headers.values():
            register_secret(value)
        registry.route(params.provider_id, ProviderRoute(kind, base_url, headers, models))
        self._replace_catalog(registry)
        _log.info(
            "provider routed by the client", provider=params.provider_id, base_url=base_url, headers=sorted(headers)
        )
        await self._announce(self._services().catalog)
        return {"_meta": {"hermes": {"storage": IN_MEMORY_NOTE}}}

    async def disable(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        params = parse(ProviderIdParams, raw)
        registry = self._registry()
        known = params.provider_id in registry.settings.providers or params.provider_id in registry.routes
        if known:
            registry.disable(params.provider_id)
            self._replace_catalog(registry)
            _log.info("provider disabled by the client", provider=params.provider_id)
            await self._announce(self._services().catalog)
        return {}

    def _replace_catalog(self, registry: ProviderRegistry) -> None:
        try:
            catalog = registry.catalog_for()
        except ConfigError as exc:  # routed_settings keeps the default valid; this would be our bug, told plainly
            raise InvalidParamsError(f"the providers would not make a usable catalog: {exc}") from exc
        self._services().catalog.replace(catalog)


def _checked_headers(headers: dict[str, str]) -> dict[str, str]:
    if len(headers) > MAX_HEADERS:
        raise InvalidParamsError(f"headers: at most {MAX_HEADERS}", field="headers")
    for name, value in headers.items():
        if not _HEADER_NAME.fullmatch(name):
            raise InvalidParamsError(f"headers: {name[:40]!r} is not a header name", field="headers")
        if len(value) > MAX_HEADER_CHARS or any(c in value for c in "\r\n\0"):
            # the value is not repeated: it may be a key
            raise InvalidParamsError(f"headers: the value of {name} has a line break or is too long", field="headers")
    return dict(headers)
