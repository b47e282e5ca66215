"""Which ACP version a connection speaks: the rule of the TS SDK's protocol router, as pure functions.

``negotiate`` picks the version at ``initialize``: the highest configured version at or below the one the client
asked for. With only v1 configured every request gets v1 (the SDK's legacy fallback). Otherwise:

- an integer ``0..65535`` below every configured version (``0``) is ``-32022`` "Unsupported protocol version", with
  ``data: {"requested": n, "supported": [1, 2]}``;
- an integer outside ``0..65535`` is ``-32602`` (the schema's ``ProtocolVersion`` is a ``uint16``);
- a value that is no integer at all gets v1, the version every client before v2 speaks: a decimal string is read
  as its number, and anything else (the date strings of pre-1.0 drafts, ``true``, ``null``) falls back to v1.
  That keeps today's leniency for odd legacy values, and only for them (a v2 client always sends the integer 2).

``repeat_refusal`` is the router's rule for a second ``initialize`` on a connection whose version is fixed: a v2
connection accepts a repeat that asks for 2 or later before any other request, and refuses a lower one or one that
comes after other requests (``-32600``); a v1 connection keeps answering repeats as it always did.
``request_id_refusal`` is the v2 rule on the first ``initialize``'s id (a string or an integer).

No I/O, no connection state: the connection (``protocol/handshake.py``) keeps the version and calls these.
"""

from __future__ import annotations

from collections.abc import Sequence

from hermes_acp.errors import InvalidParamsError, WireErrorCode
from hermes_acp.jsonrpc.boundary import ClientRequestError

__all__ = [
    "INVALID_REQUEST",
    "SUPPORTED_VERSIONS",
    "UNSUPPORTED_VERSION",
    "negotiate",
    "repeat_refusal",
    "request_id_refusal",
]

SUPPORTED_VERSIONS: tuple[int, ...] = (1, 2)
"""The versions this server speaks, lowest first."""
UNSUPPORTED_VERSION: WireErrorCode = -32022
"""ACP's "Unsupported protocol version" (new in the 2.4.0 schema's ``ErrorCode``)."""
INVALID_REQUEST: WireErrorCode = -32600
_MAX_VERSION = 65_535


def negotiate(requested: object, supported: Sequence[int] = SUPPORTED_VERSIONS) -> int:
    """The version a connection speaks for a client that asked for ``requested`` (see the module docstring)."""
    if tuple(supported) == (1,):
        return 1
    version = _as_integer(requested)
    if version is None:
        return min(supported)
    if not 0 <= version <= _MAX_VERSION:
        raise InvalidParamsError(
            f"protocolVersion: {version} is not a protocol version (an integer from 0 to {_MAX_VERSION})",
            field="protocolVersion",
        )
    usable = [v for v in supported if v <= version]
    if not usable:
        raise ClientRequestError(
            UNSUPPORTED_VERSION,
            f"Unsupported protocol version {version}: this agent speaks {', '.join(map(str, sorted(supported)))}",
            {"requested": version, "supported": sorted(supported)},
        )
    return max(usable)


def _as_integer(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdecimal():
        return int(value)
    return None


def repeat_refusal(version: int, requested: object, *, other_requests: bool) -> ClientRequestError | None:
    """Why a repeated ``initialize`` on a connection that speaks ``version`` is refused; None when it is answered.
    ``other_requests``: the connection has sent requests other than ``initialize`` since its first one."""
    if version < 2:
        return None
    if other_requests:
        return ClientRequestError(INVALID_REQUEST, "ACP v2 initialize must not be repeated after other requests")
    asked = _as_integer(requested)
    if asked is None or asked < 2:
        return ClientRequestError(
            INVALID_REQUEST, "a repeated initialize must request protocol version 2 or later on this connection"
        )
    return None


def request_id_refusal(version: int, request_id: object) -> ClientRequestError | None:
    """Why the ``initialize`` that chose ``version`` cannot be answered for its id (v2: a string or an integer,
    never null); None when it can."""
    if version >= 2 and (isinstance(request_id, bool) or not isinstance(request_id, str | int)):
        return ClientRequestError(INVALID_REQUEST, "ACP v2 request IDs must be strings or integers")
    return None
