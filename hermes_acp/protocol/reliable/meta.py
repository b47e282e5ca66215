"""The ``_meta`` names of hermes-acp's remote-readiness extension, and the functions that read and write them.

The ACP Remote drafts (``docs/rfds/remote/overview.mdx``, ``reliable-transport.mdx``) describe delivery cursors,
server epochs and operation ids, and call every name in them provisional; the 2.4.0 SDK and schema carry none of it.
Until the RFDs settle, hermes-acp speaks the subset it implements as ``_meta`` under ``hermes``, on v1 and v2 alike,
with the drafts' field names. It does not claim the ``acp.remote.v2`` profile (no resume secrets, generation fencing,
acks or snapshot sets), and puts nothing in ``capabilities``.

- ``initialize`` result, ``_meta.hermes.remote``: ``{"serverEpoch", "cursors": "session", "operations":
  {"retentionSeconds", "maximumPerSession"}}`` (counts as decimal strings, as the drafts write them);
- ``initialize`` request, ``_meta.hermes.clientInstanceId``: the client's own id, the same across its reconnects;
  it scopes the client's operation ids;
- ``session/update`` params, ``_meta.hermes.cursor``: the delivery cursor of the last stored event passed to the
  client (at the params' level: an update's own ``_meta`` would patch the entity it upserts): the event the update
  was rendered from, or, for a transient update (chunks, state, usage, notices), the last one before it. It says
  "you have everything up to here": a stored event that shows the client nothing (a v1 client saw its response
  stream) moves it too, with the next update;
- ``session/resume`` (v2) and ``session/load`` (v1) request, ``_meta.hermes.afterCursor``: rejoin, replaying only
  the stored events after it; their result's ``_meta.hermes.recovery`` says ``"replay"`` (only what was missed) or
  ``"full"`` (the whole history: the client rebuilds its view);
- a state-changing request's ``_meta.hermes.operationId``: applied once, a repeat answered with the first outcome;
  with ``_meta.hermes.serverEpoch`` (optional), the epoch the client saw when it first sent it: another epoch is
  refused and nothing applied;
- its response's ``_meta.hermes.operationReceipt``: ``{"operationId", "receiptRevision": "1", "status":
  "committed" | "rejected"}``.

Errors follow the drafts: -32602 with ``data: {"condition", "retryable": false, ...}``, the condition one of
``cursor_gap``, ``server_epoch_changed``, ``operation_conflict``, ``operation_outcome_unknown``.

A cursor here is closer to the drafts' canonical session order (``sessionVersion``) than to their per-connection
delivery cursor: every connection attached to a session sees the same cursors. No I/O.
"""

from __future__ import annotations

from typing import Any, Literal

from hermes_acp.errors import InvalidParamsError

__all__ = [
    "AFTER_CURSOR",
    "CLIENT_INSTANCE_ID",
    "CURSOR",
    "HERMES",
    "MAX_ID_CHARS",
    "OPERATION_ID",
    "OPERATION_RECEIPT",
    "PER_SESSION",
    "RECOVERY",
    "REMOTE",
    "RETENTION_S",
    "SERVER_EPOCH",
    "Condition",
    "after_cursor",
    "client_instance_id",
    "condition_error",
    "operation_id",
    "receipt",
    "remote_advert",
    "update_params",
    "with_result_meta",
]

HERMES = "hermes"
CURSOR = "cursor"
AFTER_CURSOR = "afterCursor"
RECOVERY = "recovery"
OPERATION_ID = "operationId"
OPERATION_RECEIPT = "operationReceipt"
SERVER_EPOCH = "serverEpoch"
CLIENT_INSTANCE_ID = "clientInstanceId"
REMOTE = "remote"
MAX_ID_CHARS = 256
"""The longest operation id, cursor or client instance id taken."""
RETENTION_S = 3600.0
"""How long the operation ledger keeps an outcome (``operations.OperationLedger``), as advertised."""
PER_SESSION = 256
"""How many finished outcomes it keeps per session, as advertised."""
Condition = Literal["cursor_gap", "server_epoch_changed", "operation_conflict", "operation_outcome_unknown"]


def condition_error(condition: Condition, message: str, **data: Any) -> InvalidParamsError:
    """The -32602 error of a draft condition (never retryable here: the client must observe before it resends)."""
    return InvalidParamsError(message, data={"condition": condition, "retryable": False, **data})


def _hermes(params: Any) -> dict[str, Any]:
    meta = params.get("_meta") if isinstance(params, dict) else None
    hermes = meta.get(HERMES) if isinstance(meta, dict) else None
    return hermes if isinstance(hermes, dict) else {}


def _string(params: Any, key: str) -> str | None:
    value = _hermes(params).get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        raise InvalidParamsError(
            f"_meta.{HERMES}.{key}: must be a string of 1 to {MAX_ID_CHARS} characters", field=f"_meta.{HERMES}.{key}"
        )
    return value


def operation_id(params: Any, *, epoch: str) -> str | None:
    """The request's operation id (None: it has none, and is applied as any request is). A request that names
    another server epoch was sent to a host that has since restarted: whether it was applied there is unknown,
    so it is refused here rather than applied a second time."""
    found = _string(params, OPERATION_ID)
    if found is None:
        return None
    seen = _string(params, SERVER_EPOCH)
    if seen is not None and seen != epoch:
        raise condition_error(
            "server_epoch_changed",
            f"operation {found!r} was sent to server epoch {seen!r}, and this is {epoch!r}: the host restarted, so"
            " whether it was applied is unknown; resume the session to see, then send it again with a new id",
            operationId=found,
            serverEpoch=epoch,
        )
    return found


def after_cursor(params: Any) -> str | None:
    """The cursor a ``session/resume`` or ``session/load`` rejoins after (None: none given)."""
    return _string(params, AFTER_CURSOR)


def client_instance_id(params: Any) -> str | None:
    """The client's own id from its ``initialize`` (None: none given; its connection is then its scope)."""
    return _string(params, CLIENT_INSTANCE_ID)


def update_params(session_id: str, update: dict[str, Any], cursor: str | None = None) -> dict[str, Any]:
    """``session/update`` params, with the delivery cursor of the stored event ``update`` came from."""
    params: dict[str, Any] = {"sessionId": session_id, "update": update}
    if cursor is not None:
        params["_meta"] = {HERMES: {CURSOR: cursor}}
    return params


def receipt(operation: str, *, rejected: bool = False) -> dict[str, str]:
    """What a response to a request with an operation id says of it (the first answer and every repeat alike)."""
    return {"operationId": operation, "receiptRevision": "1", "status": "rejected" if rejected else "committed"}


def with_result_meta(result: dict[str, Any], **hermes: Any) -> dict[str, Any]:
    """``result`` with ``hermes`` merged into its ``_meta.hermes`` (``recovery``, ``operationReceipt``)."""
    meta = dict(result.get("_meta") or {})
    meta[HERMES] = {**(meta.get(HERMES) or {}), **hermes}
    return {**result, "_meta": meta}


def remote_advert(epoch: str, *, retention_s: float = RETENTION_S, per_session: int = PER_SESSION) -> dict[str, Any]:
    """``_meta.hermes.remote`` of an ``initialize`` result: the epoch and what the operation ledger keeps."""
    return {
        SERVER_EPOCH: epoch,
        "cursors": "session",
        "operations": {"retentionSeconds": str(int(retention_s)), "maximumPerSession": str(per_session)},
    }
