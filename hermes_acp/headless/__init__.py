"""``hermes-acp exec``: one prompt run to its answer without an editor, for scripts and CI (docs/ci.md).

The server is the one an editor talks to, in this process, over an in-process link (``transports.memory``); the
client is ours (``client``): no second path through the session code. ``options`` reads the command line,
``policy`` answers permission requests without a person, ``report`` shows progress and keeps what the result needs,
``outcome`` maps how the run ended to its exit code, and ``run`` puts them together. Nothing here is imported by
the server; only ``cli`` imports ``run``.
"""

__all__: list[str] = []
"""Nothing is re-exported here: import the module that has the name."""
