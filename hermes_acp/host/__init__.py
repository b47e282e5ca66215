"""The session host: one long-lived process per ``$HERMES_ACP_HOME`` that owns the store and every live session,
and the front door an editor starts to reach it (docs/architecture.md §14).

The package's ``__init__`` loads nothing: the front door (``frontdoor``) must start in milliseconds and imports
only ``paths`` and the standard library, never the server.
"""
