"""The base both vendor providers share: one streamed POST, retried only before its first event.

``HttpProvider`` owns an ``httpx.AsyncClient`` configured from ``ProviderSettings``: connect and read
timeouts, redirects off, and the API key attached by ``HostBoundKeyAuth`` only to requests for the origin of
the provider's own ``base_url``. A vendor subclass gives the endpoint and headers to ``__init__`` and
implements ``_body`` (the JSON request) and ``_new_decoder`` (its ``StreamDecoder``). ``stream`` POSTs the body,
reads the ``text/event-stream`` answer through a fresh decoder per attempt and yields its ``ProviderEvent``s:

* 429, 408, 5xx, connection failures and streams that break before yielding anything are retried up to
  ``max_retries`` times, waiting as ``_retry.retry_delay`` says (through the injected ``sleep``);
* once an event has been yielded nothing is retried: a broken stream raises ``ProviderStreamError`` (the
  partial output already went out as deltas);
* closing the generator, or cancelling the task iterating it, closes the HTTP response (and its connection)
  at once;
* a response the vendor paused (its decoder says ``paused``: Anthropic's ``pause_turn``) is continued here, up
  to ``MAX_CONTINUATIONS`` times: the request goes again with the paused content appended as the last assistant
  message, the deltas of every round flow on as one stream, and one ``ResponseDone`` carries the whole message
  and the summed usage. The turn loop never sees the pause;
* a thinking ``effort`` goes out only for a model whose configured ``efforts`` list it; any other request is
  sent without one;
* a response is read within bounds (``core.bounds``): past ``OUTPUT_MARGIN`` times its output limit in characters
  (text, reasoning and tool arguments), past ``MAX_RESPONSE_BYTES`` of stream, or with one event past
  ``MAX_SSE_EVENT_BYTES``, reading stops, the connection is dropped and the response ends as ``max_tokens`` with
  what arrived (``ResponseDone.cut`` says why), so a stream that never ends costs a bounded amount of memory and
  nothing is stored past the bound.
* a request the server refused with HTTP 400 before any output is sent once more when the subclass says how to
  change it (``_resend``: the OpenAI-compatible provider leaves out a reasoning field the server refused, or adds
  one it demanded; ``echo.py``); the answer then carries the rules it was obtained with (``echo_rules``).

Proxy settings (``HTTPS_PROXY``, ``NO_PROXY``) and CA bundles (``SSL_CERT_FILE``) come from the environment,
as httpx reads them by default.

This module knows no vendor format: subclasses build the bodies, and decoders turn SSE messages into events.
"""

from __future__ import annotations

import contextlib
import random
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from contextlib import aclosing
from typing import Any, Protocol, cast

import anyio
import httpx
import structlog

from hermes_acp.config import ProviderSettings
from hermes_acp.core import AssistantMessage, Usage
from hermes_acp.core.bounds import MAX_RESPONSE_BYTES, MAX_SSE_EVENT_BYTES, OUTPUT_MARGIN, response_char_limit
from hermes_acp.core.messages import AssistantPart
from hermes_acp.errors import ProviderRequestError, ProviderStreamError

from ._http_errors import ProviderIdentity, TransientFailure, error_for_response, map_httpx_errors
from ._retry import retry_delay
from ._sse import EventTooLarge, SseMessage, SseParser
from ._tls import verify_for
from .base import ProviderEvent, ProviderRequest, ResponseDone, RetryWait, TextDelta, ThinkingDelta, ToolCallDelta

__all__ = ["HostBoundKeyAuth", "HttpProvider", "StreamDecoder"]

_log = structlog.get_logger("hermes_acp.providers")
_DEFAULT_PORTS = {"http": 80, "https": 443}
DRAIN_TIMEOUT_S = 2.0
"""How long to wait for the end of the body after the final event before dropping the connection."""
MAX_CONTINUATIONS = 8
"""How many times one response paused by the vendor is continued before it is taken as it is."""


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return (url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme))


class HostBoundKeyAuth(httpx.Auth):
    """Sets ``header: value`` on requests to ``base_url``'s origin (scheme, host, port), on nothing else."""

    def __init__(self, base_url: str, header: str, value: str):
        self._origin = _origin(httpx.URL(base_url))
        self._header = header
        self._value = value

    def __repr__(self) -> str:
        return f"HostBoundKeyAuth(origin={self._origin!r}, header={self._header!r})"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if _origin(request.url) == self._origin:
            request.headers[self._header] = self._value
        yield request


class StreamDecoder(Protocol):
    """Turns one vendor's SSE messages into events; raises ``ProviderError`` or ``TransientFailure``."""

    @property
    def done(self) -> bool:
        """True once the vendor's final event arrived; later messages are ignored."""
        ...

    def feed(self, message: SseMessage) -> list[ProviderEvent]:
        """The events one message carries; the message that completes the response gives ``ResponseDone``."""
        ...

    def finish(self) -> list[ProviderEvent]:
        """Called when the body ended before ``done``: the final events, or raise because it is incomplete."""
        ...

    def cut(self, reason: str) -> list[ProviderEvent]:
        """Called when the agent stops reading (a bound was passed): the final events of what arrived."""
        ...

    @property
    def paused(self) -> bool:
        """The response is complete but paused by the vendor: asking again with it appended continues it."""
        ...


class HttpProvider(ABC):
    """A ``ModelProvider`` speaking one vendor's streaming HTTP API (see the module docstring)."""

    def __init__(
        self,
        provider_id: str,
        settings: ProviderSettings,
        api_key: str | None,
        *,
        url: str,
        key_header: tuple[str, str] | None,
        headers: dict[str, str],
        transport: httpx.AsyncBaseTransport | None,
        sleep: Callable[[float], Awaitable[None]] | None,
    ):
        self._settings = settings
        self._identity = ProviderIdentity(provider_id, settings.api_key_env, api_key or None)
        self._url = url
        self._max_retries = settings.max_retries
        self._sleep = sleep or anyio.sleep
        self._random = random.Random()
        auth = HostBoundKeyAuth(settings.base_url, *key_header) if key_header else None
        self._client = httpx.AsyncClient(
            auth=auth,
            headers=headers,
            timeout=httpx.Timeout(settings.timeout_s, connect=settings.connect_timeout_s),
            follow_redirects=False,
            transport=transport,
            verify=verify_for(settings.base_url),
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.provider_id!r}, base_url={self._settings.base_url!r})"

    @property
    def provider_id(self) -> str:
        return self._identity.provider_id

    def stream(self, request: ProviderRequest) -> AsyncGenerator[ProviderEvent, None]:
        """Stream one response (see ``ModelProvider.stream``)."""
        return self._resent(self._with_allowed_effort(request))

    async def aclose(self) -> None:
        await self._client.aclose()

    @property
    def closed(self) -> bool:
        """``aclose`` was called: its connections are closed and it sends nothing more."""
        return self._client.is_closed

    @abstractmethod
    def _body(self, request: ProviderRequest) -> dict[str, Any]:
        """The JSON body that asks the vendor's API to stream the answer to ``request``."""

    @abstractmethod
    def _new_decoder(self, request: ProviderRequest) -> StreamDecoder:
        """A decoder for one attempt's event stream of an answer to ``request``."""

    def _resend(self, request: ProviderRequest, error: ProviderRequestError) -> ProviderRequest | None:
        """``request`` changed so that the server may take it, when ``error`` (its HTTP 400) says how; None: it
        is not sent again. Only the first refusal of a request is looked at."""
        return None

    async def _resent(self, request: ProviderRequest) -> AsyncGenerator[ProviderEvent, None]:
        """``_continued``, and once more with the request changed by ``_resend`` when the server refused it
        before any output (see the module docstring)."""
        changed = False
        while True:
            output = False
            try:
                async with aclosing(self._continued(request)) as events:
                    async for event in events:
                        output = output or not isinstance(event, RetryWait)
                        if isinstance(event, ResponseDone) and changed:
                            yield event.model_copy(update={"echo_rules": request.echo_rules})
                        else:
                            yield event
                return
            except ProviderRequestError as exc:
                again = None if (changed or output or exc.status != 400) else self._resend(request, exc)
                if again is None:
                    raise
                rules = again.echo_rules
                _log.warning(
                    "provider_request_sent_again",
                    provider=self.provider_id,
                    reason=str(exc),
                    left_out=sorted(rules.omit) if rules else [],
                    added=sorted(rules.force) if rules else [],
                )
                request, changed = again, True

    def _with_allowed_effort(self, request: ProviderRequest) -> ProviderRequest:
        """``request``, without its effort unless the configured model lists that effort."""
        if request.effort is None:
            return request
        entry = self._settings.model_entry(request.model)
        if entry is not None and request.effort in (entry.efforts or ()):
            return request
        return request.model_copy(update={"effort": None})

    async def _continued(self, request: ProviderRequest) -> AsyncGenerator[ProviderEvent, None]:
        """Stream the answer to ``request``, continuing it while the vendor pauses it (see the module docstring)."""
        parts: list[AssistantPart] = []
        usage: Usage | None = None
        for round_ in range(MAX_CONTINUATIONS + 1):
            current = request
            if parts:
                messages = [*request.messages, AssistantMessage(parts=parts)]
                current = request.model_copy(update={"messages": messages})
            decoders: list[StreamDecoder] = []
            done: ResponseDone | None = None
            budget = _Budget.for_request(request, self._settings)
            events = self._stream_events(self._body(current), lambda: self._new_decoder(request), decoders, budget)
            async with aclosing(events):
                async for event in events:
                    if isinstance(event, ResponseDone):
                        done = event
                    else:
                        yield event
            if done is None:  # every attempt ends with its final events or raises; kept for the type checker
                raise self._identity.error(ProviderStreamError, "the stream ended without its final event")
            paused = decoders[-1].paused and done.cut is None
            if round_ == 0 and not paused:
                yield done
                return
            parts = [*parts, *done.message.parts]
            if done.usage is not None:
                usage = done.usage if usage is None else usage + done.usage
            if not paused or round_ == MAX_CONTINUATIONS:
                if paused:
                    _log.warning("provider_pause_limit", provider=self.provider_id, continuations=round_)
                message = AssistantMessage(parts=parts, echo=done.message.echo)
                yield done.model_copy(update={"message": message, "usage": usage})
                return
            _log.info("provider_pause_continued", provider=self.provider_id, round=round_ + 1)

    async def _stream_events(
        self,
        body: dict[str, Any],
        new_decoder: Callable[[], StreamDecoder],
        decoders: list[StreamDecoder],
        budget: _Budget,
    ) -> AsyncGenerator[ProviderEvent, None]:
        """POST ``body`` and yield the decoded events, retrying only before the first one; each attempt's decoder
        is appended to ``decoders``."""
        provider = self.provider_id
        attempt = 0
        while True:
            started = False
            decoder = new_decoder()
            decoders.append(decoder)
            try:
                async with aclosing(self._attempt(body, decoder, budget.fresh())) as events:
                    async for event in events:
                        started = True
                        yield event
                return
            except TransientFailure as failure:
                if started:
                    reason = str(failure.error).removeprefix(f"{provider}: ")
                    raise self._identity.error(
                        ProviderStreamError,
                        f"the stream broke off after output started: {reason}",
                        status=failure.error.status,
                    ) from failure.__cause__
                if attempt >= self._max_retries:
                    failure.error.retries = attempt
                    raise failure.error from failure.__cause__
                delay = retry_delay(attempt, retry_after=failure.retry_after, random=self._random.random)
                attempt += 1
                _log.warning(
                    "provider_retry",
                    provider=provider,
                    attempt=attempt,
                    max_retries=self._max_retries,
                    delay_s=round(delay, 3),
                    status=failure.error.status,
                    reason=str(failure.error),
                )
                reason = str(failure.error).removeprefix(f"{provider}: ")
                yield RetryWait(attempt=attempt, max_retries=self._max_retries, delay_s=delay, reason=reason)
                await self._sleep(delay)

    async def _attempt(
        self, body: dict[str, Any], decoder: StreamDecoder, budget: _Budget
    ) -> AsyncGenerator[ProviderEvent, None]:
        identity, url = self._identity, self._url
        with map_httpx_errors(identity, url):
            async with self._client.stream("POST", url, json=body) as response:
                if not response.is_success:
                    content = await response.aread()
                    error = error_for_response(
                        identity, status=response.status_code, headers=response.headers, body=content, url=url
                    )
                    raise error
                content_type = response.headers.get("content-type", "")
                if "text/event-stream" not in content_type:
                    content = await response.aread()
                    raise identity.error(
                        ProviderStreamError,
                        f"expected an event stream from {url}, got {content_type or 'no content type'}: "
                        f"{content[:300].decode('utf-8', 'replace')}",
                    )
                parser = SseParser(max_bytes=MAX_SSE_EVENT_BYTES)
                final: list[ProviderEvent] | None = None
                cut: str | None = None
                chunks = cast(AsyncGenerator[bytes, None], response.aiter_bytes())
                async with aclosing(chunks):
                    async for chunk in chunks:
                        budget.read(len(chunk))
                        try:
                            messages = parser.feed(chunk)
                        except EventTooLarge as exc:
                            cut = str(exc)
                            break
                        for message in messages:
                            events = decoder.feed(message)
                            if decoder.done:
                                final = events
                                break
                            for event in events:
                                yield event
                                budget.produced(event)
                            cut = budget.passed()
                            if cut is not None:
                                break
                        if final is not None or cut is not None:
                            break
                        cut = budget.passed()
                        if cut is not None:
                            break
                    if final is not None:
                        await _drain(chunks)
                if cut is not None:
                    _log.warning("provider_response_cut", provider=self.provider_id, reason=cut)
                    final = decoder.cut(cut)
                if final is None:
                    for message in parser.flush():
                        events = decoder.feed(message)
                        if decoder.done:
                            final = events
                            break
                        for event in events:
                            yield event
                    if final is None:
                        final = decoder.finish()
                for event in final:
                    yield event


class _Budget:
    """What one response may still stream: characters of output and bytes of stream (``core.bounds``)."""

    def __init__(self, max_chars: int, max_output_tokens: int | None):
        self.max_chars = max_chars
        self.max_output_tokens = max_output_tokens
        self.chars = 0
        self.bytes = 0

    @classmethod
    def for_request(cls, request: ProviderRequest, settings: ProviderSettings) -> _Budget:
        tokens = request.max_output_tokens or settings.max_output_tokens(request.model)
        return cls(response_char_limit(tokens), tokens)

    def fresh(self) -> _Budget:
        """The same bounds for one attempt (a retry starts from nothing)."""
        return _Budget(self.max_chars, self.max_output_tokens)

    def read(self, count: int) -> None:
        self.bytes += count

    def produced(self, event: ProviderEvent) -> None:
        if isinstance(event, TextDelta | ThinkingDelta):
            self.chars += len(event.text)
        elif isinstance(event, ToolCallDelta):
            self.chars += len(event.arguments)

    def passed(self) -> str | None:
        """Why reading must stop now, if it must."""
        if self.chars > self.max_chars:
            limit = f"{self.max_output_tokens:,} tokens" if self.max_output_tokens else "the default output limit"
            return (
                f"the response passed {self.max_chars:,} characters ({OUTPUT_MARGIN} times its output limit of"
                f" {limit}); the agent stopped reading it"
            )
        if self.bytes > MAX_RESPONSE_BYTES:
            return f"the response's stream passed {MAX_RESPONSE_BYTES:,} bytes; the agent stopped reading it"
        return None


async def _drain(chunks: AsyncGenerator[bytes, None]) -> None:
    """Read what follows the final event, so the connection can be reused; give up quietly on any trouble."""
    with anyio.move_on_after(DRAIN_TIMEOUT_S), contextlib.suppress(httpx.TransportError):
        async for _ in chunks:
            pass
