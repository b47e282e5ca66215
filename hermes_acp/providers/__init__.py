"""Model providers behind one streaming seam.

``base`` is the seam (requests, the events a stream yields, the ``ModelProvider`` protocol), ``catalog`` the
models the configuration offers, ``registry`` one live provider per configured provider, ``openai`` and
``anthropic`` the HTTP providers (imported lazily by the registry, with httpx), ``scripted`` the test double.
The package imports none of them itself, so that opening a session does not load the provider seam.
"""

__all__: list[str] = []
"""Nothing is re-exported here: import the module that has the name."""
