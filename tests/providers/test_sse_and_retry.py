"""Units: the SSE line parser, Retry-After parsing, the backoff policy, error-body dialects."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from hermes_acp.providers._http_errors import message_from_error_body
from hermes_acp.providers._retry import (
    INITIAL_BACKOFF_S,
    MAX_BACKOFF_S,
    RETRY_AFTER_CAP_S,
    parse_retry_after,
    retry_delay,
)
from hermes_acp.providers._sse import SseMessage, SseParser


def parse(text: str) -> list[SseMessage]:
    parser = SseParser()
    messages = [parser.feed_line(line) for line in text.split("\n")]
    return [m for m in messages if m is not None] + parser.flush()


def test_sse_events_data_joining_comments_and_the_optional_space() -> None:
    text = ": keep-alive\nevent: ping\ndata: {}\n\ndata:first\ndata: second\n\nevent: lone\n\ndata: tail"

    assert parse(text) == [
        SseMessage(event="ping", data="{}"),
        SseMessage(event="message", data="first\nsecond"),
        SseMessage(event="message", data="tail"),
    ]


NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": format_datetime(datetime(2026, 1, 1, 12, 0, 7, tzinfo=UTC), usegmt=True)}, 7.0),
        ({"retry-after": format_datetime(datetime(2025, 1, 1, tzinfo=UTC), usegmt=True)}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-4"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


def test_backoff_doubles_with_equal_jitter_and_is_capped() -> None:
    assert retry_delay(0, retry_after=None, random=lambda: 0.0) == INITIAL_BACKOFF_S / 2
    assert retry_delay(0, retry_after=None, random=lambda: 1.0) == INITIAL_BACKOFF_S
    assert retry_delay(3, retry_after=None, random=lambda: 1.0) == INITIAL_BACKOFF_S * 8
    assert retry_delay(30, retry_after=None, random=lambda: 1.0) == MAX_BACKOFF_S
    assert retry_delay(0, retry_after=5.0, random=lambda: 1.0) == 5.0
    assert retry_delay(0, retry_after=3600.0, random=lambda: 1.0) == RETRY_AFTER_CAP_S


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"error": {"message": "bad model", "type": "invalid_request_error"}}', "bad model (invalid_request_error)"),
        (
            b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
            "Overloaded (overloaded_error)",
        ),
        (b'{"error": "model \'x\' not found"}', "model 'x' not found"),
        (b'{"object": "error", "message": "too long", "code": 400}', "too long"),
        (
            b'[{"error": {"code": 400, "message": "missing a signature", "status": "INVALID_ARGUMENT"}}]',
            "missing a signature",
        ),
        (b"<html>502 Bad Gateway</html>", "<html>502 Bad Gateway</html>"),
        (b"", "(empty body)"),
    ],
)
def test_error_messages_are_read_from_every_dialect(body: bytes, expected: str) -> None:
    assert message_from_error_body(body) == expected
