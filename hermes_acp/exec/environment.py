"""The environment a child process starts with: an allow-list, never ours minus a list.

Every child (local commands, the editor's terminals, stdio MCP servers, the cua-driver, the agent's own git) gets
the variables named in ``SAFE_NAMES`` that are set here, plus the names in ``[sandbox] pass_env``, and nothing
else. Names are compared exactly: no pattern, no prefix, no look at the values (a ``DATABASE_URL`` with a password
in it is withheld because it is not on the list, not because it looks like one). What a child needs beyond that is
added by whoever starts it: a command's own ``env``, an MCP entry's declared env (kept exactly), the driver's
desktop variables (``DESKTOP_NAMES``). On Windows every child also gets the variables Windows programs need to start
(``platform.system.child_base_names``: ``SYSTEMROOT``, ``PATHEXT``, ``TEMP``, ``APPDATA``…), and names are compared
as Windows does, without case (``Path`` is ``PATH``).

Pure functions over mappings; no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from hermes_acp.platform.system import child_base_names, system_name

__all__ = ["DESKTOP_NAMES", "SAFE_NAMES", "EnvPolicy"]

LOCALE_NAMES = (
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_ADDRESS",
    "LC_COLLATE",
    "LC_CTYPE",
    "LC_IDENTIFICATION",
    "LC_MEASUREMENT",
    "LC_MESSAGES",
    "LC_MONETARY",
    "LC_NAME",
    "LC_NUMERIC",
    "LC_PAPER",
    "LC_TELEPHONE",
    "LC_TIME",
)
SAFE_NAMES: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "TZ",
    "TMPDIR",
    "PWD",
    *LOCALE_NAMES,
    # Where toolchains live (paths, never credentials).
    "JAVA_HOME",
    "GOROOT",
    "GOPATH",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "NVM_DIR",
    "PYENV_ROOT",
    "VIRTUAL_ENV",
    # Which certificates to trust (paths).
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
)
"""What every child may inherit from us, when set: the short list of variables that say where things are and how
to show them, none of which holds a credential."""
DESKTOP_NAMES: tuple[str, ...] = (
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "XDG_RUNTIME_DIR",
    "XDG_SESSION_TYPE",
    "XDG_CURRENT_DESKTOP",
    "DBUS_SESSION_BUS_ADDRESS",
    "AT_SPI_BUS_ADDRESS",
)
"""What the cua-driver needs on top of ``SAFE_NAMES`` to reach the desktop (it runs outside the sandbox)."""


@dataclass(frozen=True, slots=True)
class EnvPolicy:
    """``SAFE_NAMES`` plus ``pass_env`` (``[sandbox] pass_env``): the names a child may inherit."""

    pass_env: frozenset[str] = frozenset()

    @classmethod
    def of(cls, pass_env: Collection[str] = ()) -> EnvPolicy:
        return cls(frozenset(pass_env))

    def allows(self, name: str) -> bool:
        return name in self.pass_env or name in SAFE_NAMES or name in child_base_names()

    def base(self, env: Mapping[str, str], *, extra_names: Iterable[str] = ()) -> dict[str, str]:
        """The variables of ``env`` a child inherits (``extra_names`` too, for a child that needs more)."""
        names = (*SAFE_NAMES, *child_base_names(), *extra_names, *sorted(self.pass_env))
        if system_name() == "win32":
            upper = {name.upper(): value for name, value in env.items()}
            return {name: upper[name.upper()] for name in dict.fromkeys(names) if name.upper() in upper}
        return {name: env[name] for name in dict.fromkeys(names) if name in env}

    def withheld_count(self, env: Mapping[str, str]) -> int:
        """How many variables of ``env`` a child does not inherit (for ``--check``)."""
        return sum(1 for name in env if not self.allows(name))
