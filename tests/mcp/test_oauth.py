"""MCP servers behind OAuth: a real authorization server and protected server built with the mcp SDK
(``fixtures/mcp_auth``) on loopback, the session's servers (``McpServers``) with a token folder, and a browser that
follows the page the ``SignIn`` port receives (``tests/mcp/people.py``)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest

from fixtures.mcp_auth import Authority, follow, serve_elsewhere, serve_protected
from fixtures.mcp_server import read_journal, stdio_spec
from hermes_acp.config import McpServerSettings
from hermes_acp.errors import McpServerUnavailableError, OutcomeUnknownError
from hermes_acp.mcp_client import LinkState, McpServers, ServerConnection, SignInFailed
from hermes_acp.telemetry import configure_logging
from tests.mcp.people import Browser, http_entry, session
from tests.mcp.support import START_S, find_tool, run_tool, text_of

pytestmark = pytest.mark.anyio


async def _state(servers: McpServers, name: str, *states: LinkState) -> ServerConnection:
    conn = servers.connection(name)
    assert conn is not None
    with anyio.fail_after(START_S):
        await conn.wait_for(lambda c: c.state in states and not c.signing_in)
    return conn


def _token_file(tmp_path: Path) -> Path:
    [found] = (tmp_path / "home" / "mcp-auth").glob("*.json")
    return found


def _stored(tmp_path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(_token_file(tmp_path).read_text())
    return data


async def test_a_server_signs_in_through_the_page_the_port_receives_and_its_tools_appear(tmp_path: Path) -> None:
    browser = Browser()
    async with serve_protected(tmp_path / "journal") as protected:
        async with session(tmp_path, [http_entry(protected.url)], browser=browser) as servers:
            await _state(servers, "remote", LinkState.READY)
            assert await browser.sign_in_ended() == ("remote", None)
            outcome = await run_tool(tmp_path, find_tool(servers, "mcp__remote__echo"), text="hello")
            assert text_of(outcome) == "hello"
            [status] = servers.status()
            assert (status.state, status.signs_in) == ("ready", True)
    [(server, url)] = browser.opened
    page = urlsplit(url)
    query = parse_qs(page.query)
    assert server == "remote" and url.startswith(f"{protected.base}/authorize?")
    assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) >= 43
    assert query["redirect_uri"][0].startswith("http://127.0.0.1:") and query["state"]
    assert protected.authority.log == ["register", "authorize", "code"]
    folder = tmp_path / "home" / "mcp-auth"
    assert folder.stat().st_mode & 0o777 == 0o700
    assert _token_file(tmp_path).stat().st_mode & 0o777 == 0o600
    stored = _stored(tmp_path)
    assert {"client", "tokens", "expires_at", "redirect_port"} <= set(stored)
    assert str(stored["redirect_port"]) in query["redirect_uri"][0], "the port the client was registered with"


async def test_without_a_port_the_server_waits_for_sign_in_and_the_session_goes_on(tmp_path: Path) -> None:
    async with (
        serve_protected() as protected,
        session(tmp_path, [http_entry(protected.url), stdio_spec("local", tools=["echo"])]) as servers,
    ):
        await _state(servers, "remote", LinkState.SIGN_IN)
        notices = await servers.prepare_turn(wait_s=START_S)
        assert any("'remote' needs you to sign in (/mcp login remote)" in n for n in notices), notices
        names = {t.name for t in servers.tools()}
        assert "mcp__local__echo" in names and not any(n.startswith("mcp__remote__") for n in names)
        assert {s.name: s.state for s in servers.status()}["remote"] == "needs sign-in"
        url = await servers.sign_in("remote")
        assert url is not None and url.startswith(f"{protected.base}/authorize?")
        await follow(url)
        await _state(servers, "remote", LinkState.READY)
        assert "mcp__remote__echo" in {t.name for t in servers.tools()}


async def test_an_expired_token_is_refreshed_before_use_also_after_a_restart(tmp_path: Path) -> None:
    authority = Authority(access_ttl=30)  # shorter than the refresh margin: due at every connect
    async with serve_protected(authority=authority) as protected:
        async with session(tmp_path, [http_entry(protected.url)], browser=Browser()) as servers:
            await _state(servers, "remote", LinkState.READY)
            first = _stored(tmp_path)["tokens"]
            assert authority.log[:3] == ["register", "authorize", "code"]
            assert "refresh" in authority.log, "the token due at the reconnect after the sign-in was refreshed"
        before = authority.log.count("refresh")
        restarted = Browser()
        async with session(tmp_path, [http_entry(protected.url)], browser=restarted) as servers:
            await _state(servers, "remote", LinkState.READY)
            outcome = await run_tool(tmp_path, find_tool(servers, "mcp__remote__echo"), text="again")
            assert text_of(outcome) == "again"
        assert restarted.opened == [], "no sign-in after a restart"
        assert authority.log.count("refresh") > before and authority.log.count("register") == 1
        assert _stored(tmp_path)["tokens"] != first


async def test_a_refused_refresh_drops_the_tokens_and_asks_again(tmp_path: Path) -> None:
    authority = Authority(access_ttl=30)
    async with serve_protected(authority=authority) as protected:
        async with session(tmp_path, [http_entry(protected.url)], browser=Browser()) as servers:
            await _state(servers, "remote", LinkState.READY)
        authority.refuse_refresh = True
        async with session(tmp_path, [http_entry(protected.url)]) as servers:
            conn = await _state(servers, "remote", LinkState.SIGN_IN)
            assert "needs you to sign in" in str(conn.error)
            stored = _stored(tmp_path)
            assert "tokens" not in stored and "client" in stored, "the pair is dropped, the client kept"
        authority.refuse_refresh = False
        again = Browser()
        async with session(tmp_path, [http_entry(protected.url)], browser=again) as servers:
            await _state(servers, "remote", LinkState.READY)
        assert len(again.opened) == 1
        assert "refused refresh" in authority.log and authority.log.count("register") == 1


async def test_a_revoked_token_fails_the_call_as_not_sent_and_the_user_is_asked_again(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    browser = Browser()
    async with serve_protected(journal) as protected:
        async with session(tmp_path, [http_entry(protected.url)], browser=browser) as servers:
            await _state(servers, "remote", LinkState.READY)
            await browser.sign_in_ended()
            echo = find_tool(servers, "mcp__remote__echo")
            assert not echo.read_only, "echo is a mutating tool here: a lost answer would be outcome-unknown"
            protected.authority.revoke()
            with pytest.raises(McpServerUnavailableError, match="sign in") as caught:
                await run_tool(tmp_path, echo, text="after revoke")
            assert not isinstance(caught.value, OutcomeUnknownError)
            assert read_journal(journal).calls("echo") == [], "the server never ran it"
            assert "tokens" not in _stored(tmp_path)
            await servers.sign_in("remote")  # a sign-in the user asks for (the automatic one was used)
            await _state(servers, "remote", LinkState.READY)
            assert text_of(await run_tool(tmp_path, echo, text="signed in again")) == "signed in again"
    assert len(browser.opened) == 2


async def test_a_token_the_server_ends_early_is_refreshed_and_the_call_goes_out_once(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    browser = Browser()
    async with serve_protected(journal) as protected:
        async with session(tmp_path, [http_entry(protected.url)], browser=browser) as servers:
            await _state(servers, "remote", LinkState.READY)
            await browser.sign_in_ended()
            protected.authority.expire()  # before the hour it was given for: 401, its refresh token still good
            echo = find_tool(servers, "mcp__remote__echo")
            assert text_of(await run_tool(tmp_path, echo, text="refreshed")) == "refreshed"
    assert len(browser.opened) == 1, "no second sign-in"
    assert protected.authority.log.count("refresh") == 1
    assert [c["arguments"]["text"] for c in read_journal(journal).calls("echo")] == ["refreshed"]


async def test_a_server_whose_authorization_server_names_another_issuer_is_refused(tmp_path: Path) -> None:
    browser = Browser()
    async with serve_protected(tamper="wrong_issuer") as protected:
        async with session(tmp_path, [http_entry(protected.url)], browser=browser) as servers:
            conn = await _state(servers, "remote", LinkState.FAILED)
            assert "issuer" in str(conn.error).lower(), conn.error
    assert browser.opened == [] and "register" not in protected.authority.log


async def test_a_bearer_token_is_never_sent_to_another_host(tmp_path: Path) -> None:
    browser = Browser()
    async with serve_elsewhere() as elsewhere, serve_protected(tamper="redirect", elsewhere=elsewhere) as protected:
        async with session(tmp_path, [http_entry(protected.url)], browser=browser) as servers:
            conn = await _state(servers, "remote", LinkState.FAILED)
            assert "307" in str(conn.error) or "redirect" in str(conn.error).lower(), conn.error
    assert len(browser.opened) == 1, "it signed in"
    assert elsewhere.hits == [], "the redirect to another origin was not followed"


async def test_a_client_id_from_config_is_used_where_the_server_does_not_register_clients(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    authority = Authority()
    authority.add_client("hermes-by-hand", f"http://127.0.0.1:{port}/callback")
    async with serve_protected(authority=authority, registration=False) as protected:
        async with session(tmp_path / "a", [http_entry(protected.url)], browser=Browser()) as servers:
            conn = await _state(servers, "remote", LinkState.FAILED)
            assert "client_id" in str(conn.error), conn.error
        configured = {"remote": McpServerSettings(url=protected.url, client_id="hermes-by-hand", redirect_port=port)}
        async with session(tmp_path / "b", [http_entry(protected.url)], browser=Browser(), configured=configured) as s:
            await _state(s, "remote", LinkState.READY)
    assert "register" not in authority.log and authority.log.count("code") == 1


async def test_a_config_client_id_is_not_given_to_an_editor_server_at_another_url(tmp_path: Path) -> None:
    authority = Authority()
    async with serve_protected(authority=authority) as protected:
        configured = {"remote": McpServerSettings(url="https://elsewhere.invalid/mcp", client_id="by-hand")}
        async with session(tmp_path, [http_entry(protected.url)], browser=Browser(), configured=configured) as s:
            await _state(s, "remote", LinkState.READY)
    assert authority.log[0] == "register", "the configured client is for another url: registered dynamically"


async def test_sign_out_forgets_the_tokens_and_the_server_needs_a_sign_in_again(tmp_path: Path) -> None:
    async with serve_protected() as protected:
        async with session(tmp_path, [http_entry(protected.url)], browser=Browser()) as servers:
            await _state(servers, "remote", LinkState.READY)
            assert await servers.sign_out("remote") is True
            await _state(servers, "remote", LinkState.SIGN_IN)
            assert "tokens" not in _stored(tmp_path), "only a newly registered client is stored"


async def test_an_sse_server_signs_in_and_its_tools_work(tmp_path: Path) -> None:
    async with serve_protected(transport="sse") as protected:
        entry = http_entry(protected.url, transport="sse")
        async with session(tmp_path, [entry], browser=Browser()) as servers:
            await _state(servers, "remote", LinkState.READY)
            assert text_of(await run_tool(tmp_path, find_tool(servers, "mcp__remote__echo"), text="sse")) == "sse"
    assert protected.authority.log[:3] == ["register", "authorize", "code"]


async def test_a_declined_sign_in_leaves_the_server_waiting(tmp_path: Path) -> None:
    browser = Browser(decline=True)
    async with serve_protected() as protected:
        async with session(tmp_path, [http_entry(protected.url)], browser=browser) as servers:
            assert await browser.sign_in_ended() == ("remote", "the sign-in was declined")
            await _state(servers, "remote", LinkState.SIGN_IN)
            [status] = servers.status()
            assert (status.state, status.error) == ("needs sign-in", "the sign-in was declined")
            with pytest.raises(SignInFailed, match="declined"):
                await servers.sign_in("remote")
    assert "code" not in protected.authority.log


async def test_no_token_reaches_the_log_or_a_commands_environment(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    configure_logging(logs, "debug", stderr_level="error")
    try:
        async with serve_protected() as protected:
            entries = [http_entry(protected.url), stdio_spec("local", tools=["whoami"])]
            async with session(tmp_path, entries, browser=Browser()) as servers:
                await _state(servers, "remote", LinkState.READY)
                await _state(servers, "local", LinkState.READY)
                who = json.loads(text_of(await run_tool(tmp_path, find_tool(servers, "mcp__local__whoami"))))
                environ = Path(f"/proc/{who['pid']}/environ").read_bytes() if os.path.exists("/proc") else b""
    finally:
        configure_logging(None, "warning")
    issued = protected.authority.issued
    assert issued and all(token in _token_file(tmp_path).read_text() for token in issued[-2:]), "stored"
    written = "".join(p.read_text() for p in logs.glob("*.log*"))
    assert '"logger": "mcp.' in written, "the log was written (the SDK's records included)"
    assert not [t for t in issued if t in written], "a token reached the log"
    assert not [t for t in issued if t.encode() in environ], "a token reached a command's environment"


class _Elsewhere:
    """The user's browser on another machine: it is handed the page, but its redirect to our loopback listener lands
    on that machine; the user copies the address it ended on."""

    def __init__(self) -> None:
        self.pages: list[str] = []
        self.shown = anyio.Event()

    async def open_url(self, server: str, url: str) -> bool:
        self.pages.append(url)
        self.shown.set()
        return True

    async def finished(self, server: str, error: str | None) -> None:
        return None


async def test_a_sign_in_finishes_with_the_address_a_browser_on_another_machine_ended_on(tmp_path: Path) -> None:
    browser = _Elsewhere()
    async with serve_protected() as protected:
        async with session(tmp_path, [http_entry(protected.url)]) as servers:
            await _state(servers, "remote", LinkState.SIGN_IN)
            with pytest.raises(SignInFailed, match="no sign-in of 'remote' is waiting"):
                await servers.finish_sign_in("remote", "http://127.0.0.1:1/callback?code=x&state=y")
            servers.use(questions=None, sign_in=browser)
            with anyio.fail_after(START_S):
                await browser.shown.wait()
            async with httpx2.AsyncClient(follow_redirects=False) as http:
                page = await http.get(browser.pages[0])
            ended_on = page.headers["location"]  # what the browser's address bar shows, a page that did not load
            with pytest.raises(SignInFailed, match="not the address a sign-in ends on"):
                await servers.finish_sign_in("remote", "https://example.com/elsewhere?code=x")
            assert await servers.finish_sign_in("remote", f"  {ended_on}\n") is True
            await _state(servers, "remote", LinkState.READY)
            with pytest.raises(SignInFailed, match="no sign-in"):
                await servers.finish_sign_in("remote", ended_on)
    assert ended_on.startswith("http://127.0.0.1:") and "/callback?code=" in ended_on
    assert protected.authority.log == ["register", "authorize", "code"]
