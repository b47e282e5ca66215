"""OAuth for HTTP and SSE MCP servers over the SDK's ``mcp.client.auth``: the token storage, the provider each
connection signs in with, and the interactive sign-in with its loopback redirect listener.

The SDK's ``OAuthClientProvider`` (an ``httpx2.Auth``) does the protocol: on a 401 it discovers the protected
resource's and the authorization server's metadata (refusing a resource or an issuer that does not match, and
following no redirect that leaves an origin), registers a client dynamically unless one is stored or configured,
runs the authorization code grant with PKCE (S256) and a random state, exchanges the code, stores the tokens
through our ``TokenStorage`` and refreshes them when they have expired. What this module adds:

- ``FileStorage``: the SDK's ``TokenStorage`` over ``auth.TokenFile`` (0600, per server and home). It keeps the
  absolute expiry of the access token beside it, and each provider starts knowing it (``context.token_expiry_time``,
  less ``REFRESH_MARGIN_S``): the SDK loads stored tokens without an expiry, so without this a token that expired
  while we were not running would be sent, refused, and cost the user a sign-in although its refresh token works.
- ``connection_auth``: the provider of one connection. It never asks the user: when the flow reaches the user's
  step with an access token the server refused before its time and a refresh token not tried yet (the SDK never
  refreshes on a 401), it marks the stored token due and raises ``TokensStale`` (a fresh connection refreshes it);
  otherwise (no tokens, a refused refresh, a refreshed token refused too) it drops the stored tokens it was using
  (keeping the registered client; tokens another session refreshed meanwhile are kept) and raises
  ``SignInRequired``. The
  returned ``Gate`` remembers that, so a request that died of it is reported as "sign in", never as an outcome
  unknown (the server refused it before acting).
- ``sign_in``: the interactive flow, one bounded task: a loopback listener on ``127.0.0.1`` at the port the client
  was registered with (a dynamically registered client whose port is taken is registered again with a free one), a
  probe request that makes the server answer 401, the authorization page handed to the ``SignIn`` port, the
  redirect awaited (``wait_s``) — on the listener, or as the address the user pastes where the browser runs on
  another machine (``pasted``) —, the tokens stored. The SDK's request clock pauses while the person acts; ours is
  the one ``wait_s``.

The SDK logs every failed flow with a traceback; the two failures that are expected here (``SignInRequired``,
``SignInFailed``) are filtered from its logger. Loaded lazily with ``_wire`` (it imports the SDK).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
import httpx2
import structlog
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, OAuthRegistrationError
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import ValidationError

from hermes_acp.telemetry import register_secret

from ._failures import SignInFailed, SignInRequired, TokensStale
from .auth import REFRESH_MARGIN_S, OAuthClient, WireAuth, redirect_query
from .specs import HttpSpec

__all__ = ["CLIENT_NAME", "HTTP_TIMEOUT_S", "FileStorage", "Gate", "connection_auth", "describe", "leaf", "sign_in"]

CLIENT_NAME = "hermes-acp"
HTTP_TIMEOUT_S = 30.0
"""Each request of a sign-in to the server or its authorization server."""
MAX_CALLBACK_BYTES = 16 * 1024
"""The redirect's request head the loopback listener reads at most."""
CALLBACK_READ_S = 10.0
_PAGE = (
    "<!doctype html><meta charset=utf-8><title>hermes-acp</title>"
    "<p>{text}</p><p>You can close this tab and go back to your editor.</p>"
)
_log = structlog.get_logger("hermes_acp.mcp")


def leaf(error: BaseException | None) -> BaseException | None:
    """The first exception at the bottom of nested exception groups (``error`` itself when it is none)."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


class _ExpectedFailures(logging.Filter):
    """Drops the SDK's tracebacks (its OAuth flow's, its streamable HTTP writer's) of the two failures we raise
    inside its flow on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = leaf(record.exc_info[1] if record.exc_info else None)
        return not isinstance(error, SignInRequired | SignInFailed | TokensStale)


for _name in ("mcp.client.auth.oauth2", "mcp.client.streamable_http", "mcp.client.sse"):
    logging.getLogger(_name).addFilter(_ExpectedFailures())


def _redirect_uri(port: int) -> str:
    return f"http://127.0.0.1:{port}/callback"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _registered_port(data: dict[str, Any], client: OAuthClient | None) -> int | None:
    """The loopback port the stored (or configured) client was registered with."""
    if client is not None and client.redirect_port is not None:
        return client.redirect_port
    port = data.get("redirect_port")
    return port if isinstance(port, int) and 0 < port < 65536 else None


@dataclass(eq=False)
class FileStorage:
    """The SDK's ``TokenStorage`` over one ``TokenFile``."""

    auth: WireAuth
    redirect_port: int
    loaded: dict[str, Any] | None = None
    """The tokens (as stored) this storage last read or wrote."""
    refreshed: bool = False
    """The provider refreshed (or was told to refresh) the tokens it loaded: a refusal now needs the user."""

    async def get_tokens(self) -> OAuthToken | None:
        data = await self.auth.tokens.aread()
        raw = data.get("tokens")
        self.loaded = raw if isinstance(raw, dict) else None
        if self.loaded is None:
            return None
        try:
            return OAuthToken.model_validate(self.loaded)
        except ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        raw = tokens.model_dump(mode="json", exclude_none=True)
        expires_at = time.time() + float(tokens.expires_in) if tokens.expires_in is not None else None
        await self.auth.tokens.aupdate(tokens=raw, expires_at=expires_at)
        self.loaded = raw
        self.refreshed = True

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        configured = self.auth.client
        if configured is not None:
            register_secret(configured.client_secret)
            return OAuthClientInformationFull(
                client_id=configured.client_id,
                client_secret=configured.client_secret,
                redirect_uris=[_redirect_uri(self.redirect_port)],
                token_endpoint_auth_method="client_secret_post" if configured.client_secret else "none",
            )
        raw = (await self.auth.tokens.aread()).get("client")
        try:
            return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        raw = client_info.model_dump(mode="json", exclude_none=True)
        await self.auth.tokens.aupdate(client=raw, redirect_port=self.redirect_port)

    async def drop_tokens(self) -> None:
        """Forget the tokens this storage used (a refresh or a request was refused); tokens someone else wrote
        since are kept. The client stays registered."""
        now = (await self.auth.tokens.aread()).get("tokens")
        if now is not None and now == self.loaded:
            await self.auth.tokens.aupdate(tokens=None, expires_at=None)
        self.loaded = None

    def can_refresh(self) -> bool:
        """Whether a refused access token is worth one refresh: there is a refresh token, and none was tried."""
        return isinstance(self.loaded, dict) and bool(self.loaded.get("refresh_token")) and not self.refreshed

    async def mark_due(self) -> None:
        """The stored access token is due (refused by the server): the next connection refreshes it first."""
        now = (await self.auth.tokens.aread()).get("tokens")
        if now is not None and now == self.loaded:
            await self.auth.tokens.aupdate(expires_at=0)

    async def expiry(self) -> float | None:
        """When the stored access token is to be refreshed (its expiry less ``REFRESH_MARGIN_S``), if known."""
        expires_at = (await self.auth.tokens.aread()).get("expires_at")
        return float(expires_at) - REFRESH_MARGIN_S if isinstance(expires_at, int | float) else None


def _metadata(port: int) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[_redirect_uri(port)],
        token_endpoint_auth_method="none",
        grant_types=["authorization_code", "refresh_token"],
    )


async def _provider(
    spec: HttpSpec,
    storage: FileStorage,
    redirect: Callable[[str], Awaitable[None]],
    callback: Callable[[], Awaitable[AuthorizationCodeResult]],
) -> OAuthClientProvider:
    provider = OAuthClientProvider(
        spec.url, _metadata(storage.redirect_port), storage, redirect_handler=redirect, callback_handler=callback
    )
    # The SDK loads stored tokens without an expiry: tell it when ours is due, so it refreshes first.
    due = await storage.expiry()
    provider.context.token_expiry_time = due
    storage.refreshed = due is not None and due <= time.time()
    return provider


@dataclass(eq=False)
class Gate:
    """Whether this connection's provider hit the user's step (the connection then needs a sign-in)."""

    server: str
    needed: bool = False
    stale: bool = False
    """It met a refused token that a fresh connection can refresh."""

    def failure(self) -> SignInRequired | TokensStale:
        if self.stale and not self.needed:
            return TokensStale(f"MCP server {self.server!r} refused its access token; it is refreshed first")
        return SignInRequired(f"MCP server {self.server!r} needs you to sign in; nothing was sent")

    @property
    def tripped(self) -> bool:
        return self.needed or self.stale


async def connection_auth(spec: HttpSpec, auth: WireAuth) -> tuple[httpx2.Auth, Gate]:
    """The provider one connection signs in with, never asking the user, and its ``Gate``."""
    data = await auth.tokens.aread()
    storage = FileStorage(auth, _registered_port(data, auth.client) or _free_port())
    gate = Gate(spec.name)

    async def user_needed(_url: str) -> None:
        if storage.can_refresh():  # refused before its time: refreshing it is worth one fresh connection
            gate.stale = True
            await storage.mark_due()
            raise gate.failure()
        gate.needed = True
        await storage.drop_tokens()
        raise gate.failure()

    async def no_callback() -> AuthorizationCodeResult:
        raise gate.failure()

    return await _provider(spec, storage, user_needed, no_callback), gate


@dataclass(eq=False)
class _Loopback:
    """The one-shot redirect listener of a sign-in: the first ``/callback`` request with a code or an error wins."""

    listener: anyio.abc.Listener[anyio.abc.SocketStream]
    got: anyio.Event = field(default_factory=anyio.Event)
    result: AuthorizationCodeResult | None = None
    error: str | None = None

    async def serve(self) -> None:
        await self.listener.serve(self._handle)

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            head = b""
            with anyio.move_on_after(CALLBACK_READ_S):
                while b"\r\n\r\n" not in head and len(head) < MAX_CALLBACK_BYTES:
                    try:
                        head += await stream.receive(4096)
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        break
            text = self._take(head)
            status = "200 OK" if text is not None else "404 Not Found"
            body = _PAGE.format(text=text or "Nothing to see here.").encode()
            reply = (
                f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
                "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
            ).encode()
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.send(reply + body)

    def _take(self, head: bytes) -> str | None:
        """The page's text when ``head`` is the redirect (recorded once), None for anything else."""
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != "GET":
            return None
        query = redirect_query(parts[1])
        return self.accept(query) if query is not None else None

    def accept(self, query: dict[str, str]) -> str:
        """Take the redirect's parameters (``auth.redirect_query``; the first ones count); what its page says."""
        if self.got.is_set():
            return "This sign-in was already answered."
        error = query.get("error")
        if error is not None:
            described = query.get("error_description")
            self.error = f"{error}: {described}" if described else error
            self.got.set()
            return "The sign-in was refused."
        code = query["code"]
        register_secret(code)
        self.result = AuthorizationCodeResult(code=code, state=query.get("state"), iss=query.get("iss"))
        self.got.set()
        return "Signed in."

    async def wait(self) -> AuthorizationCodeResult:
        await self.got.wait()
        if self.result is None:
            raise SignInFailed(f"the authorization server refused the sign-in ({self.error})")
        return self.result


async def _listen(auth: WireAuth) -> tuple[anyio.abc.Listener[anyio.abc.SocketStream], int]:
    """A listener on the registered loopback port; a dynamically registered client whose port is taken is dropped
    (so that it is registered again with a free port)."""
    data = await auth.tokens.aread()
    port = _registered_port(data, auth.client)
    if port is not None:
        try:
            return await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port), port
        except OSError as exc:
            if auth.client is not None and auth.client.redirect_port is not None:
                raise SignInFailed(f"the redirect port {port} (client_id's redirect_port) is in use: {exc}") from None
            await auth.tokens.aupdate(client=None, redirect_port=None)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    return listener, int(listener.extra(anyio.abc.SocketAttribute.local_port))


async def sign_in(
    spec: HttpSpec,
    auth: WireAuth,
    *,
    open_url: Callable[[str], Awaitable[bool]],
    wait_s: float,
    pasted: Callable[[], Awaitable[dict[str, str]]] | None = None,
) -> None:
    """The interactive sign-in (``wire_port.SignInFlow``)."""
    listener, port = await _listen(auth)
    loopback = _Loopback(listener)
    storage = FileStorage(auth, port)

    async def hand_over(url: str) -> None:
        if urlsplit(url).scheme not in ("http", "https"):
            raise SignInFailed("the authorization page is not an http(s) address")
        if not await open_url(url):
            raise SignInFailed("the sign-in was declined")

    provider = await _provider(spec, storage, hand_over, loopback.wait)
    status = 0
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(loopback.serve)
            if pasted is not None:

                async def paste() -> None:
                    loopback.accept(await pasted())

                group.start_soon(paste)
            try:
                with anyio.fail_after(wait_s):
                    status = await _probe(spec, provider)
            finally:
                group.cancel_scope.cancel()
    except Exception as exc:
        error = leaf(exc)
        if isinstance(error, SignInFailed):
            raise error from None
        if isinstance(error, TimeoutError):
            raise SignInFailed(f"the sign-in was not finished within {wait_s:g} s") from None
        if isinstance(error, OAuthFlowError | httpx2.HTTPError | ValidationError | OSError):
            raise SignInFailed(describe(error)) from None
        raise
    finally:
        await listener.aclose()
    if status in (401, 403):
        raise SignInFailed(f"the server still refuses access (HTTP {status})")
    _log.info("MCP server signed in", server=spec.name)


async def _probe(spec: HttpSpec, provider: httpx2.Auth) -> int:
    """One request that makes the server ask for authorization (and, once signed in, lets it through)."""
    timeout = httpx2.Timeout(HTTP_TIMEOUT_S)
    headers = {**spec.headers, "Accept": "text/event-stream"}
    async with (
        httpx2.AsyncClient(auth=provider, timeout=timeout, follow_redirects=False) as http,
        http.stream("GET", spec.url, headers=headers) as response,
    ):
        return response.status_code


def describe(exc: BaseException) -> str:
    """Why a sign-in did not work, in the user's words."""
    if isinstance(exc, OAuthRegistrationError):
        return (
            f"the server's authorization server did not register a client for us ({exc}); if it does not register"
            " clients dynamically, set client_id for this server in config.toml ([mcp.servers.NAME])"
        )
    if isinstance(exc, OAuthFlowError):
        return f"the server's authorization was refused: {exc}"
    if isinstance(exc, httpx2.HTTPError | OSError):
        return f"the server or its authorization server could not be reached: {type(exc).__name__}: {exc}"
    return f"{type(exc).__name__}: {exc}"
