"""JSON-RPC 2.0 over any link: newline-delimited framing, the dispatcher, the ``Writer`` port and ``ClientGone``, and
the one exception → wire boundary. Deliberately not ACP-aware: no method, session or ACP error code is known here
(protocol/ hands the dispatcher its error mapping).

Import the modules directly; this ``__init__`` stays empty so that answering ``initialize`` loads only what it uses.
"""

__all__: list[str] = []
"""Nothing is re-exported here: import the module that has the name."""
