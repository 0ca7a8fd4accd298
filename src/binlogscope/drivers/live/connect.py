"""Connecting the live replica: the socket, TLS, the handshake and authentication, and the
:class:`Connection` that carries bytes between the socket and the sans-IO
:class:`~binlogscope.session.Session` (and hands every decoded packet on)."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live import auth as live_auth
from binlogscope.drivers.live.auth import AuthPolicy, AuthState
from binlogscope.drivers.live.items import LiveError, LiveSettings, ServerInfo, err_text
from binlogscope.drivers.live.options import DEFAULT_MAX_PACKET, ConnectionOptions
from binlogscope.drivers.live.setup import SetupStep
from binlogscope.drivers.live.stamps import SocketClock
from binlogscope.drivers.pcapng import SessionRecorder
from binlogscope.session import Session
from binlogscope.session.events import (
    CompressedFrame,
    ConnectionClosed,
    PacketDecoded,
    Peer,
    Phase,
    ResultSetComplete,
    SessionEvent,
)
from binlogscope.wire.compressed import DEFAULT_ZSTD_LEVEL
from binlogscope.wire.constants import CapabilityFlag
from binlogscope.wire.handshake import (
    DEFAULT_CAPABILITIES,
    AuthMoreData,
    AuthSwitchRequest,
    AuthSwitchResponse,
    ErrPacket,
    HandshakeResponse41,
    HandshakeV10,
    OkPacket,
    SslRequest,
)

CAP = CapabilityFlag
#: put(item): hand an item to the consumer (through the fetcher's batch)
Put = Callable[[SourceItem], None]


def open_socket(settings: LiveSettings) -> socket.socket:
    """A connected TCP (no Nagle) or Unix socket, with the connect timeout (0: none) for the
    connect and the login handshake."""
    c = settings.conn
    limit = settings.connect_timeout or None
    if c.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(limit)
        sock.connect(c.socket)
    else:
        sock = socket.create_connection((c.host, c.port), timeout=limit)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def connect_error(conn: ConnectionOptions, exc: BaseException) -> str:
    """One line for a connection that failed (and will not be retried)."""
    where = conn.describe()
    if isinstance(exc, ConnectionRefusedError):
        return f"cannot connect to {where}: connection refused (is the server running?)"
    if isinstance(exc, socket.timeout | TimeoutError):
        return f"{where}: no answer within the timeout"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve host {conn.host!r}: {exc.strerror}"
    return f"{where}: {exc}"


class Connection:
    """Socket <-> Session plumbing for one connection (every packet decoded is handed on).

    Arrival times: the session stamps every packet's ``wire_time`` with :attr:`stamp`, which
    is the kernel's receive time of the bytes just read and, for what this side sends, the
    kernel's time of the send (:mod:`.stamps`; without kernel times: when the read returned,
    when the send was made).
    So a live row, an export row and a ``--record`` frame carry the time the bytes crossed the
    socket, not when they were decoded or shown (a semi-sync XID -> ACK interval equals a
    capture's of the same connection)."""

    def __init__(self, sock: socket.socket, session: Session, put: Put,
                 flush: Callable[[], None], recorder: SessionRecorder | None) -> None:
        self.sock: socket.socket = sock
        self.session = session
        self._put = put
        self._flush = flush  # hands the fetched items to the consumer (before each read)
        self.recorder = recorder
        self._pending: list[SessionEvent] = []
        self.read_at = 0.0  # perf_counter() when the last read returned
        self.sent_at = 0.0  # perf_counter() when the last send was written
        #: reads go into one reused buffer: ``recv(1 MiB)`` would allocate (mmap) a 1 MiB
        #: object per read, ~10 us on every small packet of a semi-sync commit. 64 KiB, not
        #: more: every event of a read is decoded before the first is handed on, and a 1 MiB
        #: read (~5,000 events alive at once, rows and all) made the decode ~2x slower
        #: (caches, GC passes over the survivors) than 64 KiB reads (~300 events) when streaming
        self._rbuf = memoryview(bytearray(1 << 16))
        #: largest packet buffered from the server (--max-packet-size; set by authenticate)
        self.max_packet = DEFAULT_MAX_PACKET
        #: seconds since the epoch: when the bytes being fed to the session crossed the socket
        self.stamp = time.time()
        self._clock = SocketClock(sock)
        session.use_clock(self._stamp)

    def _stamp(self) -> float:
        return self.stamp

    def send(self, value: Any) -> None:
        # when its bytes leave: the session stamps a packet as it encodes it (now), a
        # semi-sync ACK (sent first) at the next events() call: the kernel's time of the send
        self.stamp = time.time()
        data = self.session.send(value)
        if self.recorder is not None:
            self.recorder.data(Peer.CLIENT, data)
        self.sock.sendall(data)
        self.sent_at = time.perf_counter()
        self._clock.sending()
        self.stamp = self._clock.sent(self.sock, self.stamp)
        self._drain()

    def start_tls(self, ctx: ssl.SSLContext, server_hostname: str) -> None:
        self._clock.stop(self.sock)  # (the TLS layer's reads hide the segments' times)
        self.sock = ctx.wrap_socket(self.sock, server_hostname=server_hostname)
        self.session.tls_established()
        self._put(SourceItem("note", text=f"TLS established ({self.sock.version()})"))

    def flush_packets(self) -> None:
        """Hand the packets already decoded (but not yet consumed) to the store."""
        self._drain()
        keep: list[SessionEvent] = []
        for ev in self._pending:
            if isinstance(ev, PacketDecoded) and ev.binlog_event is None:
                self._put(SourceItem("packet", event=ev))
            else:
                keep.append(ev)
        self._pending = keep

    def _drain(self) -> None:
        rec = self.recorder
        if rec is None:
            self._pending.extend(self.session.events())
            return
        for ev in self.session.events():
            if isinstance(ev, PacketDecoded):
                rec.packet(ev)
            elif isinstance(ev, CompressedFrame):
                rec.frame(ev)
            self._pending.append(ev)

    def take_sent(self) -> list[PacketDecoded]:
        """The packets this side just sent, as the session decoded them, taken out of the
        pending events (the stream lists an ACK right after the event it acknowledges)."""
        self._drain()
        sent = [e for e in self._pending
                if isinstance(e, PacketDecoded) and e.direction is Peer.CLIENT]
        if sent:
            self._pending = [e for e in self._pending if e not in sent]
        return sent

    def take(self, allow_close: bool = False) -> list[SessionEvent] | None:
        """Every event decoded so far (reading once when there is none), for the stream loop,
        which routes them itself; None when the server closed and nothing is left."""
        while True:
            self._drain()
            if self._pending:
                out = self._pending
                self._pending = []
                return out
            if not self._more(allow_close):
                return None

    def _more(self, allow_close: bool) -> bool:
        """One read. False when the server closed with nothing left to hand out and
        ``allow_close``; without it that raises ConnectionError."""
        if self._read():
            return True
        self._drain()
        if self._pending:
            return True
        if allow_close:
            return False
        raise ConnectionError("the server closed the connection")

    def _read(self) -> bool:
        """Hand what was decoded to the consumer, then one read into the session (False: EOF)."""
        self._flush()  # everything decoded so far reaches the consumer first
        need = self.session.incomplete_packet_size(Peer.SERVER)
        if need > self.max_packet:
            # a hostile (or misconfigured) server cannot make the client buffer without bound
            raise LiveError(
                f"the server is sending a packet of more than {need} bytes, over the "
                f"--max-packet-size limit of {self.max_packet} bytes: giving up (raise "
                "--max-packet-size if the server's max_allowed_packet is larger)")
        try:
            n, self.stamp = self._clock.recv_into(self.sock, self._rbuf)
            self.read_at = time.perf_counter()
        except TimeoutError as exc:
            raise TimeoutError("no data from the source within the read timeout "
                               "(net_read_timeout / missed heartbeats)") from exc
        data = bytes(self._rbuf[:n])
        self.session.receive_data(data, Peer.SERVER)
        if self.recorder is not None and data:
            self.recorder.data(Peer.SERVER, data)
        return bool(data)

    def next_event(self, allow_close: bool = False) -> SessionEvent | None:
        """The next event the setup dialog acts on (a packet, a result set, the server's
        close); every packet is handed on as an item on the way."""
        while True:
            self._drain()
            while self._pending:
                ev = self._pending.pop(0)
                if isinstance(ev, PacketDecoded) and self.session.phase == Phase.BINLOG_STREAM \
                        and ev.binlog_event is not None:
                    return ev  # stream packets are put by the stream loop (with positions)
                if isinstance(ev, PacketDecoded | ConnectionClosed):
                    if not (isinstance(ev, PacketDecoded) and ev.binlog_event is not None):
                        self._put(SourceItem("packet", event=ev))
                    if isinstance(ev, ConnectionClosed) and ev.direction == Peer.SERVER:
                        return ev
                    return ev if isinstance(ev, PacketDecoded) else None
                if isinstance(ev, ResultSetComplete):
                    return ev
                self._put(SourceItem("packet", event=ev))
            if not self._more(allow_close):
                return None

    def next_packet(self) -> PacketDecoded:
        while True:
            ev = self.next_event()
            if isinstance(ev, PacketDecoded) and ev.direction == Peer.SERVER:
                return ev
            if ev is None:
                raise ConnectionError("the server closed the connection")


# ---------------------------------------------------------------------------- handshake and auth
def authenticate(rd: Connection, conn: ConnectionOptions, info: ServerInfo, put: Put) -> None:
    """The greeting, TLS if wanted, the handshake response and the auth exchange until OK.

    What may be sent is decided by :mod:`.live_auth` (the password itself only over TLS or a
    Unix socket, or as the user allowed); a refusal is a LiveError and the connection closes
    without another byte."""
    rd.max_packet = conn.max_packet_size
    greeting = rd.next_packet()
    if isinstance(greeting.value, ErrPacket):
        raise LiveError(err_text(greeting.value, "the server refused the connection",
                                 logged_in=False), greeting.value.error_code)
    hs = greeting.value
    if not isinstance(hs, HandshakeV10):
        raise LiveError(f"{conn.describe()}: not a MySQL/MariaDB server greeting")
    info.version = hs.server_version
    info.mariadb = "mariadb" in hs.server_version.lower()
    caps = (DEFAULT_CAPABILITIES | CAP.CLIENT_CONNECT_ATTRS) & hs.capability_flags
    caps |= CAP.CLIENT_PROTOCOL_41
    caps |= compression_flag(conn, hs.capability_flags)
    if caps & CAP.CLIENT_ZSTD_COMPRESSION_ALGORITHM:
        rd.session.compression_level = conn.zstd_compression_level or DEFAULT_ZSTD_LEVEL
    mode = conn.ssl_mode
    use_tls = mode != "DISABLED" and bool(hs.capability_flags & CAP.CLIENT_SSL) \
        and not conn.socket
    if mode in ("REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY") and not use_tls:
        raise LiveError(f"{conn.describe()}: TLS is required (--ssl-mode {mode}) but the "
                        "server does not offer it")
    if use_tls:
        caps |= CAP.CLIENT_SSL
        rd.send(SslRequest(caps))
        rd.start_tls(ssl_context(conn), server_hostname=conn.host)
    policy = AuthPolicy.of(conn, tls=use_tls)
    password = (conn.password or "").encode()
    nonce = hs.auth_plugin_data.rstrip(b"\0")
    plugin = live_auth.greeting_plugin(hs.auth_plugin_name or "mysql_native_password",
                                       policy, password)
    state = AuthState(plugin, nonce)
    rd.send(HandshakeResponse41(
        caps, conn.user, live_auth.response(plugin, password, nonce, policy, state),
        client_plugin_name=plugin,
        connect_attrs=(("_client_name", "binlogscope"), ("program_name", "binlogscope")),
        zstd_compression_level=rd.session.compression_level,
    ))
    put(SourceItem("step", step=SetupStep(
        "auth", f"log in as {conn.user} ({plugin})",
        "the password never crosses the wire: the client proves it knows it by scrambling "
        "the server's one-time nonce")))
    while True:
        p = rd.next_packet()
        v = p.value
        if isinstance(v, OkPacket):
            return
        if isinstance(v, ErrPacket):
            raise LiveError(err_text(v, "authentication failed", logged_in=False, tls_possible=(
                not use_tls and bool(hs.capability_flags & CAP.CLIENT_SSL))), v.error_code)
        if isinstance(v, AuthSwitchRequest):
            plugin = v.plugin_name or "mysql_old_password"
            if plugin == "mysql_old_password":
                nonce = (v.plugin_provided_data or nonce)[:8]
            elif plugin == "dialog":
                nonce = v.plugin_provided_data  # the question: type byte + prompt
            else:
                nonce = v.plugin_provided_data.rstrip(b"\0")
            state = AuthState(plugin, nonce)
            rd.send(AuthSwitchResponse(live_auth.response(plugin, password, nonce, policy,
                                                          state)))
            continue
        if isinstance(v, AuthMoreData):
            answer = live_auth.more_data_answer(v.data, password, policy, state)
            if answer is not None:
                rd.send(AuthSwitchResponse(answer))
            continue
        if state.plugin == "dialog" and p.kind == "raw" and p.payload:
            # the dialog plugin's next question comes without the 0x01 prefix
            rd.send(AuthSwitchResponse(live_auth.response("dialog", password, p.payload,
                                                          policy, state)))
            continue
        raise LiveError(f"authentication: unexpected {p.kind} packet")


def compression_flag(conn: ConnectionOptions, server_caps: int) -> int:
    """The capability flag of the compressed protocol to ask for (0: none): the first of
    ``--compression-algorithms`` the server offers (zlib: CLIENT_COMPRESS, zstd:
    CLIENT_ZSTD_COMPRESSION_ALGORITHM); a LiveError when it offers none of them and
    'uncompressed' is not allowed (as the mysql client, which refuses to connect then)."""
    if not conn.compression_algorithms:
        return 0
    names = conn.compression_algorithms.split(",")
    flags = {"zlib": int(CAP.CLIENT_COMPRESS),
             "zstd": int(CAP.CLIENT_ZSTD_COMPRESSION_ALGORITHM)}
    for name in names:
        if name == "uncompressed":
            return 0
        if server_caps & flags.get(name, 0):
            return flags[name]
    raise LiveError(f"{conn.describe()}: the server offers none of the compression algorithms "
                    f"'{conn.compression_algorithms}' (add 'uncompressed' to connect without)")


def scramble(plugin: str, password: bytes, nonce: bytes, *, tls: bool) -> bytes:
    """The auth response of ``plugin`` for this password and nonce, with the default policy
    (nothing insecure allowed; ``tls``: a secure transport)."""
    return live_auth.response(plugin, password, nonce, AuthPolicy(secure=tls),
                              AuthState(plugin, nonce))


def ssl_context(conn: ConnectionOptions) -> ssl.SSLContext:
    """The client TLS context of ``--ssl-mode`` (and CA, certificate, key)."""
    ctx = ssl.create_default_context(cafile=conn.ssl_ca) if conn.ssl_ca \
        else ssl.create_default_context()
    if conn.ssl_mode not in ("VERIFY_CA", "VERIFY_IDENTITY"):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif conn.ssl_mode == "VERIFY_CA":
        ctx.check_hostname = False
    if conn.ssl_cert:
        ctx.load_cert_chain(conn.ssl_cert, conn.ssl_key)
    if conn.tls_keylog:
        # OpenSSL appends the NSS key log lines (CLIENT_RANDOM, the TLS 1.3 traffic secrets)
        # as the handshake goes: what Wireshark and ``pcap --tls-keylog`` decrypt with
        ctx.keylog_filename = conn.tls_keylog
    return ctx


__all__ = ["Connection", "authenticate", "connect_error", "open_socket", "scramble",
           "ssl_context"]
