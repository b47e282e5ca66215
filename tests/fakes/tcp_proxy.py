"""A TCP proxy in front of a session host's remote door, for tests of ``hermes-acp --connect``: ``cut()`` drops every
link through it at once (both sockets closed, as a network that fails leaves them), and it keeps listening, so the
relay's reconnect goes through it again. With ``tls`` (a certificate made by ``self_signed``) it is the TLS
terminator a real deployment puts in front of the door (``wss://``); ``self_signed`` uses the ``cryptography``
package.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.abc import ByteStream, SocketAttribute
from anyio.streams.tls import TLSStream

__all__ = ["Proxy", "self_signed", "tcp_proxy"]


@dataclass
class Proxy:
    port: int
    links: int = 0
    """Links made through it so far."""
    open_links: list[anyio.CancelScope] = field(default_factory=list)
    """The cancel scope of each link still open (``cut`` cancels them)."""
    linked: anyio.Event = field(default_factory=anyio.Event)
    """Set (and replaced) whenever a link is made."""

    def cut(self) -> None:
        """Drop every link through the proxy now."""
        for scope in self.open_links:
            scope.cancel()
        self.open_links.clear()


async def _pipe(source: ByteStream, sink: ByteStream) -> None:
    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        while True:
            await sink.send(await source.receive())


@contextlib.asynccontextmanager
async def tcp_proxy(target_port: int, *, tls: ssl.SSLContext | None = None) -> AsyncIterator[Proxy]:
    """Listen on a free loopback port and forward each connection to ``target_port``."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    proxy = Proxy(port=listener.extra(SocketAttribute.local_port))

    async def serve(client: ByteStream) -> None:
        scope = anyio.CancelScope()
        proxy.open_links.append(scope)
        stream: ByteStream = client
        try:
            with scope:
                if tls is not None:
                    try:
                        stream = await TLSStream.wrap(client, server_side=True, ssl_context=tls)
                    except (ssl.SSLError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                        return  # the client refused the certificate
                async with await anyio.connect_tcp("127.0.0.1", target_port) as upstream:
                    proxy.links += 1
                    proxy.linked.set()
                    proxy.linked = anyio.Event()
                    async with anyio.create_task_group() as pair:
                        pair.start_soon(_pipe, stream, upstream)
                        pair.start_soon(_pipe, upstream, stream)
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, serve)
        try:
            yield proxy
        finally:
            group.cancel_scope.cancel()


def self_signed(folder: Path) -> tuple[Path, Path, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1 and localhost: its file, its key's file, and a server context."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hermes-acp test door")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file = folder / "door.pem"
    key_file = folder / "door.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return cert_file, key_file, context
