"""The ``--connect`` relay's WebSocket client and its options, without a host: door URLs read (IPv6, ports, the
schemes that name a door), options refused with the usage, and frames over a socket pair: a message in fragments
with a ping between them (answered), a close (answered, the end), a masked frame the client sends (RFC 6455)."""

from __future__ import annotations

import socket

import pytest

from hermes_acp.transports.connect import run_connect
from hermes_acp.transports.wsclient import Link, LinkError, parse_target


@pytest.mark.parametrize(
    ("url", "host", "port", "path", "tls", "authority"),
    [
        ("wss://devbox.example/acp", "devbox.example", 443, "/acp", True, "devbox.example"),
        ("https://devbox.example:8443/acp", "devbox.example", 8443, "/acp", True, "devbox.example:8443"),
        ("ws://127.0.0.1:8765/acp", "127.0.0.1", 8765, "/acp", False, "127.0.0.1:8765"),
        ("ws://[::1]:8765/acp?x=1", "::1", 8765, "/acp?x=1", False, "[::1]:8765"),
        ("WSS://Host.Example", "host.example", 443, "/acp", True, "host.example"),
    ],
)
def test_a_door_s_url_is_read(url: str, host: str, port: int, path: str, tls: bool, authority: str) -> None:
    target = parse_target(url)
    assert (target.host, target.port, target.path, target.tls, target.authority) == (host, port, path, tls, authority)


@pytest.mark.parametrize(
    ("url", "why"),
    [("ftp://host/acp", "wss://"), ("devbox:8765", "wss://"), ("wss:///acp", "names no host"), ("ws://h:0/", "port")],
)
def test_a_url_that_names_no_door_is_refused_saying_why(url: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_target(url)


def test_options_it_does_not_take_are_refused_with_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_connect(["--connect", "wss://h/acp", "--shared"], {}) == 2
    assert run_connect(["--connect"], {}) == 2
    assert run_connect(["--connect=wss://h/acp", "--token-file", "/nonexistent/token"], {}) == 2
    err = capsys.readouterr().err
    assert "unknown option '--shared'" in err and "--connect needs a value" in err and "/nonexistent/token" in err
    assert err.count("usage: hermes-acp --connect URL") == 3


def _server_frame(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    return bytes(((0x80 if fin else 0) | opcode, len(payload))) + payload


def _read_client_frame(sock: socket.socket) -> tuple[int, bytes]:
    head = sock.recv(2)
    assert head[1] & 0x80, "a client's frames are masked"
    length = head[1] & 0x7F
    mask = sock.recv(4)
    data = sock.recv(length) if length else b""
    return head[0] & 0x0F, bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def test_a_fragmented_message_with_a_ping_between_is_one_message_and_the_ping_is_answered() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        link = Link(ours)
        theirs.sendall(_server_frame(0x1, b'{"a":', fin=False) + _server_frame(0x9, b"hi") + _server_frame(0x0, b"1}"))
        received: list[str] = []
        while not received:
            received += link.read() or []
        assert received == ['{"a":1}']
        assert _read_client_frame(theirs) == (0xA, b"hi"), "the pong carries the ping's data"
        link.send("x" * 300)
        assert theirs.recv(2)[1] & 0x7F == 126, "a 16-bit length past 125 bytes"
        theirs.recv(2 + 4 + 300)
        theirs.sendall(_server_frame(0x8, (1000).to_bytes(2, "big")))
        assert link.read() is None, "a close is the end"
        assert _read_client_frame(theirs) == (0x8, (1000).to_bytes(2, "big")), "and answered"


def test_a_link_the_host_closed_without_a_word_is_a_link_error() -> None:
    ours, theirs = socket.socketpair()
    with ours:
        link = Link(ours)
        theirs.close()
        with pytest.raises(LinkError, match="closed the link"):
            link.read()
