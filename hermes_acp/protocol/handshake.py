"""``Handshake``: a connection's ``initialize``, the version it chooses, and what the client said in it.

It is the route the dispatcher has from the start, answered in milliseconds before the rest of the server has
loaded (no pydantic here). The first ``initialize`` fixes the connection's version for its life
(``v2.version.negotiate``: the TS SDK router's rule, the highest version we speak at or below the one asked for;
``-32022`` below every one), answered in that version's shape (``initialize.initialize_result`` for v1,
``v2.handshake.initialize_result`` for v2, whose ``info`` is read strictly: ``v2.handshake.read_client``). A
repeated ``initialize`` never changes the version: a v1 connection answers it as v1, a v2 connection refuses one
that asks for less than 2 or comes after other requests (``v2.version.repeat_refusal``; the routes say when other
requests came: ``requested``). A v2 ``initialize`` needs a string or integer id.

Both versions' answers carry ``_meta.hermes.remote`` (``reliable.meta.remote_advert``): the server epoch of the app
serving the connection (``adopt``), or, for a connection answered before its app exists (inline mode answers
``initialize`` while the server loads), one minted here that the app then takes over (``epoch``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_acp.jsonrpc.boundary import ClientRequestError
from hermes_acp.jsonrpc.dispatcher import RequestContext, Route

from .initialize import initialize_result
from .reliable.epoch import Epoch
from .reliable.meta import HERMES, REMOTE, remote_advert
from .v2 import handshake as v2_handshake
from .v2.version import negotiate, repeat_refusal, request_id_refusal

__all__ = ["Handshake"]


class Handshake:
    """The ``initialize`` route, the connection's version, and what the client said (None until it has)."""

    def __init__(self, env: Mapping[str, str], *, epoch: Epoch | None = None):
        self._env = env
        self._epoch = epoch
        self.params: dict[str, Any] | None = None
        """The latest ``initialize`` request answered."""
        self.version = 1
        """The version the connection speaks: v1 until an ``initialize`` chose another."""
        self.answered = False
        self.requested = False
        """A request other than ``initialize`` came after the first one."""
        self.route = Route("initialize", self._answer)

    @property
    def epoch(self) -> Epoch:
        """The server epoch this connection was told (minted on first need when no app gave one yet)."""
        if self._epoch is None:
            self._epoch = Epoch.mint()
        return self._epoch

    def adopt(self, epoch: Epoch) -> Epoch:
        """The app serving the connection has ``epoch``: the one to tell the client, unless it was told another
        already (then that one stays: the connection's cursors must keep working); the epoch in effect."""
        if self._epoch is None or not self.answered:
            self._epoch = epoch
        return self._epoch

    async def _answer(self, ctx: RequestContext, raw: Any) -> dict[str, Any]:
        if not isinstance(raw, dict) or "protocolVersion" not in raw:
            raise ClientRequestError(-32602, "Invalid params: protocolVersion: required (an integer, e.g. 1)")
        requested = raw.get("protocolVersion")
        if self.answered:
            refusal = repeat_refusal(self.version, requested, other_requests=self.requested)
            version = self.version
        else:
            version = negotiate(requested)
            refusal = request_id_refusal(version, ctx.request_id)
        if refusal is not None:
            raise refusal
        if version == 2:
            result = v2_handshake.initialize_result(v2_handshake.read_client(raw), self._env)
        else:
            result = initialize_result(raw, self._env)
        meta = result.setdefault("_meta", {})
        meta.setdefault(HERMES, {})[REMOTE] = remote_advert(self.epoch.id)
        self.params, self.version, self.answered = raw, version, True
        return result
