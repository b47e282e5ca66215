"""ACP v2 beside v1: the same log, another rendering.

A connection speaks v1 or v2, fixed at its ``initialize`` (``version.negotiate``). Everything below the protocol
layer is version-free (the stored events, the live updates, the session), so v2 is a set of pure translations the
connection, its routes and the client bridge choose by version:

- ``version``: the negotiation and the router's rules on ``initialize`` (repeats, request ids);
- ``wire``: the v2 request params we read (``parse`` from ``protocol/wire.py``);
- ``handshake``: the v2 ``initialize`` result (capability groups, auth methods with ``methodId`` and ``type``);
- ``render``: stored events and live updates as v2 ``session/update`` payloads, the turn's ``state_update``\\ s,
  permission requests, config options and commands in v2's shapes;
- ``replay``: what ``session/resume`` sends before it answers (the history, then one state snapshot).

Cursors, epochs and operation ids serve both versions and live beside this package (``protocol/reliable``).
"""

__all__: list[str] = []
"""Nothing is re-exported here: import the module that has the name."""
