"""The explicit state of one connection's protocol: what the readers of :mod:`.readers` read and
move, and what :class:`~binlogscope.session.machine.Session` holds (h11 style: plain functions
over this state, no mixin).

:class:`ConnState` is the phase, both sides' capabilities, the greeting, the reply the server
owes, the semi-sync negotiation and the binlog :class:`DecodeContext`; it collects the events
the readers emit (``out``) and decodes a packet's payload with the capabilities in force
(:meth:`ConnState.decode`). Framing (sequence ids, buffers) and coordinates stay in the
session.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from binlogscope.session.events import DecodeEnv, Phase, PhaseChanged, SessionEvent
from binlogscope.session.replies import ReplyReader
from binlogscope.wire import handshake as hs
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.constants import CapabilityFlag
from binlogscope.wire.framing import Packet
from binlogscope.wire.packet import KINDS, DecodedPayload, run_decoder
from binlogscope.wire.statements import StatementInfo

_DEPRECATE_EOF = int(CapabilityFlag.CLIENT_DEPRECATE_EOF)


@dataclass(slots=True)
class ConnState:
    """One connection's protocol state (see the module docstring)."""

    phase: Phase
    ctx: DecodeContext
    replies: ReplyReader
    #: build the annotated tree of every packet
    record: bool = True
    #: semi-sync negotiated (None: unknown, the header is detected packet by packet)
    semi_sync: bool | None = False
    #: a query turning semi-sync on was sent; its OK makes ``semi_sync`` True
    semi_sync_pending: bool = False
    #: the client's handshake response (or SSLRequest) was seen
    response_seen: bool = False
    #: the client's next packet is auth data (COM_CHANGE_USER's exchange), not a command
    auth_data_next: bool = False
    handshake: hs.HandshakeV10 | None = None
    server_capabilities: int | None = None
    client_capabilities: int | None = None
    #: MariaDB's own capabilities of each side (greeting / response; 0 from MySQL)
    server_mariadb_capabilities: int = 0
    client_mariadb_capabilities: int = 0
    #: what :attr:`capabilities` is when neither side was seen
    default_caps: int = hs.DEFAULT_CAPABILITIES
    #: the flags of the client's last dump command (BINLOG_DUMP_NON_BLOCK: EOF at the end;
    #: None: no dump command seen - a capture joined mid-stream)
    dump_flags: int | None = None
    #: the client's last dump command had NULs in its file name field (what is wrong, in
    #: words): a length header one byte short leaves a NUL to start the client's next packet
    dump_malformed: str | None = None
    #: MariaDB: the GTID position the replica asked the source to stop at
    #: (``SET @slave_until_gtid``, ``START SLAVE UNTIL master_gtid_pos``); None: none
    until_gtid: str | None = None
    #: prepared statements by id (COM_STMT_PREPARE_OK), to read their COM_STMT_EXECUTEs
    statements: dict[int, StatementInfo] = field(default_factory=dict)
    #: the text of the COM_STMT_PREPARE waiting for its PREPARE_OK
    preparing: str | None = None
    #: OBSERVER: the driver terminates the TLS the client asks for (a proxy) and feeds the
    #: decrypted bytes
    tls_terminated: bool = False
    #: events emitted, in order (the session yields them)
    out: deque[SessionEvent] = field(default_factory=deque)
    #: the compressed protocol in force after the login ("zlib", "zstd"; None: none)
    compression: str | None = None
    #: the decode environment of the packets now (None: to be made again - it changed)
    env_now: DecodeEnv | None = None

    @property
    def capabilities(self) -> int:
        """The capability flags in force (client's request limited to what the server has).

        MariaDB capabilities both sides have are in the bits above 32, as the MariaDB server
        keeps them (``caps | mariadb_caps << 32``; see :mod:`binlogscope.wire.results`)."""
        client, server = self.client_capabilities, self.server_capabilities
        if client is not None:
            if server is not None:
                both = client & server
                mariadb = self.client_mariadb_capabilities & self.server_mariadb_capabilities
                return both | (mariadb << 32) if mariadb else both
            return client
        if server is not None:
            return server
        return self.default_caps

    @property
    def deprecate_eof(self) -> bool:
        return bool(self.capabilities & _DEPRECATE_EOF)

    @property
    def env(self) -> DecodeEnv:
        """The :class:`DecodeEnv` packets are decoded in now (one object until it changes)."""
        env = self.env_now
        caps = self.capabilities
        if env is None or env.caps != caps:
            ctx = self.ctx
            # (before any FORMAT_DESCRIPTION: a fresh context, in which a re-decode guesses the
            # checksum of the dump's fake ROTATE again as the session did)
            env = self.env_now = DecodeEnv(
                caps, dataclasses.replace(ctx, tables={}) if ctx.fde_seen else DecodeContext())
        return env

    def emit(self, ev: SessionEvent) -> None:
        self.out.append(ev)

    def set_phase(self, new: Phase, reason: str) -> None:
        if new != self.phase:
            old = self.phase
            self.phase = new
            self.out.append(PhaseChanged(old, new, reason))

    def decode(self, pkt: Packet, kind: str,
               fn: Callable[[Any, int], Any] | None = None) -> DecodedPayload:
        """``pkt``'s payload by the decoder of ``kind`` (or ``fn``), with the capabilities in
        force."""
        decoder = fn if fn is not None else KINDS[kind][0]
        return run_decoder(kind, decoder, pkt.payload, caps=self.capabilities,
                           base=pkt.payload_offset, record=self.record)


# ---------------------------------------------------------------- queued with the bytes fed
@dataclass(slots=True)
class Resync:
    """Queued with the received bytes: :meth:`Session.resync` (bytes missing here)."""

    skip: int
    reason: str
    #: compressed protocol: plain bytes of the first frame fed that precede a packet header
    plain_skip: int = 0


@dataclass(slots=True)
class TlsPlaintext:
    """Queued with the received bytes: :meth:`Session.tls_established` of an OBSERVER."""


@dataclass(slots=True)
class JoinStream:
    """Queued with the received bytes: :meth:`Session.join_stream`."""

    reason: str


__all__ = ["ConnState", "JoinStream", "Resync", "TlsPlaintext"]
