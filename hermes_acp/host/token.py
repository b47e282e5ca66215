"""``hermes-acp host token [--rotate]``: show the remote doors' bearer token, or replace it.

The token lives in ``[host] token_file`` (``Settings.host_token_file``; default ``$HERMES_ACP_HOME/host.token``).
Shown, it is read (or created, ``0600``) by the same function the remote door reads it with, ``remote.load_token``.
Rotated, a new random token replaces the file whole (a new ``0600`` file renamed over it: a reader sees the old token
or the new one, never a part), then a running host is asked (control request ``token``) to open its remote doors
again, which read the file anew: once the command returns, the old token is refused and the connections made with
it are ended. The token goes to ``out`` (stdout: ``TOKEN=$(hermes-acp host token)``), everything else to ``err``.

It knows the settings and the control socket; it does not know how the doors check the token.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping

from hermes_acp.config import load_settings
from hermes_acp.errors import ConfigError
from hermes_acp.telemetry import configure_logging
from hermes_acp.transports.control import request
from hermes_acp.transports.paths import replace_file

__all__ = ["ROTATE_WAIT_S", "token_command"]

ROTATE_WAIT_S = 30.0
"""How long ``--rotate`` waits for a running host to open its doors again with the new token."""


def token_command(
    out: Callable[[str], None],
    err: Callable[[str], None],
    *,
    rotate: bool = False,
    env: Mapping[str, str] | None = None,
) -> int:
    env = dict(os.environ) if env is None else env
    try:
        settings = load_settings(env)
    except ConfigError as exc:
        err(f"hermes-acp: {exc}")
        return 1
    configure_logging(settings.logs_dir, settings.logging.level, stderr_level=settings.logging.stderr_level)
    path = settings.host_token_file
    if not rotate:
        from hermes_acp.transports.remote import load_token

        try:
            token = load_token(settings)
        except (ConfigError, OSError) as exc:
            err(f"hermes-acp: {exc}")
            return 1
        out(token)
        err(f"(the remote doors' token, in {path})")
        return 0
    token = secrets.token_urlsafe(32)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        replace_file(str(path), (token + "\n").encode(), 0o600)
    except OSError as exc:
        err(f"hermes-acp: could not write the new token to {path}: {exc}")
        return 1
    out(token)
    try:
        answer = request(env, "token", timeout_s=ROTATE_WAIT_S)
    except OSError as exc:
        err(f"wrote a new token to {path}, but could not tell the running host: {exc}")
        return 1
    if answer is None:
        err(f"wrote a new token to {path}; no host runs now: the next one takes it")
        return 0
    if answer.get("ok") is not True:
        err(f"wrote a new token to {path}, but the running host did not take it: {answer.get('error')}")
        return 1
    err(f"wrote a new token to {path}; the running host now takes only the new one")
    return 0
