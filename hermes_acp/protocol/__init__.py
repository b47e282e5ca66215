"""The ACP surface: one ``Connection`` per client (the dispatcher of ``jsonrpc`` with the handshake), ACP's routes,
ACP's error codes, and ACP's shapes as plain JSON and small pydantic models. The transports that carry it are in
``transports``.

The server imports no acp SDK (``wire.py`` says why). Import the modules directly; this ``__init__`` stays empty so
that importing ``hermes_acp.protocol.connection`` (what stdio needs to answer ``initialize`` before the rest of the
server has loaded: docs/architecture.md §3) pulls in nothing else.
"""

__all__: list[str] = []
"""Nothing is re-exported here: import the module that has the name."""
