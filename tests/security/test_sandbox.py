"""Real sandboxed runs of the terminal tool (bubblewrap): what a hostile command tries, and what it gets.

Each test builds a workspace with a fake home inside it (so the masks are what hides the secrets, not the private
/tmp), runs the tool as the turn loop would, and checks the effect on disk and what the model is told.
"""

from __future__ import annotations

import os
import re
import socket
from functools import partial
from pathlib import Path

import anyio
import pytest

from hermes_acp.config import SandboxSettings, Settings
from hermes_acp.errors import PermissionDeniedError
from hermes_acp.exec.environment import EnvPolicy
from hermes_acp.exec.sandbox import HOME_MASKS, Sandbox
from hermes_acp.tools.approval import Approval
from hermes_acp.tools.policy import decide
from hermes_acp.tools.terminal import TerminalTool
from tests.fakes.editor_client import EditorClient
from tests.tools.helpers import Progress, call, context, request_of
from tests.tools.test_terminal import ClientTerminals

from .support import listener, require_bwrap

pytestmark = pytest.mark.anyio

SECRET = "s3cr3t-value-that-must-not-leak"


@pytest.fixture
def bwrap() -> str:
    return require_bwrap()


class Layout:
    def __init__(self, root: Path):
        self.root = root
        self.ws = root / "ws"
        self.home = self.ws / "home"
        self.agent_home = self.ws / "agent-home"
        self.outside = root / "outside"
        for folder in (self.ws, self.home / ".ssh", self.home / ".aws", self.home / ".gnupg", self.agent_home):
            folder.mkdir(parents=True, exist_ok=True)
        (self.home / ".config" / "gh").mkdir(parents=True)
        (self.home / ".docker").mkdir()
        self.outside.mkdir()
        files = {
            self.home / ".ssh" / "id_rsa": "PRIVATE KEY",
            self.home / ".aws" / "credentials": "aws_secret_access_key=x",
            self.home / ".gnupg" / "secring.gpg": "gpg",
            self.home / ".config" / "gh" / "hosts.yml": "oauth_token: x",
            self.home / ".netrc": "machine x password y",
            self.home / ".docker" / "config.json": '{"auths": {}}',
            self.agent_home / "config.toml": "[model]",
            self.ws / ".env": "API_KEY=abc",
            self.ws / "app" / ".env.local": "TOKEN=def",
            self.ws / "notes.txt": "visible",
        }
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def sandbox(self, **overrides: object) -> Sandbox:
        fields: dict[str, object] = {"home": self.agent_home, **overrides}
        return Sandbox(**fields)  # type: ignore[arg-type]


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Layout:
    made = Layout(tmp_path)
    monkeypatch.setenv("HOME", str(made.home))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("GH_TOKEN", SECRET)
    monkeypatch.setenv("MY_KEY_VAR", SECRET)
    monkeypatch.setenv("HERMES_ACP_API_KEY", SECRET)
    monkeypatch.setenv("DB_PASSWORD", SECRET)
    monkeypatch.setenv("PLAIN_SETTING", "kept")
    return made


async def run(layout: Layout, command: str, *, sandbox: Sandbox | None = None, mode: str = "dont_ask") -> str:
    ctx = context(layout.ws, mode=mode, sandbox=sandbox or layout.sandbox())  # type: ignore[arg-type]
    called = await call(TerminalTool(), ctx, command=command)
    assert called.output["sandboxed"] is True
    return called.text


async def test_writes_outside_the_session_and_under_home_fail_and_the_model_is_told(bwrap: str, layout: Layout) -> None:
    target = layout.outside / "escaped.txt"
    text = await run(layout, f"echo x > {target}; echo y > /etc/hermes-escape; echo z > inside.txt")
    assert not target.exists()
    assert not Path("/etc/hermes-escape").exists()
    assert (layout.ws / "inside.txt").read_text() == "z\n", "the session's directory stays writable"
    assert "Read-only file system" in text
    assert "[Sandbox: a write outside the session's directories failed" in text


async def test_home_outside_the_workspace_is_read_only(
    bwrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Any existing folder outside /tmp (which the sandbox replaces with a private one) and outside the workspace
    # stands for a real home: the checkout, unless it was cloned under /tmp; else the user's home.
    home = next(p for p in (Path.cwd(), Path.home(), Path("/var/tmp")) if not p.resolve().is_relative_to("/tmp"))
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = context(ws, mode="dont_ask", sandbox=Sandbox(home=tmp_path / "agent"))
    called = await call(TerminalTool(), ctx, command='touch "$HOME/hermes-sandbox-probe" && echo wrote')
    assert "wrote" not in called.text and "Read-only file system" in called.text
    assert not (home / "hermes-sandbox-probe").exists()


async def test_every_masked_path_reads_as_empty(bwrap: str, layout: Layout) -> None:
    reads = [
        "~/.ssh/id_rsa", "~/.aws/credentials", "~/.gnupg/secring.gpg", "~/.config/gh/hosts.yml", "~/.netrc",
        "~/.docker/config.json", f"{layout.agent_home}/config.toml", ".env", "app/.env.local",
    ]  # fmt: skip
    command = "; ".join(f'echo "[{path}]"; cat {path} 2>&1' for path in reads) + "; cat notes.txt"
    text = await run(layout, command)
    for secret in ("PRIVATE KEY", "aws_secret", "gpg\n", "oauth_token", "password y", "auths", "[model]", "abc"):
        assert secret not in text, secret
    assert "def" not in text.split("[app/.env.local]")[1].split("\n")[1]
    assert "visible" in text, "ordinary files stay readable"
    assert "hidden from commands" in text and "~/.ssh" in text and ".env" in text
    listing = await run(layout, "ls -A ~/.ssh; echo end; echo x > ~/.ssh/new 2>&1")
    assert listing.split("\n")[1] == "end", "a masked folder is empty"
    assert not (layout.home / ".ssh" / "new").exists()
    assert len(HOME_MASKS) == 6


async def test_configured_masks_hide_more(bwrap: str, layout: Layout) -> None:
    (layout.ws / "private").mkdir()
    (layout.ws / "private" / "plan.txt").write_text("confidential")
    (layout.home / ".kube").mkdir()
    (layout.home / ".kube" / "config").write_text("cluster-secret")
    sandbox = layout.sandbox(mask=("private", "~/.kube"))
    text = await run(layout, "cat private/plan.txt ~/.kube/config 2>&1; echo done", sandbox=sandbox)
    assert "confidential" not in text and "cluster-secret" not in text and "done" in text


async def test_secret_variables_are_not_seen_unless_passed_back(bwrap: str, layout: Layout) -> None:
    text = await run(layout, "env")
    for name in ("OPENAI_API_KEY", "GH_TOKEN", "HERMES_ACP_API_KEY", "DB_PASSWORD"):
        assert f"{name}=" not in text
    assert f"MY_KEY_VAR={SECRET}" in text, "a name that does not look secret is withheld only when a provider's key"
    assert "PLAIN_SETTING=kept" in text and "TMPDIR=/tmp" in text
    provider_key = layout.sandbox(env_policy=EnvPolicy.of(["MY_KEY_VAR"]))
    assert SECRET not in await run(layout, "echo [$MY_KEY_VAR]", sandbox=provider_key)
    passed = layout.sandbox(env_policy=EnvPolicy.of(["MY_KEY_VAR"], ["GH_TOKEN"]))
    assert f"[{SECRET}]" in await run(layout, "echo [$GH_TOKEN]", sandbox=passed)


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


async def test_client_terminal_commands_are_wrapped_the_same_way(bwrap: str, layout: Layout) -> None:
    client = EditorClient()
    target = layout.outside / "from-editor.txt"
    ctx = context(layout.ws, mode="dont_ask", sandbox=layout.sandbox(), terminals=ClientTerminals(client))
    try:
        called = await call(
            TerminalTool(), ctx, command=f"cat ~/.ssh/id_rsa; env; echo x > {target}; echo y > /etc/hermes-x"
        )
    finally:
        await client.aclose()
    create = client.calls[0][1]
    assert create["command"] == bwrap
    assert "--unsetenv" in create["args"] and "OPENAI_API_KEY" in create["args"]
    assert SECRET not in str(create), "secret values never travel to the editor"
    assert "PRIVATE KEY" not in called.text and "OPENAI_API_KEY=" not in called.text
    assert not target.exists() and "Read-only file system" in called.text


async def test_client_terminal_without_a_sandbox_still_drops_secrets(layout: Layout) -> None:
    client = EditorClient()
    ctx = context(layout.ws, mode="dont_ask", sandbox=Sandbox(mode="off"), terminals=ClientTerminals(client))
    try:
        called = await call(TerminalTool(), ctx, command="env")
    finally:
        await client.aclose()
    create = client.calls[0][1]
    assert os.path.basename(create["command"]) == "env"
    assert create["args"][:2] == ["-u", "DB_PASSWORD"] and "OPENAI_API_KEY" in create["args"]
    assert "OPENAI_API_KEY=" not in called.text and "GH_TOKEN=" not in called.text
    assert "PLAIN_SETTING=kept" in called.text


async def test_local_commands_without_a_sandbox_still_drop_secrets(layout: Layout) -> None:
    ctx = context(layout.ws, mode="dont_ask", sandbox=Sandbox(mode="off"))
    called = await call(TerminalTool(), ctx, command="env")
    assert "OPENAI_API_KEY=" not in called.text and "DB_PASSWORD=" not in called.text
    assert "PLAIN_SETTING=kept" in called.text
    assert called.output["sandboxed"] is False


async def test_the_default_context_is_sandboxed(bwrap: str, layout: Layout) -> None:
    ctx = context(layout.ws, mode="dont_ask", sandbox=None)
    called = await call(TerminalTool(), ctx, command="echo $$")
    assert called.output["sandboxed"] is True
    assert called.text.split("\n")[1] in ("1", "2"), "the command is an early process of its own PID namespace"


async def test_sandboxed_commands_run_in_dont_ask_without_asking(bwrap: str, layout: Layout) -> None:
    ctx = context(layout.ws, mode="dont_ask", sandbox=layout.sandbox())
    tool = TerminalTool()
    request = await request_of(tool, ctx, command="make test")
    assert not request.ask_always
    assert decide("dont_ask", request, ctx.workspace, {}).decision == "allow"
    assert decide("default", request, ctx.workspace, {}).decision == "ask"
    assert decide("read_only", request, ctx.workspace, {}).decision == "deny"


async def test_without_bubblewrap_auto_asks_every_time_and_required_refuses(layout: Layout) -> None:
    missing = str(layout.root / "no-bwrap")
    tool = TerminalTool()
    parsed = tool.validate({"command": "echo hi"})
    auto = context(layout.ws, mode="dont_ask", sandbox=layout.sandbox(bwrap=missing))
    request = (await tool.approval(parsed, auto)).request
    assert request is not None
    assert request.ask_always and request.reason and "without a sandbox" in request.reason
    verdict = decide("dont_ask", request, auto.workspace, {"execute": "allow"})
    assert verdict.decision == "ask" and not verdict.offer_always
    assert decide("read_only", request, auto.workspace, {}).decision == "deny"
    notice = layout.sandbox(bwrap=missing).notice(await layout.sandbox(bwrap=missing).availability())
    assert notice is not None and "each one asks for permission" in notice.as_text()
    required = context(layout.ws, mode="dont_ask", sandbox=layout.sandbox(bwrap=missing, mode="required"))
    with pytest.raises(PermissionDeniedError, match='mode = "required"'):
        await tool.approval(parsed, required)
    with pytest.raises(PermissionDeniedError, match='mode = "required"'):
        await tool.run(parsed, Approval(required.tool_call_id), required)
    assert Sandbox(mode="off").notice(Sandbox(mode="off").probe()) is None


def test_the_sandbox_comes_from_the_settings(tmp_path: Path) -> None:
    from hermes_acp.config import ProviderSettings

    settings = Settings(
        home=tmp_path,
        providers={"x": ProviderSettings(kind="openai", base_url="http://127.0.0.1:1", api_key_env="X_KEY")},
        sandbox=SandboxSettings(mode="required", network=False, mask=["~/.kube"], pass_env=["GH_TOKEN"]),
    )
    sandbox = Sandbox.from_settings(settings)
    assert (sandbox.mode, sandbox.network, sandbox.mask, sandbox.home) == ("required", False, ("~/.kube",), tmp_path)
    assert sandbox.env_policy.withheld("X_KEY") and not sandbox.env_policy.withheld("GH_TOKEN")


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
    called = await call(TerminalTool(), ctx, command=command, timeout_s=1)
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
