"""The TLS settings of the providers' HTTP clients: one verifying context for the whole process.

httpx builds a new SSL context for every client it makes, loading the CA bundle each time (about 3 MB and tens of
milliseconds apiece); a provider is built per provider, per routed gateway and per client environment, and a model
listing makes a client of its own. ``verify_for`` hands every client for an ``https`` URL the same context, built
the first time one needs it exactly as httpx builds its default (``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` honoured,
else certifi's bundle). A client for a plain ``http`` URL (a model on this machine or the local network) never
speaks TLS, since redirects are not followed: it gets a context that trusts no certificate at all, so that if it
ever did, the handshake would fail rather than go unverified.

It knows nothing about the vendors.
"""

from __future__ import annotations

import functools
import ssl
from urllib.parse import urlsplit

import httpx

__all__ = ["verify_for"]


def verify_for(base_url: str) -> ssl.SSLContext:
    """The SSL context a client for ``base_url`` is made with (see the module docstring)."""
    if urlsplit(base_url).scheme.lower() == "http":
        return _trusting_nothing()
    return _verifying()


@functools.cache
def _verifying() -> ssl.SSLContext:
    return httpx.create_ssl_context()


@functools.cache
def _trusting_nothing() -> ssl.SSLContext:
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies hostnames and certificates, with no CA to trust
