"""How the addresses of ``[host]`` are written: the remote doors (``listen``), the browser origins a door admits
(``allowed_origins``) and the host names it answers to besides its own address (``allowed_hosts``). Each is read,
refused with a sentence that shows how to write it, and kept in the one form the door compares against (lowercase,
no trailing slash, an IPv6 address in brackets when a port follows).

This module reads strings; the door's admission (``transports/admission.py``) applies what it returns.
"""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["door_url", "host_name", "origin"]


def door_url(door: str) -> str:
    """A remote door: ``ws://HOST:PORT`` or ``http://HOST:PORT`` (both serve WebSocket and Streamable HTTP)."""
    try:
        parts = urlsplit(door)
        valid = parts.scheme in ("ws", "http") and bool(parts.hostname) and parts.port is not None
    except ValueError:  # a port that is not a number, a bracket left open
        valid = False
    if not valid:
        raise ValueError(f"{door!r} must be ws://HOST:PORT or http://HOST:PORT")
    return door


def origin(written: str) -> str:
    """An origin, ``scheme://host[:port]``, lowercase without a trailing slash (as browsers send it)."""
    kept = written.strip().lower().removesuffix("/")
    if not _url_parts(kept, scheme=True):
        raise ValueError(f"{written!r} is not an origin: write scheme://host[:port], e.g. https://app.example")
    return kept


def host_name(written: str) -> str:
    """A host name, optionally ``:port``, lowercase (an IPv6 address in brackets when with a port)."""
    parts = _url_parts(f"//{written.strip().lower()}", scheme=False)
    if not parts:
        raise ValueError(f"{written!r} is not a host name: write NAME or NAME:PORT, e.g. acp.example.com")
    name, port = parts
    return name if port is None else f"[{name}]:{port}" if ":" in name else f"{name}:{port}"


def _url_parts(text: str, *, scheme: bool) -> tuple[str, int | None] | None:
    """The host and port of ``text`` when it is nothing but ``[scheme:]//host[:port]``; None otherwise."""
    try:
        parts = urlsplit(text)
        name, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number, a bracket left open
        return None
    if not name or bool(parts.scheme) != scheme or parts.username is not None:
        return None
    if parts.path or parts.query or parts.fragment:
        return None
    return name, port
