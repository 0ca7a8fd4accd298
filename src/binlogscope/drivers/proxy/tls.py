"""TLS termination for ``binlogscope proxy``: the client's TLS ends at the proxy, the proxy
speaks TLS of its own to the server, and both directions are relayed and decoded as plaintext.

When the client's first packet is an SSLRequest (the short HandshakeResponse with CLIENT_SSL),
the proxy forwards it to the server unchanged (same capabilities), does a TLS handshake with
the server as a client (``--ssl-mode``/``--ssl-ca``/``--ssl-cert``/``--ssl-key``: the meanings
of ``binlogscope live``, through :func:`~binlogscope.drivers.live.connect.ssl_context`), then
a TLS handshake with the client as a server (``--tls-cert``/``--tls-key``, or a self-signed
certificate :func:`generate_certificate` writes). From then on every record one side sends is
decrypted, relayed re-encrypted for the other side, and its plaintext offered to the decoder,
after a ``("tls", True, text)`` marker that tells the decoder the bytes that follow are the
decrypted connection (:meth:`~binlogscope.session.Session.tls_established` with
``plaintext=True``). When the server does not offer TLS or its certificate fails the
verification, the proxy closes the client's connection and offers ``("tls", False, text)``:
one line for the user.

TLS is done with :mod:`ssl`'s memory BIOs (``SSLContext.wrap_bio``), the standard library's
way to run TLS over bytes one already has, not ``loop.start_tls``: the client sends its TLS
ClientHello right after the SSLRequest without waiting for an answer, so both often arrive in
one read, and ``start_tls`` cannot take the bytes already read. :class:`TlsEnd` is one side's
TLS, :class:`TlsSwitch` drives it on the protocol relay (:mod:`.proxy_relay`), and
:func:`stream_prelude`/:class:`TlsStream` on the stream relay of the fault actions
(:mod:`.proxy_faults`). The self-signed certificate is made with ``cryptography`` (a project
dependency).

What termination means for trust: the proxy holds a private key the client must accept (trust
the proxy's certificate, or connect without verifying), the server sees the proxy's TLS
connection (and a client certificate only if ``--ssl-cert`` is given), and ``--record`` writes
the decrypted traffic.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import os
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from binlogscope.drivers.proxy.tls_legs import Leg
from binlogscope.session.events import Peer
from binlogscope.wire.constants import CapabilityFlag
from binlogscope.wire.handshake import is_ssl_request

#: read at most this much plaintext at a time
_READ = 1 << 20
#: the longest a TLS handshake with either side may take
HANDSHAKE_TIMEOUT = 30.0


@dataclass(frozen=True)
class TlsSettings:
    """What the proxy needs to terminate TLS (picklable: the relay may run in another process;
    the SSL contexts are built where it runs, by :func:`contexts`)."""

    #: the certificate (PEM, may hold the chain) and key the proxy shows TLS clients
    cert: str
    key: str
    #: upstream TLS, as ``live``'s ``--ssl-mode`` (PREFERRED/REQUIRED: encrypted, not
    #: verified; VERIFY_CA: the chain; VERIFY_IDENTITY: the chain and the host name)
    ssl_mode: str = "PREFERRED"
    ssl_ca: str | None = None
    #: a client certificate for the server (optional)
    ssl_cert: str | None = None
    ssl_key: str | None = None
    #: the upstream host name (SNI and VERIFY_IDENTITY)
    server_hostname: str = ""
    #: --tls-keylog: both legs' TLS secrets appended there (NSS key log)
    keylog: str | None = None


@dataclass
class Contexts:
    """The two SSL contexts of a relay: toward clients (server side) and upstream."""

    clients: ssl.SSLContext
    upstream: ssl.SSLContext
    server_hostname: str | None


_LOAD_ERRORS = {"PEM_LIB": "not a PEM certificate and key",
                "KEY_VALUES_MISMATCH": "the key does not belong to the certificate",
                "NO_CERTIFICATE_OR_CRL_FOUND": "no certificate in it"}


def _load_error(what: str, exc: OSError) -> ValueError:
    reason = getattr(exc, "reason", None) or ("PEM_LIB" if "PEM lib" in str(exc) else None)
    text = _LOAD_ERRORS.get(str(reason), str(reason or exc.strerror or exc).replace("_", " ")
                            .lower())
    return ValueError(f"{what}: {text}")


def contexts(t: TlsSettings) -> Contexts:
    """Build the SSL contexts; a file that does not load raises ValueError (one line naming
    the option)."""
    from binlogscope.drivers.live.connect import ssl_context
    from binlogscope.drivers.live.options import ConnectionOptions

    clients = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        clients.load_cert_chain(t.cert, t.key)
    except OSError as exc:  # (ssl.SSLError too)
        raise _load_error(f"--tls-cert {t.cert} / --tls-key {t.key}", exc) from None
    if t.keylog:
        try:
            clients.keylog_filename = t.keylog
        except OSError as exc:
            raise ValueError(f"--tls-keylog {t.keylog}: {exc.strerror or exc}") from None
    try:
        up = ssl_context(ConnectionOptions(host=t.server_hostname, ssl_mode=t.ssl_mode,
                                           ssl_ca=t.ssl_ca, ssl_cert=t.ssl_cert,
                                           ssl_key=t.ssl_key, tls_keylog=t.keylog))
    except OSError as exc:
        names = " / ".join(f"{o} {v}" for o, v in (("--ssl-ca", t.ssl_ca),
                                                   ("--ssl-cert", t.ssl_cert),
                                                   ("--ssl-key", t.ssl_key)) if v)
        raise _load_error(names or "upstream TLS", exc) from None
    host = t.server_hostname or None
    try:  # no SNI for an IP address (the ssl module refuses none, but servers ignore it)
        ipaddress.ip_address(t.server_hostname)
        sni = host if up.check_hostname else None
    except ValueError:
        sni = host
    return Contexts(clients, up, sni)


def generate_certificate(directory: str | None = None, names: tuple[str, ...] = ()
                         ) -> tuple[Path, Path, str]:
    """A self-signed certificate and its key (PEM) in ``directory`` (default: a new private
    temporary directory): (certificate path, key path, SHA-256 fingerprint as AA:BB:...).

    Valid for a week from yesterday, for 127.0.0.1, ::1, localhost and ``names``; usable as its
    own CA file by a client that verifies the server."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    d = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="binlogscope-proxy-"))
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "binlogscope proxy")])
    alt: list[x509.GeneralName] = [x509.DNSName("localhost")]
    for n in ("127.0.0.1", "::1", *names):
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            if n:
                alt.append(x509.DNSName(n))
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=7))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .sign(key, hashes.SHA256()))
    cert_p, key_p = d / "proxy-cert.pem", d / "proxy-key.pem"
    fd = os.open(key_p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    cert_p.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    digest = cert.fingerprint(hashes.SHA256()).hex().upper()
    return cert_p, key_p, ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


class TlsEnd:
    """One side's TLS over memory BIOs: ciphertext in, plaintext out, and back."""

    def __init__(self, ctx: ssl.SSLContext, *, server_side: bool,
                 server_hostname: str | None = None) -> None:
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self._in, self._out, server_side=server_side,
                                server_hostname=server_hostname)
        self.ready = False

    def handshake(self, data: bytes = b"") -> bool:
        """Feed ``data``; True once the handshake is done (raises ssl.SSLError)."""
        if data:
            self._in.write(data)
        if not self.ready:
            try:
                self.obj.do_handshake()
                self.ready = True
            except ssl.SSLWantReadError:
                pass
        return self.ready

    def feed(self, data: bytes) -> None:
        self._in.write(data)

    def outgoing(self) -> bytes:
        """The ciphertext to send to this side now."""
        return self._out.read()

    def decrypt(self, data: bytes = b"") -> bytes:
        """Feed ``data``; the plaintext available (a close_notify ends it quietly: the TCP FIN
        that follows is what the relay passes on)."""
        if data:
            self._in.write(data)
        parts = []
        while True:
            try:
                chunk = self.obj.read(_READ)
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                break
            if not chunk:
                break
            parts.append(chunk)
        return b"".join(parts)

    def encrypt(self, data: bytes) -> bytes:
        view = memoryview(data)
        while view:
            view = view[self.obj.write(view):]
        return self._out.read()

    def describe(self) -> str:
        cipher = self.obj.cipher()
        return f"{self.obj.version()} {cipher[0] if cipher else ''}".strip()


def greeting_offers_ssl(packet: bytes) -> bool | None:
    """From a server greeting's bytes (header included): does it offer CLIENT_SSL? (None: not
    a HandshakeV10, e.g. an ERR)."""
    payload = packet[4:]
    if not payload or payload[0] != 10:
        return None
    end = payload.find(b"\0", 1)
    at = end + 1 + 4 + 8 + 1  # version NUL, connection id, scramble part 1, filler
    if end < 0 or len(payload) < at + 2:
        return None
    return bool(int.from_bytes(payload[at:at + 2], "little") & CapabilityFlag.CLIENT_SSL)


def first_packet_length(buf: bytes | bytearray) -> int:
    """The length (header included) of the complete first packet in ``buf``, 0 if incomplete."""
    if len(buf) < 4:
        return 0
    n = 4 + int.from_bytes(buf[:3], "little")
    return n if len(buf) >= n else 0


#: mark(extra): a marker for the decoder, in order with the data (("tls", ok, text); or
#: ("tls-note", text): a side's TLS ended with an alert after the other side closed)
Mark = Callable[[tuple[Any, ...]], None]


def established(client: TlsEnd, upstream: TlsEnd) -> str:
    """The decoder's note when both handshakes are done."""
    return (f"TLS terminated by the proxy (client: {client.describe()}; upstream: "
            f"{upstream.describe()}): the bytes that follow are the decrypted connection")


def _alert(exc: BaseException) -> tuple[str, str | None]:
    """An SSL error's reason, and the TLS alert it names ("unknown ca", ...) or None."""
    reason = str(getattr(exc, "reason", None) or exc)
    if "ALERT_" not in reason:
        return reason, None
    return reason, reason.split("ALERT_", 1)[1].replace("_", " ").lower()


def _client_failure(exc: BaseException) -> str:
    """The line for a TLS handshake with the client that failed."""
    reason, alert = _alert(exc)
    if alert is not None:
        distrust = alert in ("unknown ca", "bad certificate", "certificate unknown")
        return (f"the client aborted the TLS handshake ({alert})" + (
            ": it does not trust the proxy's certificate (give it the certificate as its CA, "
            "or use --tls-cert/--tls-key)" if distrust else ""))
    if isinstance(exc, TimeoutError):
        return "the client's TLS handshake timed out"
    return f"the client's TLS handshake failed: {reason}"


def _failure(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"the server's certificate failed the verification: {exc.verify_message}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS handshake with the server failed: {exc.reason or exc}"
    if isinstance(exc, TimeoutError):
        return "the server's TLS handshake timed out"
    return f"TLS handshake with the server failed: {exc}"


class TlsSwitch:
    """Terminates TLS on one connection of the protocol relay (:class:`.proxy_relay.Leg`).

    Installed as both legs' ``intercept``: it watches the server's greeting and the client's
    first packet; after an SSLRequest it runs the two handshakes over the legs' transports and
    then turns ciphertext into plaintext for the relay (the legs encrypt what they send)."""

    def __init__(self, ctxs: Contexts, client: Leg, server: Leg, mark: Mark) -> None:
        self.ctxs = ctxs
        self.client = client
        self.server = server
        self.up: TlsEnd | None = None  # (also the legs' ``tls``)
        self.cl: TlsEnd | None = None
        self.mark = mark
        self.state = "watch"  # watch -> upstream -> client -> on; or plain; or failed
        self.head = bytearray()  # the client's first packet while it is incomplete
        self.greeting = bytearray()
        self.offers_ssl: bool | None = None
        self.early = bytearray()  # the client's TLS bytes read during the upstream handshake
        self.held: list[bytes] = []  # server plaintext before the client's TLS is ready
        self._timer: asyncio.TimerHandle | None = None
        client.intercept = self.from_client
        server.intercept = self.from_server

    def from_server(self, data: bytes) -> bytes:
        if self.state in ("watch", "plain"):
            if self.offers_ssl is None and len(self.greeting) < 4096:
                self.greeting += data[:4096]
                if first_packet_length(self.greeting):
                    self.offers_ssl = bool(greeting_offers_ssl(bytes(self.greeting)))
            if self.state == "plain":
                self.server.intercept = None
            return data
        if self.state == "failed":
            return b""
        up = self.up
        assert up is not None
        try:
            if self.state == "upstream":
                if up.handshake(data):
                    self._write(self.server, up.outgoing())
                    self._start_client()
                    data = b""
                else:
                    self._write(self.server, up.outgoing())
                    return b""
            plain = up.decrypt(data)
            self._write(self.server, up.outgoing())
        except ssl.SSLError as exc:
            if self.state == "on":
                self._broken("server", self.client, exc)
            else:
                self.fail(_failure(exc))
            return b""
        if self.state != "on":
            if plain:
                self.held.append(plain)
            return b""
        return plain

    def from_client(self, data: bytes) -> bytes:
        if self.state == "watch":
            if not data:  # EOF before a whole first packet: what came is relayed as it is
                self.state = "plain"
                held, self.head = bytes(self.head), bytearray()
                return held
            self.head += data
            n = first_packet_length(self.head)
            if not n:
                return b""
            first, rest = bytes(self.head[:n]), bytes(self.head[n:])
            self.head.clear()
            if not is_ssl_request(first[4:]):
                self.state = "plain"
                self.client.intercept = None
                return first + rest
            return self._ssl_request(first, rest)
        if self.state == "upstream":
            self.early += data
            return b""
        if self.state == "failed":
            return b""
        c = self.cl
        assert c is not None
        try:
            if self.state == "client":
                if not c.handshake(data):
                    self._write(self.client, c.outgoing())
                    return b""
                self._write(self.client, c.outgoing())
                self._established()
                data = b""
            plain = c.decrypt(data)
            self._write(self.client, c.outgoing())
        except ssl.SSLError as exc:
            if self.state == "on":
                self._broken("client", self.server, exc)
            else:
                self.fail(_client_failure(exc))
            return b""
        return plain

    # ------------------------------------------------------------------ the switch
    def _ssl_request(self, first: bytes, rest: bytes) -> bytes:
        assert self.client.transport is not None and self.server.transport is not None
        self.client.transport.pause_reading()  # the ClientHello waits until upstream is ready
        self.early += rest
        self.server.transport.write(first)  # forwarded as the client sent it ...
        self.client.offer(Peer.CLIENT, first)  # ... and decoded (the observer sees it)
        if self.offers_ssl is False:
            self.fail("the client asked for TLS but the server does not offer it")
            return b""
        self.state = "upstream"
        end = TlsEnd(self.ctxs.upstream, server_side=False,
                     server_hostname=self.ctxs.server_hostname)
        self.server.tls = self.up = end
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(HANDSHAKE_TIMEOUT, self._timeout)
        try:
            end.handshake()
        except ssl.SSLError as exc:
            self.fail(_failure(exc))
            return b""
        self._write(self.server, end.outgoing())
        return b""

    def _start_client(self) -> None:
        self.state = "client"
        end = TlsEnd(self.ctxs.clients, server_side=True)
        self.client.tls = self.cl = end
        early, self.early = bytes(self.early), bytearray()
        assert self.client.transport is not None
        if not self.client.transport.is_closing():
            self.client.transport.resume_reading()
        if early:
            plain = self.from_client(early)
            if plain:  # (the client's HandshakeResponse came with its Finished)
                self.client.relay(plain)

    def _established(self) -> None:
        self.state = "on"
        if self._timer is not None:
            self._timer.cancel()
        assert self.cl is not None and self.up is not None
        self.mark(("tls", True, established(self.cl, self.up)))
        held, self.held = self.held, []
        for plain in held:
            self.server.relay(plain)

    def _timeout(self) -> None:
        if self.state == "upstream":
            self.fail("the server's TLS handshake timed out")
        elif self.state == "client":
            self.fail("the client's TLS handshake timed out")

    def _broken(self, who: str, other: Leg, exc: ssl.SSLError) -> None:
        """``who``'s TLS failed after both handshakes (an alert, a bad record). Once ``other``
        has closed, it is how ``who`` answered that close (MariaDB sends an alert when its client
        leaves without a close_notify): a note, and the connection ends as a close; before,
        the connection is closed as broken (an error)."""
        reason, alert = _alert(exc)
        if alert is not None:
            reason = f"alert {alert}"
        if other.eof:
            self.state = "failed"
            self.mark(("tls-note", f"the {who}'s TLS ended with {reason} after the "
                                   f"{'client' if who == 'server' else 'server'} closed"))
            self._close_legs()
        else:
            self.fail(f"the {who}'s TLS failed: {reason}")

    def fail(self, text: str) -> None:
        if self.state == "failed":
            return
        self.state = "failed"
        if self._timer is not None:
            self._timer.cancel()
        self.mark(("tls", False, text))
        self._close_legs()

    def _close_legs(self) -> None:
        for leg in (self.client, self.server):
            if leg.transport is not None:
                leg.transport.close()

    @staticmethod
    def _write(leg: Leg, data: bytes) -> None:
        if data and leg.transport is not None and not leg.transport.is_closing():
            leg.transport.write(data)


# ---------------------------------------------------------------------- the stream relay
class TlsStream:
    """A stream pair as the fault relay reads and writes it, with TLS in between (or none:
    then it only hands out ``initial`` before reading on)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 end: TlsEnd | None = None, initial: bytes = b"") -> None:
        self.reader = reader
        self.writer = writer
        self.end = end
        self.initial = initial

    async def handshake(self) -> None:
        end = self.end
        assert end is not None
        while not end.handshake():
            self.writer.write(end.outgoing())
            await self.writer.drain()
            data = await self.reader.read(_READ)
            if not data:
                raise ConnectionError("the connection closed during the TLS handshake")
            end.handshake(data)
        self.writer.write(end.outgoing())

    async def read(self, n: int) -> bytes:
        if self.initial:
            data, self.initial = self.initial, b""
            return data
        end = self.end
        if end is None:
            return await self.reader.read(n)
        while True:
            plain = end.decrypt()
            out = end.outgoing()
            if out:
                self.writer.write(out)
            if plain:
                return plain
            data = await self.reader.read(n)
            if not data:
                return b""
            end.feed(data)  # (decrypted at the loop's top)

    def write(self, data: bytes) -> None:
        self.writer.write(self.end.encrypt(data) if self.end is not None else data)

    async def drain(self) -> None:
        await self.writer.drain()

    def close(self) -> None:
        self.writer.close()

    def is_closing(self) -> bool:
        return self.writer.is_closing()

    def can_write_eof(self) -> bool:
        return self.writer.can_write_eof()

    def write_eof(self) -> None:
        self.writer.write_eof()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.writer.get_extra_info(name, default)


async def _packet(reader: asyncio.StreamReader) -> bytes:
    """One packet's bytes (header included); fewer when the connection ends first."""
    try:
        head = await reader.readexactly(4)
        return head + await reader.readexactly(int.from_bytes(head[:3], "little"))
    except asyncio.IncompleteReadError as exc:
        return exc.partial


async def stream_prelude(ctxs: Contexts, c_reader: asyncio.StreamReader,
                         c_writer: asyncio.StreamWriter, s_reader: asyncio.StreamReader,
                         s_writer: asyncio.StreamWriter,
                         offer: Callable[[str, bytes], None], mark: Mark
                         ) -> tuple[TlsStream, TlsStream] | None:
    """The start of a connection on the stream relay: the greeting (relayed here), the
    client's first packet; after an SSLRequest both handshakes. Returns the client's and the
    server's stream for the relay (plaintext, the client's first packet still to relay when it
    was no SSLRequest), or None when the connection was closed (a TLS failure)."""
    greeting = await _packet(s_reader)
    c_writer.write(greeting)
    offer("server", greeting)
    offers = greeting_offers_ssl(greeting) if first_packet_length(greeting) else None
    if offers is None:  # an ERR, or the server closed: the relay goes on as it is
        return TlsStream(c_reader, c_writer), TlsStream(s_reader, s_writer)
    first = await _packet(c_reader)
    if not is_ssl_request(first[4:]) or len(first) != first_packet_length(first):
        return TlsStream(c_reader, c_writer, initial=first), TlsStream(s_reader, s_writer)
    s_writer.write(first)
    offer("client", first)
    if not offers:
        mark(("tls", False, "the client asked for TLS but the server does not offer it"))
        return None
    up = TlsStream(s_reader, s_writer, TlsEnd(ctxs.upstream, server_side=False,
                                              server_hostname=ctxs.server_hostname))
    cl = TlsStream(c_reader, c_writer, TlsEnd(ctxs.clients, server_side=True))
    try:
        await asyncio.wait_for(up.handshake(), HANDSHAKE_TIMEOUT)
    except (ssl.SSLError, ConnectionError, OSError, TimeoutError) as exc:
        mark(("tls", False, _failure(exc)))
        return None
    try:
        await asyncio.wait_for(cl.handshake(), HANDSHAKE_TIMEOUT)
    except (ssl.SSLError, ConnectionError, OSError, TimeoutError) as exc:
        mark(("tls", False, _client_failure(exc)))
        return None
    assert cl.end is not None and up.end is not None
    mark(("tls", True, established(cl.end, up.end)))
    return cl, up


__all__ = ["HANDSHAKE_TIMEOUT", "Contexts", "TlsEnd", "TlsSettings", "TlsStream", "TlsSwitch",
           "contexts", "first_packet_length", "generate_certificate", "greeting_offers_ssl",
           "stream_prelude"]
