"""How a request to an MCP server can fail, in terms the at-most-once rules need (no SDK types).

``TransportDropped``: the connection broke (process gone, pipe closed, HTTP connection failed, a gateway answered
408/502/503/504) — whether the server acted on the request is unknown. ``ServerRejected``: the server answered with
an error, or with something that is not a valid answer — it did answer, so the outcome is known to be a failure (or
at least not silent).
"""

from __future__ import annotations

__all__ = ["ServerRejected", "TransportDropped"]


class TransportDropped(Exception):
    """The connection to the server broke before an answer came."""


class ServerRejected(Exception):
    """The server answered with a JSON-RPC error or an answer we cannot read."""
