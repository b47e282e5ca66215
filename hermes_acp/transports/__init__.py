"""The transports: one module per way a client reaches the server, and the relays. They know bytes and JSON-RPC
lines (``jsonrpc``), never ACP's methods; each hands every connection it makes to a ``serve(connection)`` callable
it was given, and none imports the app.

The package's ``__init__`` loads nothing: the front door (``frontdoor``), host control (``control``) and ``paths``
must start in milliseconds and import only the standard library, never the server.
"""

__all__: list[str] = []
"""Nothing is re-exported here: import the module that has the name."""
