"""Translate everything that can go wrong in a provider's HTTP exchange into ``hermes_acp.errors``.

Three sources, one vocabulary:

* httpx exceptions (``map_httpx_errors``, in the style of httpx's own ``map_httpcore_exceptions``): a connection
  refused becomes ``ProviderUnreachableError``, broken streams ``ProviderUnavailableError``, timeouts
  ``ProviderTimeoutError``;
* HTTP error responses (``error_for_response``): 401/403 → ``ProviderAuthError`` naming the env var to set,
  429 → ``ProviderRateLimitError``, 408/5xx → ``ProviderUnavailableError``, other 4xx and redirects →
  ``ProviderRequestError`` carrying the provider's own message from the body, or ``ContextLengthError`` when
  that body says the prompt does not fit (``is_context_length``: the wording of OpenAI, Anthropic, Ollama,
  vLLM, LM Studio, llama.cpp and OpenRouter);
* error events inside a stream (``error_for_stream_event``): the status their ``type`` implies, classified
  as above (``_classify`` is the one status → class and retry decision).

Failures worth retrying come wrapped in ``TransientFailure`` (with the server's ``Retry-After`` hint); the
retry loop in ``_http.py`` decides whether to wait and try again or to raise the wrapped error. Every error is
made by ``ProviderIdentity.error``, which prefixes the provider id and redacts the message, so an API key echoed
by a server never reaches a log or an exception.
This module knows no vendor's request or stream format.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import httpx

from hermes_acp.errors import (
    ContextLengthError,
    ProviderAuthError,
    ProviderError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderStreamError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    ProviderUnreachableError,
)

from ._retry import parse_retry_after

__all__ = [
    "ProviderIdentity",
    "TransientFailure",
    "error_for_response",
    "error_for_stream_event",
    "is_context_length",
    "map_httpx_errors",
    "message_from_error_body",
]

MAX_MESSAGE_CHARS = 600
MIN_SECRET_CHARS = 4
"""Shorter "keys" (placeholders such as "x") are not secrets; replacing them would garble every message."""
REDACTED = "[redacted]"
_E = TypeVar("_E", bound=ProviderError)
_CONTEXT_LENGTH = re.compile(
    r"context_length_exceeded"  # OpenAI's code
    r"|prompt is too long"  # Anthropic: "prompt is too long: 208310 tokens > 200000 maximum"
    r"|exceed context limit"  # Anthropic: "input length and `max_tokens` exceed context limit: …"
    r"|maximum context length"  # OpenAI, vLLM, OpenRouter ("This endpoint's maximum context length is …")
    r"|exceeds the context length"  # Ollama: "the input length exceeds the context length"
    r"|context the overflows|greater than the context length"  # LM Studio
    r"|exceeds the available context size|exceed_context_size_error|n_keep \(\d+\) >= n_ctx",  # llama.cpp
    re.IGNORECASE,
)
_CONTEXT_LENGTH_STATUSES = frozenset({400, 413, 422})


@dataclass(frozen=True)
class ProviderIdentity:
    """Who is talking (for messages) and the one secret that must never appear in them."""

    provider_id: str
    api_key_env: str | None
    secret: str | None = field(default=None, repr=False)

    def redact(self, text: str) -> str:
        """``text`` without the API key, shortened to a readable length."""
        if self.secret and len(self.secret) >= MIN_SECRET_CHARS:
            text = text.replace(self.secret, REDACTED)
        if len(text) > MAX_MESSAGE_CHARS:
            text = text[:MAX_MESSAGE_CHARS] + "…"
        return text

    def error(self, cls: type[_E], text: str, *, status: int | None = None) -> _E:
        """A ``cls`` error whose message is ``"<provider id>: <text>"``, redacted: the one way errors are made here."""
        return cls(self.redact(f"{self.provider_id}: {text}"), provider=self.provider_id, status=status)

    def auth_hint(self) -> str:
        if self.api_key_env:
            action = "to a valid key" if self.secret else "to your API key"
            return f"Set the environment variable {self.api_key_env} {action}."
        return (
            f"Set api_key_env for [providers.{self.provider_id}] in config.toml and export that variable "
            "with your API key."
        )


class TransientFailure(Exception):
    """A failure that may pass if the request is sent again: ``error`` is what to raise when it is not."""

    def __init__(self, error: ProviderError, *, retry_after: float | None = None):
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


@contextmanager
def map_httpx_errors(identity: ProviderIdentity, url: str) -> Iterator[None]:
    """Re-raise httpx exceptions as the most specific ``ProviderError`` (transient ones wrapped)."""
    try:
        yield
    except httpx.ConnectTimeout as exc:
        error = identity.error(ProviderTimeoutError, f"could not connect to {url} within the connect timeout")
        raise TransientFailure(error) from exc
    except httpx.TimeoutException as exc:
        text = f"no answer from {url} within the timeout ({type(exc).__name__})"
        raise identity.error(ProviderTimeoutError, text) from exc
    except httpx.ConnectError as exc:
        raise TransientFailure(identity.error(ProviderUnreachableError, f"cannot connect to {url}: {exc}")) from exc
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError, httpx.CloseError) as exc:
        text = f"the connection to {url} broke: {exc}"
        raise TransientFailure(identity.error(ProviderUnavailableError, text)) from exc
    except (httpx.UnsupportedProtocol, httpx.InvalidURL, httpx.LocalProtocolError) as exc:
        raise identity.error(ProviderRequestError, f"cannot send a request to {url}: {exc}") from exc
    except httpx.DecodingError as exc:
        raise identity.error(ProviderStreamError, f"the response from {url} could not be decoded: {exc}") from exc
    except httpx.HTTPError as exc:
        text = f"request to {url} failed: {type(exc).__name__}: {exc}"
        raise identity.error(ProviderUnavailableError, text) from exc


def is_context_length(status: int, text: str) -> bool:
    """Whether an error with ``status`` and body (or message) ``text`` says the prompt does not fit the context."""
    return status in _CONTEXT_LENGTH_STATUSES and _CONTEXT_LENGTH.search(text) is not None


def message_from_error_body(body: bytes) -> str:
    """The provider's own error message from an error body, whatever the dialect; the raw text otherwise.

    Understands OpenAI ``{"error": {"message"}}``, Anthropic ``{"type": "error", "error": {"type",
    "message"}}``, Ollama / LM Studio ``{"error": "<text>"}``, vLLM ``{"object": "error", "message"}`` and Gemini's
    ``[{"error": {…}}]``.
    """
    text = body.decode("utf-8", errors="replace").strip()
    try:
        payload = json.loads(text)
    except ValueError:
        return text or "(empty body)"
    if isinstance(payload, list) and len(payload) == 1:  # Gemini's OpenAI endpoint wraps its error in a list
        payload = payload[0]
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict):
            message = error.get("message")
            if isinstance(message, str) and message:
                kind = error.get("type")
                return f"{message} ({kind})" if isinstance(kind, str) and kind else message
        if isinstance(error, str) and error:
            return error
        for key in ("message", "detail"):
            value = payload.get(key)
            if isinstance(value, str) and value:
                return value
    return text or "(empty body)"


def _classify(status: int) -> tuple[type[ProviderError], bool]:
    """The error class for an HTTP status (sent or implied by an in-stream error) and whether it is transient."""
    if status in (401, 403):
        return ProviderAuthError, False
    if status == 429:
        return ProviderRateLimitError, True
    if status == 408 or status >= 500:
        return ProviderUnavailableError, True
    return ProviderRequestError, False


def _classified(
    identity: ProviderIdentity, status: int, text: str, *, retry_after: float | None = None, raw: str = ""
) -> ProviderError | TransientFailure:
    cls, transient = _classify(status)
    if is_context_length(status, raw or text):
        cls = ContextLengthError
    if cls is ProviderAuthError:
        text = f"{text}. {identity.auth_hint()}"
    error = identity.error(cls, text, status=status)
    return TransientFailure(error, retry_after=retry_after) if transient else error


_WHAT_FAILED: dict[type[ProviderError], str] = {
    ContextLengthError: "the request does not fit the model's context window",
    ProviderAuthError: "the provider rejected the request's credentials",
    ProviderRateLimitError: "rate limited",
    ProviderUnavailableError: "the provider failed",
    ProviderRequestError: "the provider rejected the request",
}


def error_for_response(
    identity: ProviderIdentity,
    *,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    url: str,
    now: float | None = None,
) -> ProviderError | TransientFailure:
    """The error for a non-success HTTP response; the caller raises it."""
    if 300 <= status < 400:
        location = headers.get("location", "(no location)")
        text = (
            f"HTTP {status} from {url} redirects to {location}; redirects are not followed "
            "(the API key stays with its own host). Set base_url to the final address."
        )
        return identity.error(ProviderRequestError, text, status=status)
    raw = body.decode("utf-8", errors="replace")
    what = _WHAT_FAILED[ContextLengthError if is_context_length(status, raw) else _classify(status)[0]]
    text = f"{what} (HTTP {status}: {message_from_error_body(body)})"
    if status == 404:
        text += ". Check base_url and the model id."
    retry_after = parse_retry_after(headers, now=time.time() if now is None else now)
    return _classified(identity, status, text, retry_after=retry_after, raw=raw)


_STREAM_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "api_error": 500,
    "server_error": 500,
    "overloaded_error": 529,
}


def error_for_stream_event(identity: ProviderIdentity, error: object) -> ProviderError | TransientFailure:
    """The error for an error reported inside a stream (Anthropic ``event: error``, OpenRouter ``{"error"}``).

    ``error`` is the vendor's error value as sent: its ``type`` (or a string ``code``) names the kind, which
    implies a status; an integer ``code`` is the status itself.
    """
    kind: object = ""
    status: int | None = None
    if isinstance(error, dict):
        kind = error.get("type") or error.get("code")
        code = error.get("code")
        status = code if isinstance(code, int) and not isinstance(code, bool) else None
        message = error.get("message")
        detail = message if isinstance(message, str) else json.dumps(error)[:300]
    else:
        detail = str(error)
    kind = kind if isinstance(kind, str) else ""
    status = status or _STREAM_ERROR_STATUS.get(kind, 500)
    raw = json.dumps(error) if isinstance(error, dict) else detail
    return _classified(identity, status, f"the stream reported {kind or 'an error'}: {detail}", raw=raw)
