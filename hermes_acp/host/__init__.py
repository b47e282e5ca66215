"""The session host process: one long-lived process per ``$HERMES_ACP_HOME`` that owns the store and every live
session (docs/architecture.md §14). Its doors are in ``transports``.

The package's ``__init__`` loads nothing.
"""

__all__: list[str] = []
"""Nothing is re-exported here: import the module that has the name."""
