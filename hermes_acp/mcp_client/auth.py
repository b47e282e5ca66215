"""Signing in to MCP servers behind OAuth: where a server's tokens are kept, what the user is asked through, and the
client settings a server may need — everything of it that does not need the mcp SDK.

Only HTTP and SSE servers sign in (a stdio server never does), and only when the session has a token folder
(``auth_dir``, ``$HERMES_ACP_HOME/mcp-auth``) and the editor did not send an ``Authorization`` header of its own.
The OAuth protocol itself (discovery on a 401, dynamic client registration, PKCE, the token requests, refresh) is
the SDK's ``mcp.client.auth``, driven by ``_oauth``; this module holds:

- ``TokenFile``: one JSON file per server and per home, ``<auth_dir>/<server>-<sha256(url)[:12]>.json``, written
  ``0600`` in a folder ``0700`` through ``anchored`` (whole, never through a link). It holds the OAuth client the
  server's authorization server registered for us, the tokens and their absolute expiry, and the loopback redirect
  address the client was registered with (kept, so that the same client works at the next sign-in). Keyed by the
  server's URL as well as its name: the same name in another editor for another server gets its own file. Every
  token and secret read or written is registered with the log redactor; none of it ever goes anywhere else.
- ``OAuthClient``: a client id (and secret, redirect port) from config.toml, for an authorization server
  that does not register clients dynamically.
- ``SignIn``: the port through which the user's step goes (the session's editor: an ACP URL elicitation, or a
  notice with the address); phase 2 implements it over the audience.
- ``WireAuth``: what one connection needs to sign in without the user (the file and the client settings).
- ``redirect_query``: what the authorization server's redirect to the loopback listener says (the code, or why
  not), read from the request the browser sends or from the address a user pastes (a browser on another machine).

It does blocking file I/O only in worker threads, and knows nothing of ACP or sessions.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import anyio

from hermes_acp import anchored
from hermes_acp.telemetry import register_secret

from .naming import sanitise

__all__ = [
    "MAX_TOKEN_FILE_BYTES",
    "REFRESH_MARGIN_S",
    "SIGN_IN_TIMEOUT_S",
    "OAuthClient",
    "SignIn",
    "TokenFile",
    "WireAuth",
    "environment_secret",
    "redirect_query",
]

REFRESH_MARGIN_S = 60.0
"""An access token this close to its expiry is refreshed before the next request instead of being sent."""
SIGN_IN_TIMEOUT_S = 600.0
"""How long a sign-in waits for the user to finish in the browser (the loopback listener is then closed)."""
MAX_TOKEN_FILE_BYTES = 256 * 1024
"""A token file larger than this is not read (it was not written by us)."""
_SECRET_FIELDS = ("access_token", "refresh_token", "client_secret", "registration_access_token")


@dataclass(frozen=True, slots=True)
class OAuthClient:
    """An OAuth client registered by hand with a server's authorization server (config.toml's
    ``[mcp.servers.NAME] client_id``): used instead of dynamic registration."""

    client_id: str
    client_secret: str | None = None
    redirect_port: int | None = None
    """The loopback port registered with the client; None: a free port, chosen once and then kept."""


class SignIn(Protocol):
    """The user's step of a sign-in: the session's editor (phase 2: an ACP ``elicitation/create`` in URL mode,
    "Sign in to <server>", where the client offers it; else a notice with the address)."""

    async def open_url(self, server: str, url: str) -> bool:
        """Show the user the authorization page ``url`` of ``server``; True once it was shown (or the user agreed
        to open it), False when they declined or nobody can be asked (the sign-in is then abandoned)."""
        ...

    async def finished(self, server: str, error: str | None) -> None:
        """A sign-in of ``server`` ended: signed in (``error`` None; also when the stored tokens were enough and no
        page was shown), or not and why (declined, timed out, refused). Called once per sign-in."""
        ...


class TokenFile:
    """The token file of one server in one home (see the module docstring). Its methods block: call them in a
    worker thread (the ``a*`` ones do)."""

    def __init__(self, auth_dir: Path, server: str, url: str):
        self.folder = auth_dir
        digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:12]
        self.path = auth_dir / f"{sanitise(server)[:64]}-{digest}.json"

    def read(self) -> dict[str, Any]:
        """What the file holds; ``{}`` when there is none or it cannot be read (it is then replaced at the next
        write)."""
        try:
            handle = anchored.open_read(self.folder, self.path)
        except OSError:
            return {}
        if handle is None:
            return {}
        with handle:
            raw = handle.read(MAX_TOKEN_FILE_BYTES + 1)
        try:
            data = json.loads(raw) if len(raw) <= MAX_TOKEN_FILE_BYTES else None
        except ValueError:
            data = None
        if not isinstance(data, dict):
            return {}
        _register(data)
        return data

    def write(self, data: dict[str, Any]) -> None:
        _register(data)
        blob = json.dumps(data, sort_keys=True).encode("utf-8")
        anchored.write_file(
            self.folder,
            self.path,
            blob,
            new_mode=anchored.PRIVATE_FILE,
            folders=anchored.PRIVATE_FOLDER,
            keep_mode=False,
        )

    def update(self, **changes: Any) -> dict[str, Any]:
        """Read, change (a value of None removes the key), write; the new contents."""
        data = self.read()
        for key, value in changes.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        self.write(data)
        return data

    def remove(self) -> bool:
        """Delete the file (sign out); False when there was none."""
        try:
            return anchored.remove_file(self.folder, self.path)
        except FileNotFoundError:
            return False

    async def aread(self) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(self.read)

    async def aupdate(self, **changes: Any) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(lambda: self.update(**changes))

    async def aremove(self) -> bool:
        return await anyio.to_thread.run_sync(self.remove)

    def mode(self) -> int | None:
        """The file's permission bits (None: no file)."""
        found = anchored.lstat(self.folder, self.path)
        return found.st_mode & 0o777 if found is not None else None


def _register(data: dict[str, Any]) -> None:
    """Every secret the file holds goes to the log redactor."""
    for section in (data, data.get("tokens"), data.get("client")):
        if isinstance(section, dict):
            for key in _SECRET_FIELDS:
                value = section.get(key)
                if isinstance(value, str):
                    register_secret(value)


@dataclass(frozen=True, slots=True)
class WireAuth:
    """What one connection to an HTTP or SSE server needs to sign in without the user: its token file and the
    client from config (if any)."""

    tokens: TokenFile
    client: OAuthClient | None = None

    @staticmethod
    def for_server(auth_dir: Path, name: str, url: str, client: OAuthClient | None) -> WireAuth:
        return WireAuth(TokenFile(auth_dir, name, url), client)


def environment_secret(name: str | None) -> str | None:
    """The value of the environment variable ``name`` (a client secret named in config.toml), registered with the
    log redactor; None when unset."""
    if not name:
        return None
    value = os.environ.get(name) or None
    register_secret(value)
    return value


REDIRECT_PATH = "/callback"
_REDIRECT_KEYS = ("code", "state", "iss", "error", "error_description")


def redirect_query(target: str) -> dict[str, str] | None:
    """The parameters of a redirect to the sign-in's listener (``/callback?code=…&state=…``, the path alone or the
    whole address); None when ``target`` is not one (another path, neither a code nor an error)."""
    parts = urlsplit(target.strip())
    if parts.path != REDIRECT_PATH:
        return None
    query = parse_qs(parts.query)
    found = {key: query[key][0] for key in _REDIRECT_KEYS if query.get(key)}
    if "code" not in found and "error" not in found:
        return None
    return found
