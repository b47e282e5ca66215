"""One policy, two renderings: for a planted workspace (a ``.env``, a hard link to it, ``.git/hooks``, a nested
repository, ``home_read`` entries, network on and off, ``read_only``) the Seatbelt profile grants and denies exactly
what the bubblewrap line mounts, rule by rule; the profile parses as balanced s-expressions, starts with
``(version 1)`` and ``(deny default)``, and never reaches the keychain. On macOS (``HERMES_REQUIRE_SEATBELT=1`` in
CI) the profile is also run for real."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from hermes_acp.exec import bwrap, seatbelt
from hermes_acp.exec.audit import audit_policy
from hermes_acp.exec.environment import EnvPolicy
from hermes_acp.exec.sandbox import Sandbox
from hermes_acp.exec.sandbox_policy import SandboxPolicy
from hermes_acp.exec.view import View

Sexp = str | list["Sexp"]


def parse(text: str) -> list[Sexp]:
    """The profile as nested lists; raises ``ValueError`` unless every parenthesis is balanced."""
    tokens: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c in "()":
            tokens.append(c)
            i += 1
        elif c.isspace():
            i += 1
        elif c == ";":
            i = text.index("\n", i) if "\n" in text[i:] else len(text)
        elif c == '"' or text.startswith('#"', i):
            start = i + (2 if c == "#" else 1)
            end = text.index('"', start)
            tokens.append(text[i : end + 1])
            i = end + 1
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in "()":
                j += 1
            tokens.append(text[i:j])
            i = j
    stack: list[list[Sexp]] = [[]]
    for token in tokens:
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) == 1:
                raise ValueError("unbalanced ')'")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    if len(stack) != 1:
        raise ValueError("unbalanced '('")
    return stack[0]


def seatbelt_rules(policy: SandboxPolicy) -> set[tuple[str, str, str, str]]:
    """(action, operation, matcher, path) for every path rule of the profile, its parameters resolved."""
    profile = seatbelt.render_profile(policy)
    found: set[tuple[str, str, str, str]] = set()
    for form in parse(profile.text):
        assert isinstance(form, list)
        action, *rest = form
        operations = [part for part in rest if isinstance(part, str)]
        for part in rest:
            if isinstance(part, list) and len(part) == 2 and isinstance(part[1], list) and part[1][0] == "param":
                matcher, (_, name) = part[0], part[1]
                assert isinstance(matcher, str) and isinstance(name, str)
                path = profile.params[name.strip('"')]
                found |= {(str(action), op, matcher, path) for op in operations}
    return found


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "sub" / ".git" / "info").mkdir(parents=True)
    (ws / "sub" / ".git" / "config").write_text("[core]\n")
    (ws / ".env").write_text("KEY=1\n")
    os.link(ws / ".env", ws / "copy.txt")
    (ws / "keys").mkdir()
    (ws / "keys" / "Server.PEM").write_text("-----BEGIN")
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".gitconfig").write_text("[user]\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("key")
    return ws, home


def _policy(ws: Path, home: Path, *, mode: str = "default", network: bool = True) -> SandboxPolicy:
    sandbox = Sandbox(
        network=network,
        home_read=("~/.gitconfig", "~/.config/git", "~/.ssh"),
        env_policy=EnvPolicy(),
        environ={"HOME": str(home), "PATH": "/usr/bin:/bin"},
        home=home / ".hermes-acp",
    )
    return audit_policy(sandbox, "macos", mode, ws)  # type: ignore[arg-type]


@pytest.mark.parametrize(("mode", "network"), [("default", True), ("default", False), ("read_only", True)])
def test_the_profile_grants_and_denies_what_the_bwrap_line_mounts(
    workspace: tuple[Path, Path], mode: str, network: bool
) -> None:
    ws, home = workspace
    policy = _policy(ws, home, mode=mode, network=network)
    line = bwrap.render(policy, "bwrap", ["/bin/true"])
    rules = seatbelt_rules(policy)
    triples = {tuple(line[i : i + 3]) for i in range(len(line) - 2)}
    real = os.path.realpath
    kinds = {m.kind for m in policy.view.mounts}
    assert {"ro", "rw", "frozen", "pinned", "mask_file", "tmpfs_home", "symlink"} <= kinds
    for mount in policy.view.mounts:
        match mount.kind:
            case "ro":
                assert ("--ro-bind", mount.source, mount.path) in triples
                assert ("allow", "file-read*", "subpath", mount.path) in rules
                assert ("allow", "file-write*", "subpath", mount.path) not in rules
            case "rw":
                assert ("--bind", mount.source, mount.path) in triples
                assert ("allow", "file-write*", "subpath", mount.path) in rules
                assert ("deny", "file-write-unlink", "literal", mount.path) in rules, "a root is never renamed"
            case "frozen":
                assert ("--ro-bind", mount.source, mount.path) in triples
                assert ("deny", "file-write*", "subpath", mount.path) in rules
            case "pinned":
                assert ("--bind", mount.source, mount.path) in triples
                assert ("deny", "file-write-unlink", "literal", mount.path) in rules
            case "mask_file":
                assert ("--ro-bind", mount.source, mount.path) in triples
                assert ("deny", "file-read-data", "literal", mount.path) in rules
                assert ("deny", "file-write*", "literal", mount.path) in rules
            case "mask_dir":
                assert ("--tmpfs", mount.path, "--remount-ro") in triples
                assert ("deny", "file-read*", "subpath", mount.path) in rules
            case "symlink":
                assert ("--symlink", mount.source, mount.path) in triples
                assert ("allow", "file-read*", "literal", mount.path) in rules
            case "tmpfs_home":
                assert ("--tmpfs", mount.path) in {tuple(line[i : i + 2]) for i in range(len(line) - 1)}
                granted = {op for _, op, _, path in rules if path == mount.path}
                assert granted == {"file-read-metadata"}, "the real home is never listed or read, only passed through"
    masked = {m.path for m in policy.view.mounts if m.kind == "mask_file"}
    assert {real(ws / ".env"), real(ws / "copy.txt"), real(ws / "keys" / "Server.PEM")} <= masked
    frozen = {m.path for m in policy.view.mounts if m.kind == "frozen"}
    assert {real(ws / ".git" / "hooks"), real(ws / "sub" / ".git" / "info"), real(ws / ".git" / "config")} <= frozen
    assert ("--unshare-net" in line) is (not policy.network)
    assert ('(allow network-outbound (remote ip "*:*"))' in seatbelt.render_profile(policy).text) is policy.network
    assert policy.network is (network and mode != "read_only")


def test_the_profile_is_balanced_denies_by_default_and_never_reaches_the_keychain(
    workspace: tuple[Path, Path],
) -> None:
    ws, home = workspace
    for network in (True, False):
        policy = replace(_policy(ws, home, network=network), for_editor=True)
        profile = seatbelt.render_profile(policy)
        forms = parse(profile.text)
        assert forms[:2] == [["version", "1"], ["deny", "default"]]
        for needle in ("SecurityServer", "securityd", "com.apple.pasteboard", "launchservicesd", "tccd"):
            assert needle not in profile.text
        used = {name.strip('"') for name in profile.text.split("(param ")[1:] for name in [name.split(")")[0]]}
        assert used == set(profile.params), "every parameter is defined, and every definition used"
        line = seatbelt.render(policy, ["/bin/echo", "hi"])
        assert line[0] == "/usr/bin/sandbox-exec"
        assert line[line.index("-p") + 1] == profile.text
        assert line[-2:] == ["/bin/echo", "hi"]
        assert line[line.index("/usr/bin/env") + 1] == "-i", "the environment is cleared inside the sandbox"
    with pytest.raises(ValueError, match="unbalanced"):
        parse("(allow (literal x)")


def test_the_profile_text_is_the_same_for_the_same_shape(workspace: tuple[Path, Path], tmp_path: Path) -> None:
    """Paths are parameters: the text never holds a path from the file system (no quoting to get wrong)."""
    ws, home = workspace
    policy = _policy(ws, home)
    text = seatbelt.render_profile(policy).text
    assert str(ws) not in text and str(home) not in text
    odd = tmp_path / 'we"ird (dir)'
    odd.mkdir()
    assert str(odd) not in seatbelt.render_profile(_policy(odd, home)).text


@pytest.mark.skipif(sys.platform != "darwin", reason="Seatbelt runs on macOS only (the macOS CI job runs these)")
def test_seatbelt_for_real_reads_no_secret_writes_no_hook_and_sees_no_home(workspace: tuple[Path, Path]) -> None:
    ws, home = workspace
    policy = replace(_policy(ws, home, network=False), scratch=None)

    def run(command: str) -> subprocess.CompletedProcess[str]:
        line = seatbelt.render(policy, ["/bin/sh", "-c", command])
        return subprocess.run(line, cwd=ws, capture_output=True, text=True, timeout=30, check=False)

    assert run("cat copy.txt .env").returncode != 0
    assert run("echo x >> .git/config").returncode != 0
    assert run("echo x > .git/hooks/pre-commit").returncode != 0
    assert run(f"ls {home}").returncode != 0, "the real home is not listed"
    assert run(f"cat {home}/.ssh/id_rsa").returncode == 0, "named in home_read"
    assert run("echo fine > written.txt").returncode == 0
    assert run("ln .env x && cat x").returncode != 0
    assert run("curl -sS --max-time 5 https://example.com").returncode != 0


def test_an_empty_view_renders_a_working_probe_profile() -> None:
    empty = View(mounts=(), roots=(), home=None, masked=())
    line = seatbelt.render(SandboxPolicy(empty, network=False, cwd="/"), ["/usr/bin/true"])
    assert parse(line[line.index("-p") + 1])[:2] == [["version", "1"], ["deny", "default"]]
    if os.environ.get("HERMES_REQUIRE_SEATBELT") == "1":
        assert subprocess.run(line, capture_output=True, timeout=30, check=False).returncode == 0
