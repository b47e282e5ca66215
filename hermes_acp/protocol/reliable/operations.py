"""The operation ledger: a state-changing request sent with an operation id is applied once, and a repeat of the id
is answered with the first outcome.

A client that lost its link cannot know whether its last prompt, permission answer, steering message or cancel
arrived; the drafts let it resend the request with the same ``operationId`` (``meta.operation_id``). ``apply`` runs
the request the first time and keeps its outcome, the result or the error, per (scope, session, operation id):

- a repeat of a finished operation gets the same result, or raises the same error, and runs nothing;
- a repeat while the first still runs waits for it and gets its outcome;
- the same id with other input (``fingerprint``: the method and its params without ``_meta``; the JSON-RPC id is
  never part of it) is ``operation_conflict``, and nothing runs;
- a first attempt that was cancelled before it finished (its link dropped, the request withdrawn) may or may not
  have changed anything, so a repeat is ``operation_outcome_unknown``: the client looks (``session/resume``)
  before it sends the request again under a new id.

The scope is the client's instance id from its ``initialize`` (``meta.client_instance_id``), or its connection when
it gave none, so two clients never share ids. The ledger is bounded: per session it keeps the latest
``per_session`` finished outcomes, for ``retention_s`` each, over at most ``sessions`` sessions (the least recently
used go first); an operation still running is never dropped. A repeat after its outcome was dropped runs again:
the limits are advertised (``meta.remote_advert``) so a client knows how long a resend is safe.

It lives in the host's memory, not the store, on purpose: it is exactly as durable as the server epoch
(``cursors.Epoch``), which changes when the host restarts. A client sees the epoch in every ``initialize`` result
and may name it in a request (``_meta.hermes.serverEpoch``); after a restart its in-doubt operations are refused
as ``server_epoch_changed`` instead of applied again, and it rejoins the session to see what happened to them. A
durable ledger would let such a resend succeed, at the price of a write per request on every prompt's path and a
table to migrate, for the one case of a restart between a request and its answer. Nothing here knows what the
requests do.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import anyio

from .meta import PER_SESSION, RETENTION_S, condition_error

__all__ = ["OperationKey", "OperationLedger", "fingerprint"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class OperationKey:
    scope: str
    """The client instance (or its connection)."""
    session_id: str
    """The session the request is about ("" for one about none: ``session/new``, ``providers/set``)."""
    operation_id: str


def fingerprint(method: str, params: Any) -> str:
    """What makes two requests the same operation: the method and its params, ``_meta`` left out."""
    body = {k: v for k, v in params.items() if k != "_meta"} if isinstance(params, dict) else params
    canonical = json.dumps([method, body], sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(eq=False)
class _Record:
    identity: str
    done: anyio.Event = field(default_factory=anyio.Event)
    finished_at: float | None = None
    result: Any = None
    error: Exception | None = None
    unknown: bool = False


class OperationLedger:
    """See the module docstring. Limits are values given at construction; ``clock`` is monotonic seconds."""

    def __init__(
        self,
        *,
        per_session: int = PER_SESSION,
        sessions: int = 1024,
        retention_s: float = RETENTION_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.per_session = per_session
        self.retention_s = retention_s
        self._sessions_max = sessions
        self._clock = clock
        self._sessions: OrderedDict[tuple[str, str], OrderedDict[str, _Record]] = OrderedDict()

    def __len__(self) -> int:
        """Outcomes kept (and operations running), over every session."""
        return sum(len(records) for records in self._sessions.values())

    async def apply(self, key: OperationKey, identity: str, run: Callable[[], Awaitable[T]]) -> T:
        """``run``'s outcome the first time ``key`` is seen (``identity``: its ``fingerprint``), the same outcome
        every later time, without running it again."""
        records = self._records(key)
        record = records.get(key.operation_id)
        if record is None:
            record = _Record(identity)
            records[key.operation_id] = record
            self._bound(records)
            return await self._first(record, run)
        if record.identity != identity:
            raise condition_error(
                "operation_conflict",
                f"operation {key.operation_id!r} was sent before with other input; use a new id for a new request",
                operationId=key.operation_id,
            )
        records.move_to_end(key.operation_id)
        await record.done.wait()
        if record.unknown:
            raise condition_error(
                "operation_outcome_unknown",
                f"operation {key.operation_id!r} was interrupted before it finished, so whether it took effect is"
                " unknown; resume the session to see, then send it again with a new id if it is still needed",
                operationId=key.operation_id,
            )
        if record.error is not None:
            raise record.error.with_traceback(None)
        return cast(T, record.result)

    async def _first(self, record: _Record, run: Callable[[], Awaitable[T]]) -> T:
        try:
            result = await run()
        except Exception as exc:
            record.error = exc
            raise
        except BaseException:
            record.unknown = True
            raise
        else:
            record.result = result
            return result
        finally:
            record.finished_at = self._clock()
            record.done.set()

    def _records(self, key: OperationKey) -> OrderedDict[str, _Record]:
        session = (key.scope, key.session_id)
        records = self._sessions.get(session)
        if records is None:
            records = self._sessions[session] = OrderedDict()
        self._sessions.move_to_end(session)
        self._expire(records)
        return records

    def _expire(self, records: OrderedDict[str, _Record]) -> None:
        horizon = self._clock() - self.retention_s
        for operation, record in list(records.items()):
            if record.finished_at is not None and record.finished_at <= horizon:
                del records[operation]

    def _bound(self, records: OrderedDict[str, _Record]) -> None:
        finished = [op for op, record in records.items() if record.finished_at is not None]
        for operation in finished[: max(0, len(records) - self.per_session)]:
            del records[operation]
        excess = len(self._sessions) - self._sessions_max
        for session, kept in list(self._sessions.items()):
            if excess <= 0:
                break
            if kept is records or any(r.finished_at is None for r in kept.values()):
                continue  # in use: the next least recently used goes instead
            del self._sessions[session]
            excess -= 1
