"""The per-event part of a mock-master dump: semi-sync ACK bookkeeping and the fault actions.

:class:`EventEmitter` is a mixin of :class:`mock_master.dump.sender.Dump` (which holds the
connection, the scenario's actions and the framing); its :meth:`_emit` sends one event with
whatever actions fire on it, waits for ACKs as the server's committing session does, and checks
that the ACKs asked for come in time.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from binlogscope.wire.binlog.header import peek_header
from mock_master.dump.host import DumpConnection, DumpServer
from mock_master.history.sources import corrupt_checksum
from mock_master.runlog import Closed
from mock_master.scenario.faults import Action

#: bytes of framed events gathered before they are written to the client
BATCH_BYTES = 1 << 20

#: actions that act before their event is sent (the others change how it is sent)
_FIRED_BEFORE = frozenset({"delay", "heartbeat", "heartbeat_storm", "send_error", "restart",
                           "stall", "heartbeat_gap", "slow_drip", "semisync_without_negotiation",
                           "ack_timeout", "mariadb_dummy_events"})


class EventEmitter:
    """ACKs and fault actions per event (a mixin of :class:`mock_master.dump.sender.Dump`)."""

    # set by the dump (:class:`mock_master.dump.sender.Dump`)
    c: DumpConnection
    m: DumpServer
    actions: list[Action]
    sent: int
    semi: bool
    drip: float | None
    force_semi: bool
    started: float
    out: bytearray
    no_heartbeat_until: float
    dummy_types: set[int]
    _held: tuple[bytes, int, int, bool] | None
    _last_send: float
    _ack_waits_off: bool

    # framing and errors, written by the dump
    async def flush(self) -> None:
        raise NotImplementedError

    def send_event(self, ev: bytes, *, ack: bool = False, magic: int = 0xEF) -> None:
        raise NotImplementedError

    def _heartbeat(self, f: Any, pos: int | None = None) -> None:
        raise NotImplementedError

    def _error(self, code: int, msg: str) -> None:
        raise NotImplementedError

    async def _check_acks(self) -> None:
        c = self.c
        now = time.monotonic()
        for key, t in list(c.pending_acks.items()):
            if now - t > c.ack_timeout:
                del c.pending_acks[key]
                c.log.violations.append(f"missing ACK: no ACK for {key[0]}:{key[1]} within "
                                        f"{c.ack_timeout:g}s")
                if any(a.kind == "ack_timeout" for a in self.actions) and not c.semi_fallback:
                    c.semi_fallback = True
                    c.log.faults.append(f"ack_timeout: semi-sync switched off after "
                                        f"{c.ack_timeout:g}s without an ACK (async from now)")

    async def _timed_actions(self) -> None:
        el = time.monotonic() - self.started
        for a in list(self.actions):
            if a.after_seconds is not None and el >= a.after_seconds and a.at is None:
                self.actions.remove(a)
                if await self._fire(a, None, -1, -1) == "stop":
                    raise Closed("fault ended the dump")

    async def _emit(self, ev: bytes, fi: int, i: int, *, ack: bool = False) -> None:
        """Send one event with whatever actions fire on it."""
        self.sent += 1
        n = self.sent
        c = self.c
        if c.closed:
            raise Closed("closed")
        fire = [a for a in self.actions if a.at == n]
        if self.actions:
            await self._timed_actions()
        for a in fire:
            if a.kind in _FIRED_BEFORE and await self._fire(a, ev, fi, i) == "stop":
                raise Closed("fault ended the dump")
        magic = 0xBE if any(a.kind == "bad_semisync_magic" for a in fire) else 0xEF
        if any(a.kind == "bad_semisync_magic" for a in fire):
            c.log.faults.append(f"bad_semisync_magic at event {n}")
            if not (self.semi or self.force_semi):
                self.force_semi = True
        if any(a.kind == "corrupt_checksum_at" for a in fire):
            ev = corrupt_checksum(ev)
            c.log.faults.append(f"corrupt_checksum_at event {n}")
        if any(a.kind == "truncate_event" for a in fire):
            a = next(a for a in fire if a.kind == "truncate_event")
            keep = int(a.arg("keep") or len(ev) // 2)
            c.log.faults.append(f"truncate_event: event {n} cut to {keep} of {len(ev)} bytes")
            self.send_event(ev[:keep], magic=magic)
            await self.flush()
            c.close("fault: truncate_event")
            raise Closed("truncated")
        if any(a.kind == "cut_packet" for a in fire):
            # the event's packet framed whole, then the connection closed inside it: the
            # client reads a length header promising bytes that never come (a TCP cut)
            a = next(a for a in fire if a.kind == "cut_packet")
            await self.flush()
            self.send_event(ev, magic=magic)
            whole = len(self.out)
            keep = int(a.arg("keep") or 4 + (whole - 4) // 2)
            keep = max(1, min(keep, whole - 1))
            del self.out[keep:]
            c.log.faults.append(f"cut_packet: event {n}'s packet cut after {keep} of its "
                                f"{whole} bytes on the wire, then the connection closed")
            await self.flush()
            c.close("fault: cut_packet")
            raise Closed("cut")
        if any(a.kind == "mangle_packet" for a in fire):
            # the event's packet framed, then one framing field changed: the length header
            # (by ``delta``), the sequence id (by ``delta``) or the payload's first byte (the
            # OK byte 0x00, set to ``value``); the stream goes on after it
            a = next(a for a in fire if a.kind == "mangle_packet")
            await self.flush()
            self.send_event(ev, magic=magic)
            what = str(a.arg("field"))
            delta = int(a.arg("delta") or 0)
            if what == "length":
                size = max(0, int.from_bytes(self.out[0:3], "little") + delta)
                self.out[0:3] = min(size, 0xFFFFFF).to_bytes(3, "little")
            elif what == "seq":
                self.out[3] = (self.out[3] + delta) & 0xFF
            else:
                self.out[4] = int(a.arg("value") or 0) & 0xFF
            how = f"delta {delta}" if what != "first_byte" else f"now {self.out[4]:#04x}"
            c.log.faults.append(f"mangle_packet: event {n}'s packet {what} changed ({how})")
            await self.flush()
            self._last_send = time.monotonic()
            return
        if any(a.kind == "reorder" for a in fire):
            c.log.faults.append(f"reorder: event {n} held back, sent after the next one")
            self._held = (ev, fi, i, ack)
            return
        if ack:
            name = self.m.stream.files[fi].name
            end = peek_header(ev).log_pos
            c.pending_acks[(name, end)] = time.monotonic()
            c.log.acks_requested.append([name, end])
        self.send_event(ev, ack=ack, magic=magic)
        if ack:
            await self.flush()
            if not self._ack_waits_off:
                # a transaction that asks for an ACK stands for a commit: the server's
                # committing session waits for the ACK (up to the semi-sync timeout) before the
                # next one commits; after a timeout the server turns semi-sync off and nobody
                # waits any more
                name, pos = self.m.stream.files[fi].name, peek_header(ev).log_pos
                if not await self._wait_ack(name, pos, fault=False):
                    self._ack_waits_off = True
        self._last_send = time.monotonic()
        held = self._held
        if held is not None and held[0] is not ev:
            self._held = None
            self.send_event(held[0], ack=False)
        if any(a.kind == "duplicate_event" for a in fire):
            c.log.faults.append(f"duplicate_event: event {n} sent twice")
            self.send_event(ev, ack=False)
        if any(a.kind == "pause_until_ack" for a in fire) or (
                ack and any(a.kind == "pause_until_ack" and a.at is None for a in self.actions)):
            await self.flush()
            if ack:
                await self._wait_ack(self.m.stream.files[fi].name, peek_header(ev).log_pos)
            else:
                c.log.faults.append(f"pause_until_ack at event {n}: no ACK was requested for "
                                    "it (semi-sync off, or not a transaction end)")
        if any(a.kind == "disconnect_after_event" for a in fire):
            await self.flush()
            c.log.faults.append(f"disconnect_after_event {n}")
            c.close("fault: disconnect_after_event")
            raise Closed("disconnect")
        if len(self.out) >= BATCH_BYTES or self.drip or fire:
            await self.flush()
        if self.semi and c.pending_acks:
            await self._check_acks()

    async def _wait_pending_acks(self) -> None:
        """Before a non-blocking dump ends: give the requested ACKs time to arrive."""
        c = self.c
        deadline = time.monotonic() + c.ack_timeout
        while c.pending_acks and not c.closed and time.monotonic() < deadline:
            c.ack_event.clear()
            try:
                await asyncio.wait_for(c.ack_event.wait(), timeout=0.1)
            except TimeoutError:
                pass
        await self._check_acks()

    async def _wait_ack(self, name: str, pos: int, *, fault: bool = True) -> bool:
        """Wait up to the ACK timeout for the ACK of name:pos; False when it did not come."""
        c = self.c
        if fault:
            c.log.faults.append(f"pause_until_ack {name}:{pos}")
        deadline = time.monotonic() + c.ack_timeout
        while (name, pos) in c.pending_acks and not c.closed:
            c.ack_event.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                await self._check_acks()
                return False
            try:
                await asyncio.wait_for(c.ack_event.wait(), timeout=left)
            except TimeoutError:
                pass
        return not c.closed

    async def _fire(self, a: Action, ev: bytes | None, fi: int, i: int) -> str | None:
        c = self.c
        k = a.kind
        c.log.faults.append(f"{k} {a.args or ''}".strip() + (f" at event {a.at}" if a.at
                                                              else ""))
        if k == "delay":
            await self.flush()
            await asyncio.sleep(float(a.arg("seconds")))
        elif k in ("heartbeat", "heartbeat_storm"):
            f = self.m.stream.files[max(fi, 0)]
            for _ in range(int(a.arg("count"))):
                self._heartbeat(f)
            await self.flush()
        elif k == "send_error":
            await self.flush()
            self._error(int(a.arg("code")), str(a.arg("message")))
            await self.flush()
            c.close("fault: send_error")
            return "stop"
        elif k == "restart":
            await self.flush()
            self.m.spawn(self.m.restart(float(a.arg("seconds"))))
            return "stop"
        elif k == "stall":
            await self.flush()
            secs = a.arg("seconds")
            if secs is None:
                while not c.closed:
                    await asyncio.sleep(0.1)
                return "stop"
            await asyncio.sleep(float(secs))
        elif k == "heartbeat_gap":
            self.no_heartbeat_until = time.monotonic() + float(a.arg("seconds"))
        elif k == "slow_drip":
            self.drip = float(a.arg("bytes_per_second"))
        elif k == "semisync_without_negotiation":
            self.force_semi = True
        elif k == "ack_timeout":
            c.ack_timeout = float(a.arg("seconds"))
        elif k == "mariadb_dummy_events":
            self.dummy_types |= {int(t) for t in a.arg("types")}
        elif k == "disconnect_after_event":
            await self.flush()
            c.close("fault: disconnect_after_event")
            return "stop"
        return None
