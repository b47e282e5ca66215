"""The providers' TLS settings (``providers/_tls.py``): one verifying context for every https client of the process,
built as httpx builds its default; a plain-http client's context trusts nothing, so it could never speak TLS
unverified."""

from __future__ import annotations

import ssl

from hermes_acp.providers._tls import verify_for


def test_every_https_client_shares_one_verifying_context() -> None:
    first, second = verify_for("https://api.example/v1"), verify_for("HTTPS://other.example")
    assert first is second
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname
    assert first.cert_store_stats()["x509_ca"] > 0, "the CA bundle is loaded"


def test_a_plain_http_client_gets_a_context_that_trusts_nothing() -> None:
    context = verify_for("http://127.0.0.1:11434/v1")
    assert context is not verify_for("https://api.example/v1")
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0, "no certificate would be trusted"
