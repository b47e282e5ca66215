"""What counts as a secret for the sandbox, and what of the system a command may see at all.

- ``is_secret_name``: files masked wherever they are inside the session's directories: ``.env*``, private keys and
  certificates (``*.pem``, ``*.key``, ``*.p12``, ``*.pfx``) and ssh keys (``id_*`` without an extension:
  ``id_rsa``, ``id_ed25519``; not ``id_rsa.pub``, not ``id_utils.py``);
- ``HOME_SECRETS``: credential files and folders of a home, masked wherever part of the home is visible (a
  ``home_read`` folder that holds one, a home inside a session's directory); naming one in ``home_read`` itself
  shows it, since that is the user's explicit choice;
- ``ETC_SECRETS``: the system's own secrets (password hashes, host keys, TLS private keys, Wi-Fi passwords),
  masked in ``/etc``, which is otherwise visible (read-only);
- ``SYSTEM``: the top-level folders a command sees (read-only); everything else at the top (``/home``, ``/root``,
  ``/srv``, ``/mnt``, ``/media``, ``/boot``, any ``/data`` or ``/work``) is not there at all, and of ``/var`` and
  ``/run`` only what ``RUN`` lists.

Plain data and one predicate; no I/O.
"""

from __future__ import annotations

from hermes_acp.platform.case import fold

__all__ = [
    "ETC_SECRETS",
    "HOME_SECRETS",
    "MACOS_SECRETS",
    "MACOS_SYSTEM",
    "RUN",
    "SECRET_SUFFIXES",
    "SYSTEM",
    "is_secret_name",
]

SECRET_SUFFIXES = (".pem", ".key", ".p12", ".pfx")


def is_secret_name(name: str) -> bool:
    """Whether a file with this name is masked inside the session's directories (see the module docstring). Names
    are compared folded (``platform.case``): ``.ENV`` and ``server.PEM`` are the real files on APFS and NTFS."""
    name = fold(name)
    if name.startswith(".env"):
        return True
    if name.endswith(SECRET_SUFFIXES):
        return True
    return name.startswith("id_") and "." not in name


HOME_SECRETS: tuple[str, ...] = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker/config.json",
    ".dockercfg",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".config/op",
    ".config/rclone/rclone.conf",
    ".config/github-copilot",
    ".config/composer/auth.json",
    ".composer/auth.json",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    ".gem/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".nuget/NuGet/NuGet.Config",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".s3cfg",
    ".boto",
    ".pgpass",
    ".my.cnf",
    ".password-store",
    ".local/share/keyrings",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".lesshst",
    ".local/share/fish/fish_history",
    ".codex",
    ".claude",
    ".claude.json",
)
"""Relative to the home."""

ETC_SECRETS: tuple[str, ...] = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/security/opasswd",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/pki/tls/private",
    "/etc/letsencrypt",
    "/etc/NetworkManager/system-connections",
    "/etc/wpa_supplicant",
    "/etc/krb5.keytab",
    "/etc/ipsec.secrets",
    "/etc/ppp/chap-secrets",
    "/etc/ppp/pap-secrets",
    "/etc/mysql/debian.cnf",
)
"""And every private host key in ``/etc/ssh`` (``ssh_host_*_key``), found when the sandbox is laid out."""

SYSTEM: tuple[str, ...] = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix",
    "/gnu",
    "/snap",
    "/sys",
)
"""Top-level folders (or the links merged-/usr systems have there) a command sees, read-only, when they exist."""

RUN: tuple[str, ...] = (
    "/run/systemd/resolve",
    "/run/resolvconf",
    "/run/NetworkManager/resolv.conf",
    "/run/current-system",
    "/run/booted-system",
    "/run/wrappers",
    "/run/opengl-driver",
)
"""What a command sees of ``/run``: where ``/etc/resolv.conf`` may point, and NixOS's system profile. Not the
user's runtime folder (D-Bus, keyring, gpg-agent), the Docker socket, container secrets or the system bus."""

MACOS_SYSTEM: tuple[str, ...] = (
    "/System",
    "/usr",
    "/bin",
    "/sbin",
    "/Library",
    "/Applications",
    "/opt",
    "/nix",
    "/etc",
    "/var",
    "/tmp",
    "/private/etc",
    "/private/var/db/timezone",
    "/private/var/select",
    "/private/var/db/xcode_select_link",
)
"""What a command sees of macOS, read-only (``/etc``, ``/var`` and ``/tmp`` are links into ``/private``: only the
links themselves, and of ``/private`` only what is named here). No ``/Users``, ``/Volumes`` or the rest of
``/private/var`` (other users' temporary folders, databases)."""

MACOS_SECRETS: tuple[tuple[str, bool], ...] = (
    ("/Library/Keychains", True),
    ("/private/var/db/sudo", True),
    ("/private/var/root", True),
    ("/private/etc/master.passwd", False),
    ("/Library/Preferences/SystemConfiguration/com.apple.airport.preferences.plist", False),
)
"""macOS's own secrets inside what ``MACOS_SYSTEM`` shows (path, is a folder): the system keychains, sudo's
records, root's home, password hashes, Wi-Fi passwords."""
