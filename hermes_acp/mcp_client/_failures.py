"""How a request to an MCP server can fail, in terms the at-most-once rules need (no SDK types).

From the wire (``_wire``): ``TransportDropped``: the connection broke (process gone, pipe closed, HTTP connection
failed, a gateway answered 408/502/503/504) — whether the server acted on the request is unknown.
``ServerRejected``: the server answered with an error, or with something that is not a valid answer — it did
answer, so the outcome is known to be a failure (or at least not silent).

From the supervised connection (``supervisor``), which each user turns into its own error for the model:
``NotConnected``: no live connection could be had; nothing was sent. ``RequestLost``: the answer never came
(``failure``: a timeout or a broken transport) and the request was not sent again — a request that is not
replay-safe after one attempt, a replay-safe one after two. ``SignInRequired`` (a ``NotConnected``): the server
answered 401 and the stored tokens could not be refreshed (or there are none); nothing was sent, the user must sign
in. ``TokensStale`` (a ``NotConnected``): the server refused an access token that can be refreshed; nothing was
sent. ``SignInFailed``: an interactive sign-in did not work (the message says why).
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "Failure",
    "NotConnected",
    "RequestLost",
    "ServerRejected",
    "SignInFailed",
    "SignInRequired",
    "TokensStale",
    "TransportDropped",
]

Failure = Literal["timeout", "transport"]


class TransportDropped(Exception):
    """The connection to the server broke before an answer came."""


class ServerRejected(Exception):
    """The server answered with a JSON-RPC error or an answer we cannot read."""


class NotConnected(Exception):
    """No live connection could be had (the server failed to start, did not start in time, or is closing).

    Nothing was sent; the message says why."""


class SignInRequired(NotConnected):
    """The server wants the user to sign in (a 401 that the stored tokens could not answer); nothing was sent."""


class TokensStale(NotConnected):
    """The server refused an access token that can be refreshed (it expired earlier than it said, or was revoked
    alone); nothing was sent: a fresh connection refreshes it first."""


class SignInFailed(Exception):
    """An interactive sign-in did not work: declined, timed out, refused by the authorization server, or the
    server's metadata was not acceptable (a wrong issuer, a redirect to another host)."""


class RequestLost(Exception):
    """The answer to a request never came; it was not sent again (at most once)."""

    def __init__(self, failure: Failure, detail: str, *, replay_safe: bool, attempts: int):
        super().__init__(detail)
        self.failure: Failure = failure
        self.detail = detail
        self.replay_safe = replay_safe
        self.attempts = attempts

    @property
    def code(self) -> Literal["timeout_outcome_unknown", "transport_outcome_unknown"]:
        """What the model is told when the request may have acted (it was not replay-safe)."""
        return "timeout_outcome_unknown" if self.failure == "timeout" else "transport_outcome_unknown"
