"""What both vendor stream decoders share: JSON events, the done flag, and the end of the body.

``JsonStreamDecoder`` implements ``_http.StreamDecoder`` up to the vendor's own event names: ``feed`` skips
empty data, parses the rest as one JSON object (anything else is a ``ProviderStreamError``) and hands it to
the subclass's ``_event``; ``finish`` gives the final ``ResponseDone`` when the vendor already sent its stop
reason, or raises the transient "incomplete" failure (nothing was lost, so the request may be sent again).
Subclasses collect the message in ``self._assembler`` and call ``_complete`` at the vendor's final event.
This module knows no vendor's event names and no HTTP.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from hermes_acp.errors import ProviderStreamError, ProviderUnavailableError

from ._assembly import MessageAssembler
from ._http_errors import ProviderIdentity, TransientFailure
from ._sse import SseMessage
from .base import ProviderEvent, ResponseDone

__all__ = ["SERVER_RESULT_CHARS", "JsonStreamDecoder", "as_int", "capped"]

SERVER_RESULT_CHARS = 4000
"""How much of a provider-side tool's output a card shows."""


def as_int(value: object) -> int:
    """``value`` when it is an integer (not a bool), else 0: indexes as vendors send them."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def as_count(value: object) -> int:
    """A token count as vendors send it: ``value`` when it is an integer of at least 0 (not a bool), else 0 (a
    negative count would take back what the budget was charged)."""
    return max(0, as_int(value))


def capped(text: str, limit: int = SERVER_RESULT_CHARS) -> str:
    """``text``, cut to ``limit`` characters with a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


class JsonStreamDecoder(ABC):
    """One response's decoder; a subclass per wire format (see the module docstring)."""

    INCOMPLETE: ClassVar[str]
    """What ``finish`` says when the body ended before the stop reason."""

    def __init__(self, identity: ProviderIdentity):
        self._identity = identity
        self._assembler = MessageAssembler()
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    @property
    def paused(self) -> bool:
        """The vendor paused the response (only Anthropic does: its decoder overrides this)."""
        return False

    def feed(self, message: SseMessage) -> list[ProviderEvent]:
        data = message.data
        if self._done or not data or data.isspace():
            return []
        try:
            payload = json.loads(data)
        except ValueError as exc:
            raise self._identity.error(ProviderStreamError, f"an event is not JSON: {data[:200]!r}") from exc
        if not isinstance(payload, dict):
            raise self._identity.error(ProviderStreamError, f"an event is not a JSON object: {data[:200]!r}")
        return self._event(payload, message.event)

    def finish(self) -> list[ProviderEvent]:
        if not self._stopped():
            raise TransientFailure(self._identity.error(ProviderUnavailableError, self.INCOMPLETE))
        return self._complete()

    def cut(self, reason: str) -> list[ProviderEvent]:
        """Stop here (the response passed a bound): the final events of what arrived, ended as ``max_tokens``."""
        events = self._complete()
        done = events[-1]
        assert isinstance(done, ResponseDone)
        return [*events[:-1], done.model_copy(update={"stop_reason": "max_tokens", "cut": reason})]

    def _complete(self) -> list[ProviderEvent]:
        """The final events: what the text streams still held, then the whole response; ``done`` is true after."""
        self._done = True
        return [*self._assembler.finish(), self._response_done()]

    @abstractmethod
    def _event(self, payload: dict[str, Any], name: str) -> list[ProviderEvent]:
        """The events one JSON payload carries; ``name`` is the SSE event name ("message" when none)."""

    @abstractmethod
    def _stopped(self) -> bool:
        """True once the stop reason arrived: a body that ends now holds the whole answer."""

    @abstractmethod
    def _response_done(self) -> ResponseDone:
        """The whole message, its stop reason and usage."""
