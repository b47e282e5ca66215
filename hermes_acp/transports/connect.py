"""``hermes-acp --connect URL``: a stdio front door to a remote session host's door, for an editor that launches
agents over stdio (Zed's ``agent_servers``, JetBrains).

It makes a WebSocket link to the door (``wsclient``: ``wss://host/acp``, or ``https://host/acp``, the same door; TLS
checked against the system's roots or ``--cacert``; the token from ``--token-file`` or ``HERMES_ACP_TOKEN``) and
carries the editor's frames to the host and the host's to the editor, one JSON-RPC message per line on stdio and
per text message on the link. The host's frames reach the editor unchanged. The editor's reach the host unchanged
but for what makes a resend safe: its ``initialize`` names this process's client instance
(``_meta.hermes.clientInstanceId``) and each of its other requests an operation id with the server epoch it was sent
to (``_meta.hermes.operationId`` / ``serverEpoch``), unless it gave its own.

When the link drops (the host's network, a laptop that slept), the turns go on at the host. The relay makes the link
again (for ``RECONNECT_S``, backing off) and catches up: it sends the editor's ``initialize`` again, rejoins every
session the editor has open after the last delivery cursor it passed on (v1 ``session/load``, v2 ``session/resume``
with ``_meta.hermes.afterCursor``: the host replays exactly the stored events the editor missed, and v2 its state),
withdraws the host's questions the editor still shows from the old link (``$/cancel_request``: the host asks them
again on the new one), and sends the requests the editor still waits on again under their operation ids: the host
answers a repeat with the first outcome, so a prompt sent before the drop is answered with its turn's end, run once.
A host that restarted meanwhile (another server epoch) refuses those as ``server_epoch_changed`` rather than run
them again; its sessions are reattached without a replay. What the editor sends meanwhile waits, then goes.

A link that cannot be made says why on stderr (the token refused, the certificate, the host unreachable) and
answers the editor's requests with an ACP error, then the process exits 1; it never waits without a bound. It starts
as fast as the local front door: one thread, ``select`` over stdin and the link as the local front door does; the
standard library only, and little of it (``ssl`` only for a TLS link), nothing of the server. Where stdio is
threaded (``platform.stdio.threaded``: Windows, whose ``select`` takes only sockets, and
``HERMES_ACP_PORTABLE=stdio``) a daemon thread pumps stdin into a socket pair and ``select`` watches its other end
(``platform.stdio.pump_stdin``, the shared front door's pump). Stdout is the server's: ``platform.stdio.
claim_stdout`` (binary on Windows, descriptor 1 pointed at stderr). Once connected it says so on stderr, naming how
it reads the editor (``select`` or ``threads``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_acp.platform import stdio

from .connect_options import USAGE, read_options, read_token
from .wsclient import Link, LinkError, Target, open_link, parse_target

__all__ = ["CONNECT_TIMEOUT_S", "RECONNECT_S", "Relay", "run_connect"]

CONNECT_TIMEOUT_S = 10.0
"""Bound on making the link (TCP, TLS, the upgrade)."""
RECONNECT_S = 60.0
"""How long a dropped link is tried again before the relay gives up."""
PING_S = 15.0
"""Idle time after which the link is pinged; a link silent for twice this long is taken as dropped."""
FIRST_REQUEST_S = 10.0
"""How long a relay that could not connect waits for the editor's first request, to answer it with why."""
MAX_WAITING = 10_000
"""Editor frames kept while the link is down (past it the relay gives up)."""
_OPENING = ("session/new", "session/load", "session/resume", "session/fork")


def run_connect(argv: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    """The ``--connect`` command (``argv``: its options); the exit status."""
    env = os.environ if env is None else env
    try:
        options = read_options(argv)
        target = parse_target(options["connect"])
        token = read_token(options.get("token-file"), env)
    except ValueError as exc:
        sys.stderr.write(f"hermes-acp: {exc}\n{USAGE}\n")
        return 2
    out_fd = stdio.claim_stdout()
    return Relay(target, token, cafile=options.get("cacert"), verbose="verbose" in options, out_fd=out_fd).run()


class _Open:
    """A session the editor has open: how to open it again, and the last cursor it was given."""

    __slots__ = ("cursor", "params")

    def __init__(self, params: dict[str, Any]):
        self.params = params
        self.cursor: str | None = None


class _Pending:
    """A request of the editor's the host has not answered, and the link it was sent on."""

    __slots__ = ("generation", "message")

    def __init__(self, message: dict[str, Any], generation: int):
        self.message = message
        self.generation = generation


class _State:
    """What the relay knows of the editor's conversation with the host (what a reconnect needs)."""

    def __init__(self) -> None:
        self.initialize: dict[str, Any] | None = None
        self.version = 1
        self.epoch: str | None = None
        self.sessions: dict[str, _Open] = {}
        self.pending: dict[Any, _Pending] = {}
        self.asks: dict[Any, tuple[int, Any]] = {}
        """The host's requests the editor has not answered: the id the editor knows → (generation, the host's)."""
        self.withdrawn: set[Any] = set()
        """Ids of host requests of an old link: a late answer is dropped."""


class _Dropped(Exception):
    """The link dropped while the relay waited on it."""


class Relay:
    """One editor's stdio to one door (see the module docstring)."""

    def __init__(
        self,
        target: Target,
        token: str | None,
        *,
        cafile: str | None = None,
        verbose: bool = False,
        reconnect_s: float = RECONNECT_S,
        in_fd: int = 0,
        out_fd: int = 1,
    ):
        self._target = target
        self._token = token
        self._cafile = cafile
        self._verbose = verbose
        self._reconnect_s = reconnect_s
        self._in_fd = in_fd
        self._out_fd = out_fd
        self._threaded = stdio.threaded()
        self._in: int | socket.socket = in_fd
        """What ``select`` watches for the editor: stdin, or (threaded) the socket pair's end ``pump_stdin`` feeds."""
        self._events: list[tuple[Any, ...]] = []
        """What the last ``select`` found, not yet handled."""
        self._rest = b""
        self._editor_open = True
        self._link: Link | None = None
        self._generation = 0
        self._instance = f"connect-{os.urandom(8).hex()}"
        self._operations = itertools.count(1)
        self._own = itertools.count(1)
        self._state = _State()
        self._waiting: list[bytes] = []
        self._eof = False

    # -- running -------------------------------------------------------------------------------------------------

    def run(self) -> int:
        if self._threaded:
            self._in, upstream = socket.socketpair()
            stdio.pump_stdin(upstream, self._in_fd)
        try:
            return self._run()
        finally:
            if isinstance(self._in, socket.socket):
                self._in.close()

    def _run(self) -> int:
        try:
            self._start(open_link(self._target, self._token, cafile=self._cafile, timeout_s=CONNECT_TIMEOUT_S))
        except LinkError as exc:
            return self._refuse(str(exc))
        self._note(f"connected to {self._target.url} (the editor's stdio: {'threads' if self._threaded else 'select'})")
        try:
            while not self._eof:
                event = self._next(PING_S)
                if event is None:
                    self._keepalive()
                    continue
                self._handle(event)
        except _GiveUp as exc:
            return self._refuse(str(exc))
        finally:
            if self._link is not None:
                self._link.close()
        return 0

    def _handle(self, event: tuple[Any, ...]) -> None:
        kind = event[0]
        if kind == "editor":
            self._from_editor(event[1])
        elif kind == "eof":
            self._eof = True
        elif kind == "host" and event[1] == self._generation:
            self._from_host(event[2])
        elif kind == "dropped" and event[1] == self._generation:
            self._reconnect(event[2])

    def _start(self, link: Link) -> None:
        self._link = link
        self._generation += 1

    def _next(self, timeout: float) -> tuple[Any, ...] | None:
        """The next event (``editor`` line, ``eof``, ``host`` message, ``dropped`` link); None after ``timeout``
        without one."""
        if not self._events:
            self._poll(timeout)
        return self._events.pop(0) if self._events else None

    def _poll(self, timeout: float) -> None:
        link = self._link
        watched: list[Any] = [self._in] if self._editor_open else []
        if link is not None:
            watched.append(link)
            if link.buffered():
                timeout = 0
        try:
            readable, _, _ = select.select(watched, [], [], timeout) if watched else ([], [], [])
        except (OSError, ValueError):  # the link's socket was closed under it
            readable = [link] if link is not None else []
        if not watched:
            time.sleep(timeout)
        if self._in in readable:
            self._read_editor()
        if link is not None and (link in readable or link.buffered()):
            generation = self._generation
            try:
                messages = link.read()
            except LinkError as exc:
                self._events.append(("dropped", generation, str(exc)))
                return
            if messages is None:
                self._events.append(("dropped", generation, "the host closed the link"))
                return
            self._events.extend(("host", generation, text) for text in messages)

    def _read_editor(self) -> None:
        try:
            source = self._in
            chunk = source.recv(1 << 16) if isinstance(source, socket.socket) else os.read(source, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            if self._rest.strip():
                self._events.append(("editor", self._rest))
            self._rest = b""
            self._editor_open = False
            self._events.append(("eof",))
            return
        *lines, self._rest = (self._rest + chunk).split(b"\n")
        self._events.extend(("editor", line) for line in lines if line.strip())

    def _keepalive(self) -> None:
        link = self._link
        if link is None:
            return
        if time.monotonic() - link.heard > 2 * PING_S:
            link.abort()  # its reader reports the drop
            return
        with contextlib.suppress(LinkError):
            link.ping()

    # -- the editor's frames -------------------------------------------------------------------------------------

    def _from_editor(self, line: bytes) -> None:
        message = _decode(line)
        if message is None:
            self._send(line)
            return
        state = self._state
        if "method" not in message:  # an answer to one of the host's requests
            editor_id = message.get("id")
            if editor_id in state.withdrawn:
                return  # asked on a link that dropped: the host asked again on the new one
            asked = state.asks.pop(editor_id, None)
            if asked is not None and asked[1] != editor_id:
                line = _encode({**message, "id": asked[1]})
            self._send(line)
            return
        if "id" not in message:
            self._send(line)
            return
        prepared = self._prepared(message)
        if prepared is not None:
            message, line = prepared, _encode(prepared)
        state.pending[message["id"]] = _Pending(message, self._generation)
        self._send(line, again=False)  # a request still unanswered is sent again by the catch-up

    def _prepared(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The request as it goes to the host, when it must change: ``initialize`` naming this client instance, any
        other request with an operation id (and the epoch it is sent to), so that a resend after a reconnect applies
        once. None: it goes as it came (it has its own, or no params to carry them)."""
        params = message.get("params")
        meta = params.get("_meta", {}) if isinstance(params, dict) else None
        hermes = meta.get("hermes", {}) if isinstance(meta, dict) else None
        if not isinstance(params, dict) or not isinstance(meta, dict) or not isinstance(hermes, dict):
            return None
        method = message["method"]
        hermes = dict(hermes)
        if method == "initialize":
            hermes.setdefault("clientInstanceId", self._instance)
        elif method.startswith("$/") or "operationId" in hermes:
            return None
        else:
            hermes["operationId"] = f"{self._instance}-{next(self._operations)}"
            if self._state.epoch is not None:
                hermes["serverEpoch"] = self._state.epoch
        params = {**params, "_meta": {**meta, "hermes": hermes}}
        if method == "initialize":
            self._state.initialize = params
        return {**message, "params": params}

    # -- the host's frames ---------------------------------------------------------------------------------------

    def _from_host(self, text: str) -> None:
        message = _decode(text.encode("utf-8"))
        if message is None:
            self._write(text.encode("utf-8"))
            return
        state = self._state
        method = message.get("method")
        if method is None:
            self._answered(message)
        elif method == "session/update":
            self._delivered(message.get("params"))
        elif "id" in message:
            if self._generation > 1:
                editor_id = f"r{self._generation}-{message['id']}"
                state.asks[editor_id] = (self._generation, message["id"])
                self._write(_encode({**message, "id": editor_id}))
                return
            state.asks[message["id"]] = (self._generation, message["id"])
        self._write(text.encode("utf-8"))

    def _answered(self, message: dict[str, Any]) -> None:
        """An answer to one of the editor's requests: what it says about the sessions the editor has open."""
        state = self._state
        pending = state.pending.pop(message.get("id"), None)
        if pending is None:
            return
        request = pending.message
        result = message.get("result")
        method = request.get("method")
        if method == "initialize" and isinstance(result, dict):
            state.version = 2 if result.get("protocolVersion") == 2 else 1
            state.epoch = _epoch(result) or state.epoch
            return
        raw = request.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if method in _OPENING and isinstance(result, dict):
            session_id = result.get("sessionId") or params.get("sessionId")
            if isinstance(session_id, str):
                kept = ("cwd", "mcpServers", "additionalDirectories")
                opened: dict[str, Any] = {key: params[key] for key in kept if key in params}
                state.sessions.setdefault(session_id, _Open(opened))
                if pending.generation < self._generation:  # answered by a resend: this link is not attached yet
                    self._reopen(session_id, state.sessions[session_id], replay=False)
        elif method == "session/close" and "error" not in message:
            state.sessions.pop(str(params.get("sessionId")), None)

    def _delivered(self, params: Any) -> None:
        """A ``session/update`` passed on: its cursor is where the editor's view of the session stands."""
        if not isinstance(params, dict):
            return
        meta = params.get("_meta")
        hermes = meta.get("hermes") if isinstance(meta, dict) else None
        cursor = hermes.get("cursor") if isinstance(hermes, dict) else None
        opened = self._state.sessions.get(str(params.get("sessionId")))
        if opened is not None and isinstance(cursor, str):
            opened.cursor = cursor

    # -- a link that dropped -------------------------------------------------------------------------------------

    def _reconnect(self, reason: str) -> None:
        self._note(f"the link to {self._target.url} dropped ({reason}); connecting again")
        self._drop_link()
        deadline = time.monotonic() + self._reconnect_s
        delay = 0.05
        while True:
            try:
                self._start(open_link(self._target, self._token, cafile=self._cafile, timeout_s=CONNECT_TIMEOUT_S))
                self._catch_up()
                self._note("connected again; caught up")
                return
            except LinkError as exc:
                if exc.fatal or time.monotonic() + delay > deadline:
                    raise _GiveUp(f"the link to {self._target.url} dropped and could not be made again: {exc}") from exc
                reason = str(exc)
            except _Dropped as exc:
                reason = str(exc)
            self._drop_link()
            self._note(f"not yet ({reason}); trying again in {delay:g} s")
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _drop_link(self) -> None:
        if self._link is not None:
            self._link.abort()
            self._link = None

    def _catch_up(self) -> None:
        """On a new link: initialize, rejoin the sessions, withdraw the old questions, send again what waits."""
        state = self._state
        if state.initialize is None:
            self._flush()
            return
        answer = self._call("initialize", state.initialize)
        epoch = _epoch(answer) if isinstance(answer, dict) else None
        restarted = epoch is not None and state.epoch is not None and epoch != state.epoch
        if restarted:
            self._note("the host restarted: requests in flight are refused rather than run again")
        for session_id, opened in list(state.sessions.items()):
            self._reopen(session_id, opened, replay=not restarted)
        for editor_id, (generation, _) in list(state.asks.items()):
            if generation < self._generation:
                del state.asks[editor_id]
                state.withdrawn.add(editor_id)
                withdraw = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": editor_id}}
                self._write(_encode(withdraw))
        for pending in list(state.pending.values()):
            if pending.generation < self._generation:
                self._send(_encode(pending.message))
        if epoch is not None:
            state.epoch = epoch
        self._flush()

    def _reopen(self, session_id: str, opened: _Open, *, replay: bool) -> None:
        """Attach this link to a session the editor has open: after its cursor (the missed events), or without a
        replay (no cursor to rejoin after, or a host that restarted)."""
        params: dict[str, Any] = {"sessionId": session_id, **opened.params}
        params.setdefault("mcpServers", [])
        if replay and opened.cursor is not None:
            params["_meta"] = {"hermes": {"afterCursor": opened.cursor}}
            method = "session/load" if self._state.version == 1 else "session/resume"
        else:
            method = "session/resume"
        try:
            self._call(method, params)
        except _Refused as exc:
            self._note(f"session {session_id} could not be rejoined: {exc}; reload it in the editor")
            self._state.sessions.pop(session_id, None)

    def _call(self, method: str, params: dict[str, Any]) -> Any:
        """A request of the relay's own on the current link; the host's messages meanwhile are passed on, the
        editor's wait."""
        request_id = f"hermes-connect-{next(self._own)}"
        self._send(_encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
        deadline = time.monotonic() + CONNECT_TIMEOUT_S * 3
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LinkError(f"the host did not answer {method} in time")
            event = self._next(left)
            if event is None:
                continue
            kind = event[0]
            if kind == "editor":
                self._wait(event[1])
            elif kind == "eof":
                self._eof = True
            elif kind == "dropped" and event[1] == self._generation:
                raise _Dropped(event[2])
            elif kind == "host" and event[1] == self._generation:
                message = _decode(event[2].encode("utf-8"))
                if message is not None and message.get("id") == request_id and "method" not in message:
                    if "error" in message:
                        raise _Refused(str((message.get("error") or {}).get("message")))
                    return message.get("result")
                self._from_host(event[2])

    def _wait(self, line: bytes) -> None:
        if len(self._waiting) >= MAX_WAITING:
            raise _GiveUp("the editor sent too much while the link was down")
        self._waiting.append(line)

    def _flush(self) -> None:
        waiting, self._waiting = self._waiting, []
        for line in waiting:
            self._from_editor(line)

    # -- writing -------------------------------------------------------------------------------------------------

    def _send(self, data: bytes, *, again: bool = True) -> None:
        """To the host; while the link is down (or when it broke under the send, ``again``), the frame waits for
        the next one."""
        link = self._link
        if link is None:
            if again:
                self._wait(data)
            return
        try:
            link.send(data.decode("utf-8", "replace"))
        except LinkError:
            if again:
                self._waiting.append(data)  # its reader reports the drop; the catch-up sends it

    def _write(self, data: bytes) -> None:
        """To the editor (stdout); an editor that closed it has left."""
        view = memoryview(data + b"\n")
        try:
            while view:
                view = view[os.write(self._out_fd, view) :]
        except OSError:
            self._eof = True

    def _note(self, text: str) -> None:
        sys.stderr.write(f"hermes-acp: {text}\n")
        sys.stderr.flush()

    def _refuse(self, why: str) -> int:
        """Say why on stderr and answer the editor's requests with it: those it waits on, and the next one (waited
        for, bounded), so that the editor shows it too."""
        self._note(why)
        message = f"hermes-acp could not connect to {self._target.url}: {why}"
        for request_id in list(self._state.pending):
            self._write(_error(request_id, message))
        lines, self._waiting = self._waiting, []
        deadline = time.monotonic() + FIRST_REQUEST_S
        while not self._eof:
            for line in lines:
                request = _decode(line)
                if request is not None and "id" in request and "method" in request:
                    self._write(_error(request["id"], message))
                    return 1
            left = deadline - time.monotonic()
            if left <= 0:
                return 1
            event = self._next(left)
            if event is None:
                return 1
            lines = [event[1]] if event[0] == "editor" else []
            self._eof = event[0] == "eof"
        return 1


class _GiveUp(Exception):
    """The link cannot be made again: the relay stops."""


class _Refused(Exception):
    """The host answered one of the relay's own requests with an error."""


def _epoch(result: dict[str, Any]) -> str | None:
    meta = result.get("_meta")
    hermes = meta.get("hermes") if isinstance(meta, dict) else None
    remote = hermes.get("remote") if isinstance(hermes, dict) else None
    epoch = remote.get("serverEpoch") if isinstance(remote, dict) else None
    return epoch if isinstance(epoch, str) else None


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _error(request_id: Any, message: str) -> bytes:
    return _encode({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": message}})
