"""How long to wait before retrying a model request: jittered exponential backoff, or ``Retry-After``.

``retry_delay`` is the whole policy. The server's own hint wins when it gives one (``retry-after-ms`` as
OpenAI sends it, ``Retry-After`` in seconds or as an HTTP date), capped so a turn never stalls for long;
otherwise the delay doubles from ``INITIAL_BACKOFF_S`` with "equal jitter" (half fixed, half random).
This module decides timing only: which failures are retried, and when, is the business of ``_http.py``.
"""

from __future__ import annotations

import email.utils
from collections.abc import Callable, Mapping

__all__ = [
    "INITIAL_BACKOFF_S",
    "MAX_BACKOFF_S",
    "RETRY_AFTER_CAP_S",
    "parse_retry_after",
    "retry_delay",
]

INITIAL_BACKOFF_S = 0.5
MAX_BACKOFF_S = 16.0
RETRY_AFTER_CAP_S = 60.0
"""The longest server-requested wait we honour; longer requests are shortened to this."""


def parse_retry_after(headers: Mapping[str, str], *, now: float) -> float | None:
    """Seconds the server asked us to wait, or None when it gave no usable hint. ``now`` is Unix time."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            value = float(milliseconds)
        except ValueError:
            value = -1.0
        if value >= 0:
            return value / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        return seconds if seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)


def retry_delay(attempt: int, *, retry_after: float | None, random: Callable[[], float]) -> float:
    """The wait before retry number ``attempt + 1`` (``attempt`` counts from 0)."""
    if retry_after is not None:
        return min(retry_after, RETRY_AFTER_CAP_S)
    ceiling = min(MAX_BACKOFF_S, INITIAL_BACKOFF_S * 2.0**attempt)
    return ceiling / 2 + random() * ceiling / 2
