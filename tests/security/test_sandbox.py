"""Real sandboxed runs of the terminal tool (bubblewrap): what a hostile command tries, and what it gets.

Each test builds a tree outside ``/tmp`` (commands get a private ``/tmp``, which would hide a tree there whatever our
own rules say): a workspace, a home beside it (``$HOME``), a sibling project and an agent home. It runs the tool as
the turn loop would and checks the effect on disk and what the model is told. Secrets are unreadable by default and
readable once the user allows them; the environment is an allow-list; the system is read-only and the rest of the
machine is not there.
"""

from __future__ import annotations

import dataclasses
import os
import pwd
import re
import socket
import subprocess
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import anyio
import pytest

from hermes_acp.config import DEFAULT_HOME_READ, SandboxSettings, Settings
from hermes_acp.errors import PermissionDeniedError
from hermes_acp.exec.environment import EnvPolicy
from hermes_acp.exec.sandbox import Sandbox
from hermes_acp.tools.approval import Approval
from hermes_acp.tools.policy import decide
from hermes_acp.tools.terminal import TerminalTool
from tests.fakes.editor_client import EditorClient
from tests.tools.helpers import Progress, call, context, request_of
from tests.tools.test_terminal import ClientTerminals

from .support import listener, outside_tmp, require_bwrap

pytestmark = pytest.mark.anyio

SECRET = "s3cr3t-value-that-must-not-leak"
HOME_SECRETS = {
    ".git-credentials": "https://u:ghp_gitcred@github.com",
    ".npmrc": "//registry.npmjs.org/:_authToken=npm_token",
    ".pypirc": "[pypi]\npassword = pypi-token",
    ".kube/config": "token: kube-token",
    ".config/gcloud/credentials.db": "gcloud-token",
    ".azure/msal_token_cache.json": "azure-token",
    ".bash_history": "export TOKEN=history-token",
    ".ssh/id_rsa": "PRIVATE KEY",
    ".aws/credentials": "aws_secret_access_key=aws-key",
    ".netrc": "machine x password netrc-pass",
}


@pytest.fixture
def bwrap() -> str:
    return require_bwrap()


class Layout:
    def __init__(self, root: Path):
        self.root = root
        self.ws = root / "ws"
        self.home = root / "home"
        self.agent_home = root / "agent-home"
        self.sibling = root / "other-project"
        self.outside = root / "outside"
        for folder in (self.ws, self.home, self.agent_home, self.sibling, self.outside):
            folder.mkdir(parents=True, exist_ok=True)
        files = {
            **{self.home / path: text for path, text in HOME_SECRETS.items()},
            self.home / ".gitconfig": "[user]\n\tname = Tester\n",
            self.home / ".config" / "git" / "credentials": "https://u:xdg-cred@example.com",
            self.home / ".config" / "git" / "ignore": "*.swp\n",
            self.home / "notes.md": "private notes",
            self.agent_home / "config.toml": "[model]",
            self.sibling / ".env": "SIBLING=sibling-secret",
            self.ws / ".env": "API_KEY=env-value-4711",
            self.ws / "app" / ".env.local": "TOKEN=local-value-4712",
            self.ws / "a" / "b" / "c" / "d" / "e" / "f" / "g" / ".env": "DEEP=seven-deep",
            self.ws / "keys" / "server.pem": "-----BEGIN PRIVATE KEY-----pem-body-4713",
            self.ws / "deploy" / "id_ed25519": "ssh-key-body-4714",
            self.ws / "deploy" / "id_ed25519.pub": "ssh-ed25519 public",
            self.ws / "src" / "id_utils.py": "print('kept')",
            self.ws / "notes.txt": "visible",
        }
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def sandbox(self, **overrides: object) -> Sandbox:
        fields: dict[str, object] = {"home": self.agent_home, **overrides}
        return Sandbox(**fields)  # type: ignore[arg-type]


@pytest.fixture
def layout(monkeypatch: pytest.MonkeyPatch) -> Iterator[Layout]:
    with outside_tmp() as root:
        made = Layout(root)
        monkeypatch.setenv("HOME", str(made.home))
        for name in ("OPENAI_API_KEY", "GH_TOKEN", "HERMES_ACP_API_KEY", "DB_PASSWORD", "API_KEY", "TOKEN", "SECRET"):
            monkeypatch.setenv(name, SECRET)
        for name in ("OPENAI_KEY", "AWS_ACCESS_KEY_ID", "GITHUB_PAT"):
            monkeypatch.setenv(name, SECRET)
        monkeypatch.setenv("DATABASE_URL", f"postgres://app:{SECRET}@db.internal/prod")
        monkeypatch.setenv("PLAIN_SETTING", "not-on-the-list")
        monkeypatch.setenv("LANG", "C.UTF-8")
        yield made


async def run(layout: Layout, command: str, *, sandbox: Sandbox | None = None, mode: str = "dont_ask") -> str:
    ctx = context(layout.ws, mode=mode, sandbox=sandbox or layout.sandbox())  # type: ignore[arg-type]
    called = await call(TerminalTool(), ctx, command=command)
    assert called.output["sandboxed"] is True
    return called.text


# -- the file system --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("relative", "value"), list(HOME_SECRETS.items()))
async def test_a_secret_of_the_home_is_unreadable_by_default_and_readable_once_allowed(
    bwrap: str, layout: Layout, relative: str, value: str
) -> None:
    hidden = await run(layout, f"cat ~/{relative}")
    assert value not in hidden
    assert "not visible to commands" in hidden and "home_read" in hidden, "the model is told how the user allows it"
    entry = f"~/{Path(relative).parent}" if "/" in relative else f"~/{relative}"  # the folder, or the file itself
    allowed = layout.sandbox(home_read=(*DEFAULT_HOME_READ, entry))
    assert value in await run(layout, f"cat ~/{relative}", sandbox=allowed)


async def test_the_home_is_fresh_with_only_the_default_read_list_and_its_credentials_masked(
    bwrap: str, layout: Layout
) -> None:
    text = await run(layout, "ls -A ~; cat ~/.gitconfig ~/.config/git/ignore; cat ~/.config/git/credentials; echo end")
    assert "Tester" in text and "*.swp" in text, "git's settings are read"
    assert "xdg-cred" not in text, "a credential file inside a folder of home_read stays masked"
    assert "notes.md" not in text and ".ssh" not in text and ".npmrc" not in text
    written = await run(layout, "echo x > ~/scratch && cat ~/scratch && echo x > ~/.gitconfig")
    assert written.split("\n")[1] == "x", "the fresh home is writable"
    assert not (layout.home / "scratch").exists() and "Tester" in (layout.home / ".gitconfig").read_text()
    assert "Tester" in await run(layout, "cat ~/.gitconfig"), "nothing written there outlives the command"
    writable = layout.sandbox(home_write=("~/.cache",))
    await run(layout, "mkdir -p ~/.cache/tool && echo kept > ~/.cache/tool/state", sandbox=writable)
    assert not (layout.home / ".cache").exists(), "home_write names a path that exists"
    (layout.home / ".cache").mkdir()
    await run(layout, "mkdir -p ~/.cache/tool && echo kept > ~/.cache/tool/state", sandbox=writable)
    assert (layout.home / ".cache" / "tool" / "state").read_text() == "kept\n"


async def test_project_secrets_are_masked_at_any_depth_and_shown_once_revealed(bwrap: str, layout: Layout) -> None:
    behind = layout.ws / "big"
    behind.mkdir()
    for index in range(20_000):
        (behind / f"f{index:05}").touch()
    (layout.ws / "zz" / "after").mkdir(parents=True)
    (layout.ws / "zz" / "after" / ".env").write_text("BEHIND=behind-20000")
    os.link(layout.ws / ".env", layout.ws / "hard-link.txt")
    (layout.ws / "node_modules" / "pkg").mkdir(parents=True)
    (layout.ws / "node_modules" / "pkg" / ".env").write_text("PKG=in-node-modules")
    reads = [
        ".env", "app/.env.local", "a/b/c/d/e/f/g/.env", "zz/after/.env", "hard-link.txt", "keys/server.pem",
        "deploy/id_ed25519", "node_modules/pkg/.env",
    ]  # fmt: skip
    secrets = ["4711", "4712", "seven-deep", "behind-20000", "4713", "4714", "in-node-modules"]
    text = await run(
        layout, " ; ".join(f"cat {path}" for path in reads) + "; cat deploy/id_ed25519.pub src/id_utils.py"
    )
    for secret in secrets:
        assert secret not in text, secret
    assert "ssh-ed25519 public" in text and "kept" in text, "public keys and id_*.py files are not secrets"
    assert "hidden from commands" in text and "reveal" in text
    revealed = layout.sandbox(reveal=(".env", "*.pem"))
    text = await run(
        layout, "cat .env hard-link.txt a/b/c/d/e/f/g/.env keys/server.pem app/.env.local", sandbox=revealed
    )
    assert text.count("env-value-4711") == 2, "revealed, and the hard link with it"
    assert "seven-deep" in text and "pem-body-4713" in text
    assert "local-value-4712" not in text, ".env.local is not named by the reveal patterns"


async def test_the_system_is_read_only_and_the_rest_of_the_machine_is_not_there(
    bwrap: str, layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")  # a PATH folder outside the home would be bound in
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    on_the_way = {part for part in layout.root.parts}  # the tree may lie in the real home: its way there shows
    of_the_home = [str(p) for p in sorted(real_home.iterdir())[:20] if p.name not in on_the_way]
    command = (
        f"ls -d /srv /mnt /media /var/lib /boot {layout.sibling} {layout.outside} {' '.join(of_the_home)} 2>&1; "
        "cat /etc/shadow; echo shadow-done; ls /usr/bin/env; echo y > /etc/hermes-escape"
    )
    text = await run(layout, command)
    for path in ("/srv", "/mnt", "/media", "/var/lib", "/boot", str(layout.sibling), str(layout.outside)):
        assert f"cannot access '{path}'" in text, path
    for path in of_the_home:
        assert f"cannot access '{path}'" in text, f"{path}: the user's real home is not there"
    assert "root:" not in text and "shadow-done" in text, "/etc/shadow reads as empty"
    assert "/usr/bin/env" in text and not Path("/etc/hermes-escape").exists()
    assert "SIBLING" not in await run(layout, f"cat {layout.sibling}/.env"), "a sibling project's .env is not there"
    allowed = layout.sandbox(home_read=(*DEFAULT_HOME_READ, str(layout.sibling / ".env")))
    assert "sibling-secret" in await run(layout, f"cat {layout.sibling}/.env", sandbox=allowed)


async def test_writes_outside_the_session_fail_and_the_model_is_told(bwrap: str, layout: Layout) -> None:
    target = layout.outside / "escaped.txt"
    text = await run(layout, f"echo x > {target}; echo y > /usr/hermes-escape; echo z > inside.txt")
    assert not target.exists() and not Path("/usr/hermes-escape").exists()
    assert (layout.ws / "inside.txt").read_text() == "z\n", "the session's directory stays writable"
    assert "[Sandbox: a write outside the session's directories failed" in text


async def test_the_agent_home_and_configured_masks_are_hidden_where_visible(bwrap: str, layout: Layout) -> None:
    (layout.ws / "private").mkdir()
    (layout.ws / "private" / "plan.txt").write_text("confidential")
    inside = layout.ws / "agent"
    inside.mkdir()
    (inside / "state.txt").write_text("agent-state")
    sandbox = layout.sandbox(mask=("private",), home=inside)
    text = await run(layout, "cat private/plan.txt agent/state.txt 2>&1; echo done", sandbox=sandbox)
    assert "confidential" not in text and "agent-state" not in text and "done" in text


async def test_a_home_inside_the_session_stays_visible_with_its_credentials_masked(
    bwrap: str, layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = layout.ws / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY in ws")
    (home / ".npmrc").write_text("npm_token_in_ws")
    (home / "readme.md").write_text("plain file")
    monkeypatch.setenv("HOME", str(home))
    text = await run(layout, "cat ~/.ssh/id_rsa ~/.npmrc ~/readme.md; ls -A ~/.ssh; echo end")
    assert "PRIVATE KEY" not in text and "npm_token_in_ws" not in text and "plain file" in text


# -- git --------------------------------------------------------------------------------------------------------


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=30, check=False)


async def test_every_existing_repository_keeps_its_config_hooks_and_info_at_any_depth(
    bwrap: str, layout: Layout
) -> None:
    repositories = [
        layout.ws,
        layout.ws / "a" / "b" / "c" / "d" / "e" / "f" / "g" / "h",
        layout.ws / "node_modules" / "dep",
    ]
    for folder in repositories:
        folder.mkdir(parents=True, exist_ok=True)
        assert _git(folder, "init", "-q").returncode == 0
    before = {folder: (folder / ".git" / "config").read_text() for folder in repositories}
    plants = "; ".join(
        f"git -C {folder} config core.fsmonitor 'touch {layout.outside}/ran' 2>&1;"
        f" echo x > {folder}/.git/hooks/pre-commit; echo '* filter=x' > {folder}/.git/info/attributes"
        for folder in repositories
    )
    text = await run(layout, plants + f"; mv {layout.ws}/.git {layout.ws}/moved 2>&1")
    for folder in repositories:
        assert (folder / ".git" / "config").read_text() == before[folder], folder
        assert not (folder / ".git" / "hooks" / "pre-commit").exists()
        assert not (folder / ".git" / "info" / "attributes").exists()
    assert (layout.ws / ".git").is_dir() and not (layout.ws / "moved").exists(), ".git cannot be swapped"
    assert "read-only to commands" in text


async def test_a_repository_a_command_creates_runs_nothing_afterwards(bwrap: str, layout: Layout) -> None:
    marker = layout.outside / "fsmonitor-ran"
    hook_marker = layout.outside / "hook-ran"
    command = (
        "mkdir new && cd new && git init -q . && "
        f"git config core.fsmonitor 'touch {marker}' && git config alias.st '!touch {marker}' && "
        f"printf '#!/bin/sh\\ntouch {hook_marker}\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout"
        " && echo planted"
    )
    text = await run(layout, command)
    assert "planted" in text
    assert "created a git repository" in text and "switched off" in text
    repo = layout.ws / "new"
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()
    assert "fsmonitor" in (repo / ".git" / "config.quarantined").read_text(), "kept for the user to look at"
    assert _git(repo, "status").returncode == 0, "a plain git status outside, by the user"
    _git(repo, "checkout", "-q", "-b", "x")
    assert not marker.exists() and not hook_marker.exists()


async def test_the_agents_own_git_runs_nothing_a_repository_names(layout: Layout) -> None:
    from hermes_acp.commands.review import Changes, collect_changes

    repo = layout.ws / "planted"
    repo.mkdir()
    assert _git(repo, "init", "-q").returncode == 0
    marker = layout.outside / "ran"
    for key, value in {
        "core.fsmonitor": f"touch {marker}-fsmonitor",
        "core.pager": f"touch {marker}-pager",
        "diff.external": f"touch {marker}-external",
        "filter.evil.clean": f"touch {marker}-clean",
        "filter.evil.process": f"touch {marker}-process",
    }.items():
        _git(repo, "config", key, value)
    (repo / ".gitattributes").write_text("* filter=evil\n")
    (repo / "a.txt").write_text("one\n")
    _git(repo, "add", "-A")
    hooks = repo / ".git" / "hooks"
    for name in ("pre-commit", "post-index-change", "reference-transaction"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch {marker}-hook-{name}\n")
        (hooks / name).chmod(0o755)
    for path in layout.outside.glob("ran-*"):
        path.unlink()
    (repo / "a.txt").write_text("two\n")
    changes = await collect_changes(repo, EnvPolicy())
    assert isinstance(changes, Changes)
    assert list(layout.outside.glob("ran*")) == [], "nothing the repository names ran"


# -- the environment --------------------------------------------------------------------------------------------

WITHHELD = (
    "OPENAI_API_KEY", "GH_TOKEN", "HERMES_ACP_API_KEY", "DB_PASSWORD", "API_KEY", "TOKEN", "SECRET", "OPENAI_KEY",
    "AWS_ACCESS_KEY_ID", "GITHUB_PAT", "DATABASE_URL", "PLAIN_SETTING",
)  # fmt: skip


async def test_the_environment_is_an_allow_list(bwrap: str, layout: Layout) -> None:
    text = await run(layout, "env")
    for name in WITHHELD:
        assert f"{name}=" not in text, name
    assert SECRET not in text
    assert "LANG=C.UTF-8" in text and "TMPDIR=/tmp" in text and f"HOME={layout.home}" in text
    passed = layout.sandbox(env_policy=EnvPolicy.of(["GH_TOKEN", "DATABASE_URL"]))
    text = await run(layout, 'echo "[$GH_TOKEN] [$DATABASE_URL]"', sandbox=passed)
    assert f"[{SECRET}]" in text and "@db.internal/prod]" in text


async def test_client_terminal_commands_are_wrapped_the_same_way_with_a_cleared_environment(
    bwrap: str, layout: Layout
) -> None:
    client = EditorClient()
    target = layout.outside / "from-editor.txt"
    ctx = context(layout.ws, mode="dont_ask", sandbox=layout.sandbox(), terminals=ClientTerminals(client))
    try:
        command = f"cat ~/.ssh/id_rsa .env; env; echo x > {target}; echo y > /usr/hermes-x"
        called = await call(TerminalTool(), ctx, command=command)
    finally:
        await client.aclose()
    create = client.calls[0][1]
    line = [create["command"], *create["args"]]
    assert bwrap in line and "--clearenv" in line
    assert SECRET not in str(create), "secret values never travel to the editor"
    assert "PRIVATE KEY" not in called.text and "env-value-4711" not in called.text
    for name in WITHHELD:
        assert f"{name}=" not in called.text, name
    assert not target.exists() and not Path("/usr/hermes-x").exists() and "Read-only file system" in called.text


async def test_without_a_sandbox_commands_still_get_the_allow_list(layout: Layout) -> None:
    client = EditorClient()
    ctx = context(layout.ws, mode="dont_ask", sandbox=Sandbox(mode="off"), terminals=ClientTerminals(client))
    try:
        called = await call(TerminalTool(), ctx, command="env")
    finally:
        await client.aclose()
    create = client.calls[0][1]
    assert "-i" in create["args"] and SECRET not in str(create)
    local = await call(TerminalTool(), context(layout.ws, mode="dont_ask", sandbox=Sandbox(mode="off")), command="env")
    for text in (called.text, local.text):
        for name in WITHHELD:
            assert f"{name}=" not in text, name
        assert "LANG=C.UTF-8" in text
    assert local.output["sandboxed"] is False


# -- processes, devices, network ----------------------------------------------------------------------------------


async def test_a_command_cannot_see_or_signal_the_agent(bwrap: str, layout: Layout) -> None:
    me = os.getpid()
    text = await run(layout, f"kill -0 {me} 2>&1; kill -TERM {me} 2>&1; echo count=$(ls /proc | grep -c '^[0-9]')")
    assert "No such process" in text
    assert "it cannot signal others" in text
    count = int(re.search(r"count=(\d+)", text).group(1))  # type: ignore[union-attr]
    assert count < 10, "only the command's own processes are visible"
    os.kill(me, 0)  # still here


async def test_root_cannot_remount_the_file_system_writable(bwrap: str, layout: Layout) -> None:
    target = layout.outside / "after-remount.txt"
    text = await run(layout, f"mount -o remount,rw / 2>&1; grep CapEff /proc/self/status; echo x > {target}")
    assert "CapEff:\t0000000000000000" in text
    assert not target.exists()


async def test_tmp_is_private_to_the_command(bwrap: str, layout: Layout) -> None:
    marker = f"hermes-private-{os.getpid()}"
    text = await run(layout, f"echo ok > /tmp/{marker} && cat /tmp/{marker} && echo $TMPDIR")
    assert "ok\n/tmp" in text
    assert not (Path("/tmp") / marker).exists()


@pytest.mark.parametrize(
    ("mode", "network", "reachable"),
    [("dont_ask", True, True), ("read_only", True, False), ("dont_ask", False, False)],
)
async def test_network_is_off_in_read_only_mode_and_when_configured(
    bwrap: str, layout: Layout, mode: str, network: bool, reachable: bool
) -> None:
    probe = "python3 -c \"import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 3); print('connected')\" {port} 2>&1 | tail -1"  # noqa: E501
    with listener() as port:
        text = await run(layout, probe.format(port=port), sandbox=layout.sandbox(network=network), mode=mode)
    assert ("connected" in text) is reachable, text
    if not reachable:
        assert "Connection refused" in text and "no network" in text


async def test_the_default_context_is_sandboxed(bwrap: str, layout: Layout) -> None:
    ctx = context(layout.ws, mode="dont_ask", sandbox=None)
    called = await call(TerminalTool(), ctx, command="echo $$")
    assert called.output["sandboxed"] is True
    assert called.text.split("\n")[1] in ("1", "2", "3"), "the command is an early process of its own PID namespace"


async def test_sandboxed_commands_run_in_dont_ask_without_asking(bwrap: str, layout: Layout) -> None:
    ctx = context(layout.ws, mode="dont_ask", sandbox=layout.sandbox())
    tool = TerminalTool()
    request = await request_of(tool, ctx, command="make test")
    assert not request.ask_always
    assert decide("dont_ask", request, ctx.env.workspace, {}).decision == "allow"
    assert decide("default", request, ctx.env.workspace, {}).decision == "ask"
    assert decide("read_only", request, ctx.env.workspace, {}).decision == "deny"


async def test_without_bubblewrap_auto_asks_every_time_and_required_refuses(layout: Layout) -> None:
    missing = str(layout.root / "no-bwrap")
    tool = TerminalTool()
    parsed = tool.validate({"command": "echo hi"})
    auto = context(layout.ws, mode="dont_ask", sandbox=layout.sandbox(bwrap=missing))
    request = (await tool.approval(parsed, auto)).request
    assert request is not None
    assert request.ask_always and request.reason and "without a sandbox" in request.reason
    verdict = decide("dont_ask", request, auto.env.workspace, {"execute": "allow"})
    assert verdict.decision == "ask" and not verdict.offer_always
    assert decide("read_only", request, auto.env.workspace, {}).decision == "deny"
    notice = layout.sandbox(bwrap=missing).notice(await layout.sandbox(bwrap=missing).availability())
    assert notice is not None and "each one asks for permission" in notice.as_text()
    required = context(layout.ws, mode="dont_ask", sandbox=layout.sandbox(bwrap=missing, mode="required"))
    with pytest.raises(PermissionDeniedError, match='mode = "required"'):
        await tool.approval(parsed, required)
    with pytest.raises(PermissionDeniedError, match='mode = "required"'):
        await tool.run(parsed, Approval(required.tool_call_id), required)
    assert Sandbox(mode="off").notice(Sandbox(mode="off").probe()) is None


def test_the_sandbox_comes_from_the_settings(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path,
        sandbox=SandboxSettings(
            mode="required",
            network=False,
            mask=["~/.kube"],
            reveal=[".env.example"],
            home_read=["~/.m2"],
            home_write=["~/.cargo/registry"],
            pass_env=["GH_TOKEN"],
            limits={"processes": 64, "memory_mib": 512},
        ),
    )
    sandbox = Sandbox.from_settings(settings)
    assert (sandbox.mode, sandbox.network, sandbox.mask, sandbox.home) == ("required", False, ("~/.kube",), tmp_path)
    assert (sandbox.reveal, sandbox.home_read, sandbox.home_write) == (
        (".env.example",),
        ("~/.m2",),
        ("~/.cargo/registry",),
    )
    assert sandbox.env_policy.allows("GH_TOKEN") and not sandbox.env_policy.allows("X_KEY")
    assert (sandbox.limits.processes, sandbox.limits.memory_mib, sandbox.limits.cpu_s) == (64, 512, 1800)
    assert dataclasses.replace(sandbox, mode="auto").mode == "auto"


def test_a_listener_is_reachable_from_here() -> None:
    """The network tests' control: the 127.0.0.1 listener accepts connections outside the sandbox."""
    with listener() as port:
        connection = socket.create_connection(("127.0.0.1", port), 3)
        connection.close()


def _running_with(marker: str) -> list[int]:
    """Host pids whose command line holds ``marker`` (zombies excluded)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


async def test_a_timeout_ends_everything_the_sandboxed_command_started(bwrap: str, layout: Layout) -> None:
    marker = f"hermes-sandbox-bg-{os.getpid()}"
    ctx = context(layout.ws, mode="dont_ask", sandbox=layout.sandbox())
    command = f"(exec -a {marker} sleep 300) & (exec -a {marker} sleep 300) & echo started; wait"
    called = await call(TerminalTool(), ctx, command=command, timeout_s=3)
    assert called.outcome.error_code == "timeout" and "started" in called.text
    assert _running_with(marker) == [], "a background process outlived its sandboxed command"


async def test_background_jobs_end_with_the_sandboxed_command(bwrap: str, layout: Layout) -> None:
    marker = f"hermes-sandbox-left-{os.getpid()}"
    ctx = context(layout.ws, mode="dont_ask", sandbox=layout.sandbox())
    called = await call(TerminalTool(), ctx, command=f"(exec -a {marker} sleep 300) > /dev/null 2>&1 & echo left")
    assert called.text == "Exit code 0.\nleft"
    assert _running_with(marker) == []


async def test_a_cancel_ends_everything_the_sandboxed_command_started(bwrap: str, layout: Layout) -> None:
    marker = f"hermes-sandbox-cancel-{os.getpid()}"
    progress = Progress()
    ctx = context(layout.ws, mode="dont_ask", sandbox=layout.sandbox(), progress=progress)
    command = f"(exec -a {marker} sleep 300) & echo ready; wait"
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(call, TerminalTool(), ctx, command=command))
            while not any("ready" in text for text in progress.texts()):
                await progress.arrived.wait()
            assert _running_with(marker), "the control: the background process runs"
            tg.cancel_scope.cancel()
    assert _running_with(marker) == []


def test_the_view_binds_path_folders_outside_the_home_and_says_what_each_path_shows(layout: Layout) -> None:
    """``View`` alone (no bwrap): a PATH folder named ``bin`` outside the home brings the folder above it (its
    toolchain's libraries), one in the home does not; ``shows`` tells a masked file, a visible one, the way to a
    visible one, and what is not there."""
    from hermes_acp.exec.view import View

    toolchain = layout.outside / "sdk" / "bin"
    toolchain.mkdir(parents=True)
    in_home = layout.home / "tools" / "bin"
    in_home.mkdir(parents=True)
    request = layout.sandbox().view_request([layout.ws], {"HOME": str(layout.home), "PATH": f"{toolchain}:{in_home}"})
    view = View.compute(request, empty=Path(os.devnull))
    bound = {mount.path for mount in view.mounts if mount.kind == "ro"}
    assert str(layout.outside / "sdk") in bound and str(layout.home / "tools") not in bound
    assert view.shows(str(layout.ws / ".env")) == "masked"
    assert view.shows(str(layout.ws / "notes.txt")) == "visible"
    assert view.shows(str(layout.ws.parent)) == "visible", "a folder on the way to a visible one"
    assert view.shows(str(layout.sibling / ".env")) == "hidden"
    assert view.shows(str(layout.home / ".npmrc")) == "hidden", "the fresh home does not hold the real one"
    assert view.scanned >= 8 and str(layout.ws / ".env") in view.masked
