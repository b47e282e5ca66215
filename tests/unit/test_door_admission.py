"""The remote door's admission on its own (``transports/admission.py``): the one token comparison, constant-time
(both sides reduced to equal-length digests, compared by ``hmac.compare_digest``), and which ``Host`` and
``Origin`` headers a door admits."""

from __future__ import annotations

import hmac
from typing import Any

import pytest
from starlette.datastructures import Headers

from hermes_acp.transports.admission import Admission, DoorPolicy, bearer_matches

TOKEN = b"a-token-of-forty-three-characters-xxxxxxxxx"


@pytest.mark.parametrize(
    ("header", "admitted"),
    [
        (f"Bearer {TOKEN.decode()}", True),
        (f"bearer  {TOKEN.decode()} ", True),
        (f"Bearer {TOKEN.decode()[:-1]}y", False),
        (f"Bearer {TOKEN.decode()[:-1]}", False),
        (f"Bearer {TOKEN.decode()}x", False),
        ("Bearer ", False),
        ("", False),
        (f"Basic {TOKEN.decode()}", False),
        (TOKEN.decode(), False),
        ("Bearer tökén-ünïcode", False),
    ],
)
def test_the_token_is_compared_in_constant_time_as_equal_length_digests(
    monkeypatch: pytest.MonkeyPatch, header: str, admitted: bool
) -> None:
    compared: list[tuple[Any, Any]] = []
    original = hmac.compare_digest

    def recording(a: Any, b: Any) -> bool:
        compared.append((a, b))
        return original(a, b)

    monkeypatch.setattr(hmac, "compare_digest", recording)
    assert bearer_matches(header, TOKEN) is admitted
    if header.lower().startswith("bearer "):
        assert len(compared) == 1, "the one comparison is hmac.compare_digest's"
        given, expected = compared[0]
        assert len(given) == len(expected) == 32, "digests: the token's length does not show either"


def _noop_app(*_: Any) -> Any:
    raise AssertionError("not called by refusal()")


def _refusal(door: tuple[str, int], headers: dict[str, str], **policy: Any) -> int | None:
    admission = Admission(_noop_app, DoorPolicy(TOKEN, **policy), door)
    found = admission.refusal(Headers({"authorization": f"Bearer {TOKEN.decode()}", **headers}), websocket=False)
    return found[0] if found else None


@pytest.mark.parametrize(
    ("host", "admitted"),
    [
        ("127.0.0.1:8765", True),
        ("localhost:8765", True),
        ("LOCALHOST:8765", True),
        ("[::1]:8765", True),
        ("127.0.0.1:8766", False),
        ("127.0.0.1", False),
        ("evil.example:8765", False),
        ("127.0.0.1:port", False),
        ("user@127.0.0.1:8765", False),
        ("127.0.0.1:8765/acp", False),
        ("[::1", False),
        ("", False),
        ("acp.example.test:9999", True),
        ("acp.example.test", True),
        ("proxy.test:443", True),
        ("proxy.test:444", False),
        ("proxy.test", False),
    ],
)
def test_a_loopback_door_admits_its_own_address_any_loopback_name_and_the_listed_hosts(
    host: str, admitted: bool
) -> None:
    listed = frozenset({"acp.example.test", "proxy.test:443"})
    assert (_refusal(("127.0.0.1", 8765), {"host": host}, allowed_hosts=listed) is None) is admitted


def test_a_door_outside_loopback_admits_its_own_name_and_no_loopback_alias() -> None:
    assert _refusal(("acp.internal", 9000), {"host": "acp.internal:9000"}) is None
    assert _refusal(("acp.internal", 9000), {"host": "localhost:9000"}) == 403
    assert _refusal(("0.0.0.0", 9000), {"host": "0.0.0.0:9000"}) is None
    assert _refusal(("0.0.0.0", 9000), {"host": "192.0.2.7:9000"}) == 403
    assert _refusal(("0.0.0.0", 9000), {"host": "192.0.2.7:9000"}, allowed_hosts=frozenset({"192.0.2.7"})) is None


@pytest.mark.parametrize(
    ("origin", "admitted"),
    [
        (None, True),
        ("https://app.example", True),
        ("HTTPS://App.Example", True),
        ("https://app.example:8443", False),
        ("http://app.example", False),
        ("http://evil.example", False),
        ("null", False),
        ("", False),
    ],
)
def test_an_origin_is_admitted_only_when_listed(origin: str | None, admitted: bool) -> None:
    headers = {"host": "127.0.0.1:8765", **({"origin": origin} if origin is not None else {})}
    allowed = frozenset({"https://app.example"})
    assert (_refusal(("127.0.0.1", 8765), headers, allowed_origins=allowed) is None) is admitted


def test_a_missing_token_is_401_over_http_and_403_for_an_upgrade() -> None:
    admission = Admission(_noop_app, DoorPolicy(TOKEN), ("127.0.0.1", 8765))
    headers = Headers({"host": "127.0.0.1:8765"})
    assert admission.refusal(headers, websocket=False) == (401, "Unauthorized: a valid bearer token is required")
    assert admission.refusal(headers, websocket=True) == (403, "Unauthorized: a valid bearer token is required")
