"""One binlog dump (COM_BINLOG_DUMP / COM_BINLOG_DUMP_GTID) of a mock-master connection.

:class:`Dump` finds where to start (:mod:`mock_master.dump.positions`), then sends each file: the
fake ROTATE and FORMAT_DESCRIPTION that open it, its events (framed straight from the file's bytes
and cached as a wire image when no fault or per-client change applies), semi-sync headers and
ACK bookkeeping, heartbeats while idle, and the fault actions that fire on given events. Every
event and packet it makes is written by binlogscope's wire encoders.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from binlogscope.drivers.drip import Drip
from binlogscope.wire.binlog.control_events import HeartbeatEvent, RotateEvent
from binlogscope.wire.binlog.encode_events import (
    LOG_EVENT_ARTIFICIAL_F,
    encode_event,
    encode_heartbeat,
    encode_rotate,
)
from binlogscope.wire.binlog.gtid_events import GtidListEvent, MariadbGtid
from binlogscope.wire.binlog.header import HEADER_LEN, peek_header
from binlogscope.wire.binlog.query_event import QueryEvent
from binlogscope.wire.binlog.types import MYSQL_GTIDS, EventType, is_mariadb_only
from binlogscope.wire.commands import ComBinlogDump, ComBinlogDumpGtid
from binlogscope.wire.constants import SEMI_SYNC_INDICATOR
from binlogscope.wire.framing import encode_packet, fragment_count
from binlogscope.wire.handshake import EofPacket, ErrPacket, encode_eof, encode_err
from binlogscope.wire.replication import encode_binlog_packet
from mock_master.dump import images
from mock_master.dump import mariadb_compat as mc
from mock_master.dump.errors import StartError, no_checksum_text
from mock_master.dump.events import BATCH_BYTES, EventEmitter
from mock_master.dump.gtid_sets import in_gtid_set
from mock_master.dump.host import DumpConnection, DumpServer
from mock_master.dump.mariadb_gtid import GTID, GTID_LIST, QUERY, GtidStartError
from mock_master.dump.mysql_reader import read_from
from mock_master.dump.positions import find_start
from mock_master.dump.replica_vars import int_value, names, replica_var
from mock_master.history.sources import (
    FDE,
    FLAG_IN_USE,
    MYSQL_GTID,
    MYSQL_GTID_TAGGED,
    ROTATE,
    CompatError,
    decode_stored,
    dummy_event,
    rewrite_header,
    strip_checksum,
    zero_created,
)
from mock_master.runlog import Closed

HEARTBEAT = int(EventType.HEARTBEAT_LOG_EVENT)


class Dump(EventEmitter):
    """One COM_BINLOG_DUMP(_GTID): where to start, then the event loop (each event through
    :class:`~mock_master.dump.events.EventEmitter`: ACKs and faults)."""

    def __init__(self, conn: DumpConnection, server: DumpServer,
                 cmd: ComBinlogDump | ComBinlogDumpGtid) -> None:
        self.c = conn
        self.m = server
        self.cmd = cmd
        self.seq = 1
        self.sent = 0  # events sent on this connection (for 'at')
        self.out = bytearray()
        self.file_index = 0
        self.event_index = 0
        self.pos = 4
        self.started = time.monotonic()
        uv = conn.ctx.user_vars
        ver = server.version_tuple
        ck = replica_var(uv, "binlog_checksum", server.flavor, ver)
        self.checksum_announced = ck is not None
        self.client_crc = str(ck).upper() == "CRC32" if ck is not None else False
        self.strip = (self.m.stream.checksum and self.checksum_announced and not self.client_crc
                      and self.m.scenario.strip_for_none)
        try:
            self.capability = int(uv.get("mariadb_slave_capability") or 0)
        except (TypeError, ValueError):
            self.capability = 0
        hb = replica_var(uv, "heartbeat_period", server.flavor, ver)
        try:
            self.heartbeat = float(hb) / 1e9 if hb is not None else 0.0
        except (TypeError, ValueError):
            self.heartbeat = 0.0
        self.flags = cmd.flags
        self.annotate = bool(self.flags & 0x02)
        self.non_block = bool(self.flags & 0x01) or (
            isinstance(cmd, ComBinlogDump) and cmd.server_id == 0)
        # the source plugin reads one variable (replica_vars): a client that set only the
        # other name gets no semi-sync headers, as from the real server
        self.semi_asked = int_value(replica_var(uv, "semi_sync", server.flavor, ver)) != 0
        self.semi = (bool(conn.session.semi_sync) and self.m.scenario.semi_sync
                     and self.semi_asked)
        if conn.session.semi_sync and not self.semi_asked and self.m.scenario.semi_sync:
            conn.log.violations.append(
                "semi-sync asked under a name this server version's source plugin does not "
                "read (it reads " + " or ".join("@" + n for n in names("semi_sync",
                                                                         server.flavor, ver))
                + "): the dump goes out without semi-sync headers, as the server's")
        self.actions = self.m.actions_for(conn.log.id)
        self.dummy_types: set[int] = set()
        self.drip: float | None = None
        self._drip_clock = Drip()
        self.stall_until: float | None = None
        self.no_heartbeat_until = 0.0
        self.force_semi = False
        self.bad_magic_at: set[int] = set()
        for a in self.actions:
            if a.at is None and a.after_seconds is None:
                conn.log.faults.append(f"{a.kind} {a.args or ''}".strip()
                                       + " (whole connection)")
            if a.kind == "mariadb_dummy_events":
                self.dummy_types |= {int(t) for t in a.arg("types")}
            elif a.kind == "ack_timeout":
                conn.ack_timeout = float(a.arg("seconds"))
            elif a.kind == "heartbeat_gap" and a.at is None and a.after_seconds is None:
                self.no_heartbeat_until = time.monotonic() + float(a.arg("seconds"))
            elif a.kind == "semisync_without_negotiation" and a.at is None:
                self.force_semi = True
            elif a.kind == "slow_drip" and a.at is None and a.after_seconds is None:
                self.drip = float(a.arg("bytes_per_second"))
        self.fast = not self.actions and not self.semi
        self.skip_gtids: list[tuple[str, int, int]] | None = None
        self.gtid: Any = None  # a mariadb_gtid.GtidDump for MariaDB GTID dumps
        self.binlog_state: Any = None
        self.clear_fde = False
        self.fde_keeps_log_pos = False
        self.mid_pos: int | None = None
        # semi-sync: as the server, ACKs are requested only for transactions appended after
        # the client connected (history replayed gets none) unless the scenario asks for all
        files = self.m.stream.files
        self.live_from = (len(files) - 1, files[-1].count) if files else (0, 0)
        self.ack_all = self.m.scenario.ack_every_transaction
        self._held: tuple[bytes, int, int, bool] | None = None

    # ---------------------------------------------------------------- framing
    def packet(self, payload: bytes) -> None:
        """Queue one packet (several when 16 MiB or more), the sequence id counting on."""
        self.out += encode_packet(payload, self.seq)
        self.seq = (self.seq + fragment_count(len(payload))) & 0xFF

    def ack_read(self) -> None:
        """A semi-sync ACK was read: the server reads it on the dump's own connection, so its
        packet counter follows the ACK's (sequence 0): the next packet it sends has 1."""
        self.seq = 1

    async def flush(self) -> None:
        if self.out:
            data = self.out
            self.out = bytearray()
            if self.drip:
                await self._drip(bytes(data))
            else:
                self.c.write(data)
                await self.c.drain()

    async def _drip(self, data: bytes) -> None:
        """Send ``data`` at no more than ``drip`` bytes a second (:class:`Drip`)."""
        assert self.drip is not None
        await self._drip_clock.send(data, self.drip, self.c.write, self.c.drain)

    def send_event(self, ev: bytes, *, ack: bool = False, magic: int = 0xEF) -> None:
        semi = (self.semi and not self.c.semi_fallback) or self.force_semi
        if semi and magic != SEMI_SYNC_INDICATOR:  # a deliberately wrong semi-sync header
            self.packet(b"\x00" + bytes((magic, 1 if ack else 0)) + ev)
        else:
            self.packet(encode_binlog_packet(ev, (1 if ack else 0) if semi else None))
        self.c.log.events_sent += 1

    # ---------------------------------------------------------------- start position
    def _error(self, code: int, msg: str) -> None:
        self.c.log.errors.append(f"ERR {code}: {msg}")
        self.packet(encode_err(ErrPacket(code, msg, "HY000")))
        self.c.session.end_dump()

    def _find_start(self) -> bool:
        try:
            start = find_start(self.m.stream, self.cmd, self.c.ctx.user_vars, self.m.flavor,
                               server_uuid=self.m.server_uuid() if self.m.flavor == "mysql"
                               else None, version=self.m.version_tuple)
        except StartError as exc:
            self._error(exc.code, str(exc))
            return False
        self.c.log.dump = start.log
        self.file_index, self.event_index = start.file_index, start.event_index
        self.skip_gtids = start.skip_gtids
        self.gtid = start.gtid_dump
        self.binlog_state = start.binlog_state
        self.clear_fde = start.clear_fde
        self.fde_keeps_log_pos = start.fde_keeps_log_pos
        self.mid_pos = start.mid_event_pos
        return True

    def _wants_ack(self, fi: int, i: int) -> bool:
        """Is an ACK requested for event i of file fi (a transaction end)?"""
        if not self.semi or self.c.semi_fallback or (fi, i) not in self.m.stream.txn_ends:
            return False
        return self.ack_all or (fi, i) >= self.live_from

    def _plain_client(self) -> bool:
        """Does this client get every MariaDB event unchanged (no compat conversion)?"""
        return self.m.flavor != "mariadb" or self.capability >= mc.CAP_GTID

    # ---------------------------------------------------------------- the loop
    async def run(self) -> None:
        """The dump; when it ends (EOF, or an ERR) the server closes the connection, as its
        COM_BINLOG_DUMP handler ends the session (no COM_QUIT needed)."""
        try:
            await self._run()
        finally:
            if not self.c.closed:
                with contextlib.suppress(Exception):
                    await self.flush()
                self.c.close("server (the dump ended)")

    async def _run(self) -> None:
        c = self.c
        stream = self.m.stream
        if self.m.scenario.require_register and not c.registered:
            c.log.violations.append("dump without COM_REGISTER_SLAVE")
        if stream.checksum and not self.checksum_announced:
            read = " or ".join("@" + n for n in names("binlog_checksum", self.m.flavor,
                                                       self.m.version_tuple))
            c.log.violations.append("checksum setting not announced: the source's binlog has "
                                    f"CRC32 checksums but the client never set {read} (the "
                                    "names this server version reads)")
        if not self._find_start():
            await self.flush()
            return
        if stream.checksum and not self.checksum_announced:
            # the fake ROTATE, then the FORMAT_DESCRIPTION read says CRC32: the error, with
            # the coordinates the server's run() appends once the file is open (MySQL: the
            # last event read is the FD, m_last_pos after read_event; MariaDB says 4)
            f = stream.files[self.file_index]
            start = f.offsets[self.event_index] if self.event_index < f.count else f.size
            if self.mid_pos is not None:
                start = self.mid_pos
            await self._file_start(self.file_index, start if self.event_index else 4, True, 0,
                                   rotate_only=True)
            end = 4 + (len(f.fde) if f.fde is not None else 0)
            self._error(1236, f"{no_checksum_text(self.m.flavor, self.m.version_tuple)}; the "
                        f"first event '{self._requested_name(empty='')}' at "
                        f"{self.cmd.binlog_pos}, the last event read from '{f.name}' at "
                        f"{end if self.m.flavor == 'mysql' else 4}, the last byte read from "
                        f"'{f.name}' at {end}.")
            await self.flush()
            return
        c.start_stream_reader()
        fi, ei = self.file_index, self.event_index
        first = True
        try:
            while True:
                f = stream.files[fi]
                start_pos = f.offsets[ei] if ei < f.count else f.size
                if first and self.mid_pos is not None:
                    start_pos = self.mid_pos
                await self._file_start(fi, start_pos if not first else
                                       (start_pos if ei else 4), first, ei)
                if first and self.mid_pos is not None:
                    landed = await self._read_mid_event(fi, self.mid_pos)
                    if landed is None:
                        return
                    if landed == f.count and fi + 1 < len(stream.files):
                        fi, ei, first = fi + 1, 0, False
                        continue
                    ei = landed
                first = False
                done = await self._serve_file(fi, ei)
                if done == "next":
                    fi += 1
                    ei = 0
                    continue
                return
        except Closed:
            return

    async def _read_mid_event(self, fi: int, pos: int) -> int | None:
        """MySQL: a dump starting inside an event - the sender reads from ``pos`` whatever
        the bytes say (:mod:`mock_master.dump.mysql_reader`): what it reads whole goes out as
        read, then the event index it lands on; None after the read error (sent)."""
        f = self.m.stream.files[fi]
        data = f.file_bytes()
        fd_end = 4 + (len(f.fde) if f.fde is not None else 0)
        got = read_from(data, pos, list(f.offsets), fd_end,
                        active=fi == len(self.m.stream.files) - 1,
                        mariadb=self.m.flavor == "mariadb")
        for ev in got.sent:
            self.send_event(ev)
        if got.sent:
            self.c.log.faults.append(f"start inside an event at {f.name}:{pos}: "
                                     f"{len(got.sent)} event(s) read from there sent as read")
        if got.error is not None:
            self._error(1236, f"{got.error}; the first event '{self._requested_name(empty='')}'"
                        f" at {pos}, the last event read from '{f.name}' at {got.last_pos}, "
                        f"the last byte read from '{f.name}' at {got.position}.")
            await self.flush()
            return None
        if got.eof:
            return f.count
        assert got.next_index is not None
        return got.next_index

    def _requested_name(self, empty: str = ".") -> str:
        """The file name the dump asked for, as the server's errors print it (MariaDB '.' for
        none, MySQL '')."""
        name = self.cmd.binlog_filename.split("\0", 1)[0]
        return name or (empty if self.m.flavor == "mysql" else ".")

    async def _file_start(self, fi: int, pos: int, first: bool, ei: int, *,
                          rotate_only: bool = False) -> None:
        """The fake ROTATE and the FORMAT_DESCRIPTION that open each file of the dump."""
        f = self.m.stream.files[fi]
        # MySQL's fake_rotate_event: event_checksum_on(), the client's @master_binlog_checksum
        # before the first FD is read (init_checksum_alg), then the last FD's algorithm
        prev = self.m.stream.files[fi - 1].checksum if fi > 0 else f.checksum
        crc = ((self.client_crc if first else prev) if self.m.flavor == "mysql"
               else f.checksum and (self.client_crc or not first)) and not self.strip
        rot = encode_event(ROTATE, encode_rotate(RotateEvent(pos, f.name)),
                           server_id=self.m.server_id, flags=LOG_EVENT_ARTIFICIAL_F,
                           checksum=crc)
        await self._emit(rot, fi, -1)
        if rotate_only:
            return
        fde = f.fde
        if fde is None:
            return
        orig = peek_header(fde).flags
        flags = orig
        if self.m.scenario.clear_in_use_flag and flags & FLAG_IN_USE:
            flags &= ~FLAG_IN_USE
        if first and self.clear_fde:
            # the client resumes past the FDE: log_pos 0 (its position must not move; not
            # for a MySQL 8 GTID dump) and 'created' 0 (its temporary tables must survive)
            fde = zero_created(fde, f.checksum, flags=flags,
                               log_pos=None if self.fde_keeps_log_pos else 0)
        elif self.gtid is not None and not self.gtid.pos_reached():
            fde = zero_created(fde, f.checksum, flags=flags)  # GTIDs still to skip
        elif flags != orig:
            fde = rewrite_header(fde, f.checksum, flags=flags)
        self._fde_fixed = fde
        if ei > 0:  # not from the file start: sent now (else it is event 0 of the loop)
            await self._emit(fde, fi, -1)
        if self.gtid is not None:
            self.gtid.file_started()

    def _transform(self, ev: bytes, fi: int) -> bytes | None:
        """Per-client changes to one stored event (None: not sent). For MariaDB replicas below
        the GTID capability, the conversions the server makes (send_event_to_slave); raises
        CompatError where the server ends the dump."""
        t = ev[4]
        ck = self.m.stream.files[fi].checksum
        if t == FDE:
            ev = self._fde_fixed
        elif t in self.dummy_types:
            ev = dummy_event(ev, ck)
        elif self.m.flavor == "mariadb" and is_mariadb_only(t):
            out = mc.compat_event(ev, ck, self.capability, self.annotate)
            if out is None:
                return None
            ev = out
        if self.strip:
            ev = strip_checksum(ev)
        return ev

    def _fatal_text(self, msg: str, fi: int, i: int) -> str:
        """The server's fatal read error text with the dump's coordinates."""
        f = self.m.stream.files[fi]
        start = f.offsets[i]
        name = self._requested_name()
        return (f"{msg}; the first event '{name}' at {self.cmd.binlog_pos}, the last event "
                f"read from '{f.name}' at {start}, the last byte read from '{f.name}' at "
                f"{start + len(f.event(i))}.")

    async def _send_transformed(self, ev: bytes, fi: int, i: int) -> bool:
        """Transform and send one stored event; False when the dump ended with an error."""
        try:
            out = self._transform(ev, fi)
        except CompatError:
            self._error(1236, self._fatal_text(mc.compat_error(ev[4]), fi, i))
            await self.flush()
            return False
        if out is not None:
            await self._emit(out, fi, i, ack=self._wants_ack(fi, i))
        return True

    async def _gtid_step(self, ev: bytes, fi: int, i: int) -> str | None:
        """A MariaDB GTID dump still skipping or watching UNTIL: one event through the
        server's skip machine, then the fake GTID_LIST events due; "eof" when the dump ended
        (UNTIL reached, or an error)."""
        g = self.gtid
        t = ev[4]
        ck = self.m.stream.files[fi].checksum
        glist: list[MariadbGtid] | None = None
        gtid: tuple[int, int, int, int] | None = None
        commit = False
        if t == GTID_LIST:
            body = decode_stored(ev, ck).body
            glist = list(body.gtids) if isinstance(body, GtidListEvent) else None
        elif t == GTID and len(ev) >= HEADER_LEN + 13:
            b = HEADER_LEN
            gtid = (int.from_bytes(ev[b + 8:b + 12], "little"),
                    int.from_bytes(ev[5:9], "little"),
                    int.from_bytes(ev[b:b + 8], "little"), ev[b + 12])
        elif t == QUERY:
            body = decode_stored(ev, ck).body
            commit = isinstance(body, QueryEvent) and body.query in ("COMMIT", "ROLLBACK")
        try:
            send = g.on_event(t, glist, gtid, commit, self.binlog_state)
        except GtidStartError as exc:
            await self.flush()
            self._error(exc.code, str(exc))
            await self.flush()
            return "eof"
        if send and not await self._send_transformed(ev, fi, i):
            return "eof"
        f = self.m.stream.files[fi]
        end = f.offsets[i] + len(ev)
        for gtids, flags in g.fake_after(t, commit):
            await self._emit(mc.fake_gtid_list(gtids, flags, end, ck and not self.strip,
                                            self.m.server_id), fi, -1)
            if flags:  # UNTIL reached: the dump ends
                await self._end_with_eof()
                return "eof"
        return None

    async def _end_with_eof(self) -> None:
        await self._wait_pending_acks()
        # the session's status flags (0 after a client's SET autocommit=0, as pymysql does)
        self.packet(encode_eof(EofPacket(0, self.c.status_flags())))
        await self.flush()
        self.c.session.end_dump()

    def _skip_gtid_txn(self, ev: bytes, fi: int) -> bool:
        """COM_BINLOG_DUMP_GTID: is this GTID event's transaction in the client's set?"""
        if self.skip_gtids is None or ev[4] not in (MYSQL_GTID, MYSQL_GTID_TAGGED):
            return False
        return in_gtid_set(ev, self.m.stream.files[fi].checksum, self.skip_gtids)

    async def _serve_image(self, fi: int, ei: int) -> int:
        """Fast path: send events ei.. of file fi from the master's cached wire image (shared by
        every client with the same settings, :mod:`.images`), framing it on first use; returns
        the index to continue from."""
        f = self.m.stream.files[fi]
        n = f.count
        key = (fi, ei, n, self.seq, self.annotate, min(self.capability, 4), self.strip,
               self._fde_fixed if ei == 0 else b"")
        img = self.m.images.get(key)
        await self.flush()
        if img is None:
            if images.raw_ok(f, ei, changes_events=self.strip or bool(self.dummy_types),
                             mariadb=self.m.flavor == "mariadb", capability=self.capability,
                             annotate=self.annotate):
                img = await images.frame_and_send(self.c, f, ei, self.seq, self._fde_fixed)
            else:
                data, count, seq = images.build_image(
                    f.events, ei, n, self.seq, not self.strip and not self.dummy_types,
                    lambda ev: self._transform(ev, fi))
                img = ([data], count, seq)
                await images.send_buffers(self.c, img[0])
            images.keep(self.m.images, key, img)
        else:
            await images.send_buffers(self.c, img[0])
        _, count, seq = img
        self.seq = seq
        self.sent += count
        self.c.log.events_sent += count
        return n

    async def _serve_file(self, fi: int, ei: int) -> str:
        stream = self.m.stream
        f = stream.files[fi]
        skipping = False
        i = ei
        if self.fast and not self.dummy_types and self.skip_gtids is None and not self.drip \
                and (self.gtid is None or not self.gtid.active) and self._plain_client():
            i = await self._serve_image(fi, ei)
            if i == f.count and f.count and f.event(-1)[4] == 4 and fi + 1 < len(stream.files):
                return "next"
        while True:
            n = f.count
            events = f.events if i < n else []
            while i < n:
                ev = events[i]
                t = ev[4]
                if self.gtid is not None and self.gtid.active and not (t == FDE and i == 0):
                    if await self._gtid_step(ev, fi, i) == "eof":
                        return "eof"
                    i += 1
                    continue
                if self.skip_gtids is not None:
                    # MySQL (Binlog_sender::send_events): a group whose GTID the client has is
                    # skipped up to the next GTID (a ROTATE is never skipped); the replica
                    # learns the skipped positions from a heartbeat, sent before the next event
                    # (or at once when nothing went out for a heartbeat period)
                    if t in MYSQL_GTIDS:
                        skipping = self._skip_gtid_txn(ev, fi)
                    elif t == ROTATE:
                        skipping = False
                    if skipping:
                        end = f.offsets[i] + len(ev)
                        if self.heartbeat > 0 and \
                                time.monotonic() - self._last_send >= self.heartbeat:
                            self._heartbeat(f, end)
                            self._skip_hb = None
                        else:
                            self._skip_hb = end
                        i += 1
                        continue
                    if self._skip_hb is not None:
                        self._heartbeat(f, self._skip_hb)
                        self._skip_hb = None
                if self.fast and not self.strip and t != FDE and not is_mariadb_only(t) \
                        and not self.dummy_types:
                    self.packet(b"\x00" + ev)
                    self.sent += 1
                    self.c.log.events_sent += 1
                    if len(self.out) >= BATCH_BYTES:
                        await self.flush()
                    i += 1
                    continue
                if not await self._send_transformed(ev, fi, i):
                    return "eof"
                i += 1
                if t == 4 and i == n and fi + 1 < len(stream.files):
                    await self.flush()
                    return "next"
            if self._skip_hb is not None or (skipping and f.count):
                # still inside a skipped group at the end of what there is to read
                self._heartbeat(f, f.size)
                self._skip_hb = None
            await self.flush()
            if fi + 1 < len(stream.files):
                return "next"
            if self.non_block:
                await self._end_with_eof()
                self.c.log.closed_by = self.c.log.closed_by or None
                return "eof"
            await self._idle(f)
            if self.c.closed:
                raise Closed("closed")

    async def _idle(self, f: Any) -> None:
        """Blocking dump at the end of the binlog: wait for events, send heartbeats."""
        cond = self.m.new_events
        assert cond is not None
        n = f.count
        while f.count == n and not self.c.closed:
            await self._check_acks()
            await self._timed_actions()
            period = self.heartbeat if self.heartbeat > 0 else None
            wait = min(period, 0.5) if period else 0.5
            async with cond:
                try:
                    await asyncio.wait_for(cond.wait(), timeout=wait)
                except TimeoutError:
                    pass
            now = time.monotonic()
            if period and f.count == n and now - self._last_send >= period \
                    and now >= self.no_heartbeat_until and self.stall_until is None:
                self._heartbeat(f)
                await self.flush()
            if self.stall_until is not None and now >= self.stall_until:
                self.stall_until = None

    _last_send = 0.0
    _fde_fixed = b""
    #: MySQL GTID dump: the end of the last skipped event, for the next heartbeat
    _skip_hb: int | None = None
    #: an ACK did not come in time: transactions no longer wait for theirs
    _ack_waits_off = False

    def _heartbeat(self, f: Any, pos: int | None = None) -> None:
        # the checksum of the file's FORMAT_DESCRIPTION (MySQL: send_heartbeat_event's
        # event_checksum_on(), the algorithm send_format_description_event read)
        crc = f.checksum and not self.strip
        at = f.size if pos is None else pos
        hb = encode_event(HEARTBEAT, encode_heartbeat(HeartbeatEvent(f.name, at)),
                          server_id=self.m.server_id, log_pos=at, checksum=crc)
        self.send_event(hb)
        self.c.log.heartbeats_sent += 1
        self._last_send = time.monotonic()
