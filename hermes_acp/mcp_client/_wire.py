"""The adapter to the mcp SDK: open one server over stdio, streamable HTTP or SSE, and speak to it in plain dicts.

``open_wire(spec, ...)`` is an async context manager: it starts the transport (spawning a stdio server in the
session's cwd with exactly the spec's environment, through our own bounded transport ``_stdio``; HTTP and SSE with
the editor's headers, their bodies read within the same bound), runs the
``initialize`` handshake (``mode="legacy"``: one round trip every server understands) and yields a ``Wire``.
Lists come back as wire-shaped dicts (by alias, JSON mode); a ``tools/call`` result comes back as the server sent
it, every key kept (the cua-driver's extensions included), so nothing above this module sees SDK types.
SDK and transport exceptions are translated here, once: a closed connection, a broken pipe, an HTTP transport
error become ``TransportDropped``; a JSON-RPC error or an unreadable answer becomes ``ServerRejected``. The SDK
reports a closed connection with code -32000, the first code of JSON-RPC's range for servers' own errors, which
many servers answer with: only the texts the SDK itself gives such an error make it a dropped connection; a
server's -32000 is its error (reported, never retried, and the connection stays). Streamable
HTTP reports any error status of a POST as one generic JSON-RPC error; the status itself is recorded per request
(an httpx response hook, read through a context variable the SDK carries into its POST task), and 408/502/503/504,
which a gateway gives without saying whether the server acted, make ``TransportDropped`` instead.

The read stream is watched: when the server goes away between requests (a crashed stdio process, a closed SSE
stream), ``Wire.dropped`` is set, so the owner can rebuild the connection before the next call instead of
sending into a dead one. It is also where a message the SDK cannot decode because it carries a lone surrogate
(``"\\ud800"``, which JSON allows and UTF-8 cannot hold) is decoded anyway, its text made safe by the one
sanitizer (``_surrogates``): the SDK would drop it (stdio, SSE) and the request would wait for its timeout, or
answer a parse error in its place (streamable HTTP, whose bodies are therefore mended as they stream in). A stdio
server's output that is not valid UTF-8 is decoded with U+FFFD in place of the bad bytes.

With ``WireHooks`` the connection also serves the server's own requests and notifications: ``elicitation/create``
(form and URL mode: the capability is advertised, and each question goes to ``hooks.elicit`` as wire-shaped params;
a ``ValueError`` answers the server an invalid-params error), ``roots/list`` (``hooks.roots``; ``roots_changed()``
sends ``notifications/roots/list_changed``), and every other notification to ``hooks.notified`` (list changes, a URL
question's completion). A call's ``notifications/progress`` go to its ``on_progress``. An HTTP or SSE server signs in
with ``hooks.auth`` (``_oauth.connection_auth``: stored tokens, refreshed when due, never asking the user): a 401
those cannot answer is ``SignInRequired`` — at connect time, and for a request whose connection died of it — and a
refused authorization (a wrong issuer, a registration refused) is ``ServerRejected`` saying why.

Timeouts are the caller's business (the connection bounds every wait); this module only gives HTTP its connect
timeout. It is imported lazily (importing the SDK costs over a second) and is the only module of hermes_acp
that imports ``mcp``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

import anyio
import httpx2
import structlog
from mcp import Client, MCPError, types
from mcp.client.auth import OAuthFlowError
from mcp.client.session import ClientRequestContext
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.message import SessionMessage
from pydantic import BaseModel, ConfigDict, ValidationError

from hermes_acp.version import __version__

from . import _oauth
from ._failures import ServerRejected, SignInRequired, TokensStale, TransportDropped
from ._stdio import stdio_transport
from ._surrogates import mend_body, mend_json
from .specs import HttpSpec, StdioSpec
from .wire_port import ProgressFn, WireHooks

__all__ = ["MAX_LIST_PAGES", "Wire", "open_wire", "translate_failure"]

MAX_LIST_PAGES = 50
"""Pages of a paginated list we follow before stopping (a server whose cursor never ends cannot hang us)."""
SSE_READ_TIMEOUT_S = 3600.0
"""How long an idle SSE stream may stay silent before the SDK gives it up (the next call then reconnects)."""
_CLIENT_INFO = types.Implementation(name="hermes-acp", version=__version__)
_UNKNOWN_OUTCOME_STATUSES = frozenset({408, 502, 503, 504})
"""HTTP statuses a proxy or gateway answers with when it lost the request or the response on its way."""
_post_statuses: ContextVar[list[int] | None] = ContextVar("hermes_mcp_post_statuses", default=None)
"""The HTTP statuses of the POSTs made for the request being translated (the SDK posts in the sender's context)."""
_log = structlog.get_logger("hermes_acp.mcp")


class _RawResult(BaseModel):
    """Any JSON object, every key kept (the SDK's typed results drop what they do not know)."""

    model_config = ConfigDict(extra="allow")

    def data(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def _status_recorder(endpoint: str) -> Callable[[httpx2.Response], Awaitable[None]]:
    """Response hook: the statuses of the POSTs to the MCP endpoint (not those of a sign-in's own requests)."""
    url = httpx2.URL(endpoint).copy_with(query=None)

    async def record(response: httpx2.Response) -> None:
        statuses = _post_statuses.get()
        request = response.request
        if statuses is not None and request.method == "POST" and request.url.copy_with(query=None) == url:
            statuses.append(response.status_code)

    return record


@dataclass
class Wire:
    """One live, initialized connection."""

    client: Client
    dropped: anyio.Event
    gate: _oauth.Gate | None = None
    """Set when the connection signs in: whether it hit a 401 the stored tokens could not answer."""

    @property
    def has_resources(self) -> bool:
        return self.client.server_capabilities.resources is not None

    @property
    def has_prompts(self) -> bool:
        return self.client.server_capabilities.prompts is not None

    @property
    def server_version(self) -> str | None:
        info = self.client.server_info
        return info.version if info is not None else None

    async def list_tools(self, *, limit: int | None = None) -> list[dict[str, Any]]:
        """The server's tools (pages followed until ``limit`` of them are known, when given)."""
        return [_dump(t) for t in (await self._pages("tools", limit=limit))[:limit]]

    async def list_resources(self) -> list[dict[str, Any]]:
        return [_dump(r) for r in await self._pages("resources")]

    async def list_prompts(self) -> list[dict[str, Any]]:
        return [_dump(p) for p in await self._pages("prompts")]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, on_progress: ProgressFn | None = None
    ) -> dict[str, Any]:
        """``tools/call``; the result as sent, every key kept (no schema check: the server acted either way)."""
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
        progress = _Progress(on_progress) if on_progress is not None else None
        with _translated(self.gate):
            result = await self.client.session.send_request(request, _RawResult, progress_callback=progress)
        return result.data()

    async def read_resource(self, uri: str) -> dict[str, Any]:
        with _translated(self.gate):
            result = await self.client.session.read_resource(uri)
        return _dump(result)

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> dict[str, Any]:
        with _translated(self.gate):
            result = await self.client.session.get_prompt(name, arguments)
        return _dump(result)

    async def roots_changed(self) -> None:
        with _translated(self.gate):
            await self.client.session.send_notification(types.RootsListChangedNotification())

    async def _pages(self, kind: str, *, limit: int | None = None) -> list[Any]:
        session = self.client.session
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor)
            with _translated(self.gate):
                if kind == "tools":
                    page: Any = await session.list_tools(params=params)
                    items.extend(page.tools)
                elif kind == "resources":
                    page = await session.list_resources(params=params)
                    items.extend(page.resources)
                else:
                    page = await session.list_prompts(params=params)
                    items.extend(page.prompts)
            cursor = page.next_cursor
            if not cursor or (limit is not None and len(items) >= limit):
                break
        return items


class _Progress:
    """A request's progress callback in the SDK's shape."""

    def __init__(self, on_progress: ProgressFn):
        self._on_progress = on_progress

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        await self._on_progress(progress, total, message)


def _dump(model: Any) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return data


@contextlib.contextmanager
def _translated(gate: _oauth.Gate | None = None) -> Iterator[None]:
    """The one place SDK and transport errors become ``TransportDropped`` / ``ServerRejected`` /
    ``SignInRequired`` (a request whose connection died because the server wants a sign-in: it was not sent)."""
    statuses: list[int] = []
    token = _post_statuses.set(statuses)
    try:
        yield
    except Exception as exc:
        failure = gate.failure() if gate is not None and gate.tripped else translate_failure(exc, statuses)
        if failure is None:
            raise
        if failure is exc:
            raise
        raise failure from exc
    finally:
        _post_statuses.reset(token)


def translate_failure(exc: Exception, statuses: list[int]) -> Exception | None:
    """What ``exc`` means for the request; None: not a failure of the server or the transport (a bug: re-raised)."""
    if isinstance(exc, ExceptionGroup):
        return translate_failure(_first_leaf(exc), statuses)
    if isinstance(exc, SignInRequired | TokensStale):
        return exc
    if isinstance(exc, OAuthFlowError):
        return ServerRejected(_oauth.describe(exc))
    if isinstance(exc, MCPError):
        if exc.code == types.CONNECTION_CLOSED and _sdk_says_closed(exc.error.message):
            return TransportDropped(exc.error.message)
        lost = [status for status in statuses if status in _UNKNOWN_OUTCOME_STATUSES]
        if exc.code == types.INTERNAL_ERROR and lost:
            return TransportDropped(f"HTTP {lost[-1]} from the server or a gateway in front of it")
        return ServerRejected(exc.error.message or f"error {exc.code}")
    if isinstance(exc, anyio.BrokenResourceError | anyio.ClosedResourceError | anyio.EndOfStream):
        return TransportDropped("the connection to the server is closed")
    if isinstance(exc, OSError | httpx2.TransportError):
        return TransportDropped(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, httpx2.HTTPStatusError):
        # Only the SSE transport raises it, when opening its event stream (before any request went out).
        return ServerRejected(f"HTTP {exc.response.status_code}")
    if isinstance(exc, ValidationError):
        return ServerRejected(f"the server's answer could not be read: {exc}")
    return None


def _sdk_says_closed(message: str) -> bool:
    """The texts the SDK gives a request whose connection closed (its dispatcher) or whose response stream broke
    (its streamable HTTP transport)."""
    return message == "Connection closed" or message.startswith(("SSE stream failed", "SSE stream ended"))


def _first_leaf(group: BaseExceptionGroup[Exception]) -> Exception:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


def _mended(error: ValidationError) -> SessionMessage | ValidationError:
    """The message the SDK could not decode because of lone surrogates, decoded with them made safe; else ``error``.

    A stdio line or an SSE event the SDK's decoder rejected comes here as its error, which carries the text.
    Anything else stays the error it was (the SDK logs and drops it).
    """
    details = error.errors(include_url=False)
    raw = details[0].get("input") if len(details) == 1 and details[0].get("type") == "json_invalid" else None
    mended = mend_json(raw) if isinstance(raw, str | bytes) else None
    if mended is None:
        return error
    try:
        message = types.jsonrpc_message_adapter.validate_json(mended, by_name=False)
    except ValidationError:
        return error
    _log.warning("an MCP message carried lone surrogates; decoded with them made safe")
    return SessionMessage(message)


class _MendedBody(httpx2.AsyncByteStream):
    """A streamable HTTP response body with lone surrogates made safe before the SDK decodes it."""

    def __init__(self, inner: httpx2.AsyncByteStream, *, events: bool):
        self._inner = inner
        self._events = events

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in mend_body(self._inner, events=self._events):
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _mend_bodies(response: httpx2.Response) -> None:
    """Response hook: JSON and event-stream bodies pass ``mend_body`` on their way to the SDK (bounded, and made
    safe). A compressed body is refused: it could not be bounded before it is inflated."""
    encoding = response.headers.get("content-encoding", "identity").lower()
    media = response.headers.get("content-type", "").lower()
    events = media.startswith("text/event-stream")
    if not (events or media.startswith("application/json")) or not isinstance(response.stream, httpx2.AsyncByteStream):
        return
    if encoding not in ("", "identity"):
        return
    response.stream = _MendedBody(response.stream, events=events)


def _bounded_client(
    headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
) -> httpx2.AsyncClient:
    """The SSE transport's HTTP client, with its bodies bounded and mended like streamable HTTP's."""
    client = create_mcp_http_client(headers=_identity(headers or {}), timeout=timeout, auth=auth)
    client.event_hooks["response"] += [_mend_bodies]
    return client


def _identity(headers: Mapping[str, str]) -> dict[str, str]:
    """The editor's headers, asking for bodies that are not compressed (a compressed one cannot be bounded before it
    is inflated)."""
    if any(name.lower() == "accept-encoding" for name in headers):
        return dict(headers)
    return {**headers, "Accept-Encoding": "identity"}


class _WatchedReadStream:
    """Delegates to the transport's read stream and sets ``dropped`` when it ends (EOF or closed)."""

    def __init__(self, inner: Any, dropped: anyio.Event):
        self._inner = inner
        self._dropped = dropped

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._dropped.set()
            raise
        return _mended(item) if isinstance(item, ValidationError) else item

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._dropped.set()
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


@contextlib.asynccontextmanager
async def _transport(
    spec: StdioSpec | HttpSpec,
    *,
    cwd: Path | None,
    errlog: TextIO,
    connect_timeout_s: float,
    dropped: anyio.Event,
    auth: httpx2.Auth | None,
) -> AsyncIterator[tuple[Any, Any]]:
    if isinstance(spec, StdioSpec):
        transport = stdio_transport(spec.name, spec.command, list(spec.args), env=spec.env, cwd=cwd, errlog=errlog)
        async with transport as (read, write):
            yield _WatchedReadStream(read, dropped), write
    elif spec.transport == "http":
        timeout = httpx2.Timeout(connect_timeout_s, read=None)
        http = create_mcp_http_client(headers=_identity(spec.headers), timeout=timeout, auth=auth)
        http.event_hooks["response"] += [_status_recorder(spec.url), _mend_bodies]
        async with http, streamable_http_client(spec.url, http_client=http) as (read, write):
            yield _WatchedReadStream(read, dropped), write
    else:
        async with sse_client(
            spec.url,
            headers=dict(spec.headers),
            timeout=connect_timeout_s,
            sse_read_timeout=SSE_READ_TIMEOUT_S,
            httpx_client_factory=_bounded_client,
            auth=auth,
        ) as (read, write):
            yield _WatchedReadStream(read, dropped), write


def _callbacks(hooks: WireHooks | None) -> dict[str, Any]:
    """The SDK client's callbacks for ``hooks`` (a callback given advertises its capability)."""
    if hooks is None:
        return {}
    callbacks: dict[str, Any] = {}
    elicit, roots, notified = hooks.elicit, hooks.roots, hooks.notified
    if elicit is not None:

        async def elicitation(
            context: ClientRequestContext, params: types.ElicitRequestParams
        ) -> types.ElicitResult | types.ErrorData:
            try:
                answer = await elicit(_dump(params))
            except ValueError as exc:
                return types.ErrorData(code=types.INVALID_PARAMS, message=str(exc))
            return types.ElicitResult.model_validate(answer)

        callbacks["elicitation_callback"] = elicitation
    if roots is not None:

        async def list_roots(context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
            return types.ListRootsResult.model_validate({"roots": roots()})

        callbacks["list_roots_callback"] = list_roots
    if notified is not None:

        async def on_message(message: types.ServerNotification | Exception) -> None:
            if isinstance(message, Exception | types.ProgressNotification):
                return
            params = message.params
            await notified(message.method, _dump(params) if params is not None else {})

        callbacks["message_handler"] = on_message
    return callbacks


@contextlib.asynccontextmanager
async def open_wire(
    spec: StdioSpec | HttpSpec,
    *,
    cwd: Path | None,
    errlog: TextIO,
    connect_timeout_s: float,
    dropped: anyio.Event,
    hooks: WireHooks | None = None,
) -> AsyncIterator[Wire]:
    """Connect and initialize; raises ``TransportDropped`` / ``ServerRejected`` / ``SignInRequired`` when it cannot.

    A stdio server starts in ``cwd`` (None: ours). ``dropped`` is set when the connection ends for any reason (the
    caller may set it too, to end it).
    """
    auth: httpx2.Auth | None = None
    gate: _oauth.Gate | None = None
    if hooks is not None and hooks.auth is not None and isinstance(spec, HttpSpec):
        auth, gate = await _oauth.connection_auth(spec, hooks.auth)
    transport = _transport(
        spec, cwd=cwd, errlog=errlog, connect_timeout_s=connect_timeout_s, dropped=dropped, auth=auth
    )
    client = Client(transport, mode="legacy", cache=None, client_info=_CLIENT_INFO, **_callbacks(hooks))
    try:
        async with contextlib.AsyncExitStack() as stack:
            with _translated(gate):
                await stack.enter_async_context(client)
            yield Wire(client=client, dropped=dropped, gate=gate)
    except Exception as exc:
        # The connection's end may carry the sign-in its provider asked for (raised in the SDK's writer task).
        if gate is not None and gate.tripped and not isinstance(exc, SignInRequired | TokensStale):
            raise gate.failure() from exc
        raise
