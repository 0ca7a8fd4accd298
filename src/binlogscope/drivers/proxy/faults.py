"""Fault actions on a relayed replication stream (``binlogscope proxy --action/--scenario``).

The relay's counterpart of the mock master's fault actions, with the same names, argument syntax
(``'KIND at=N key=value ...'``, or ``[[actions]]`` tables in a TOML/YAML scenario file) and
meaning, applied to a real server's stream on its way to a real client:

* ``at`` counts the binlog events the server sends on the connection after its COM_BINLOG_DUMP
  (1 = the fake ROTATE, 2 = the FORMAT_DESCRIPTION, ...); heartbeats are not counted.
  For ``drop_ack``/``delay_ack`` ``at`` counts the client's semi-sync ACKs instead.
* ``after_seconds``: the action fires on the first event relayed at least that long after the
  dump request (heartbeats included, so an idle blocking dump with heartbeats still fires).
* ``times``: on this many dumping connections (0: every one); ``client``: only on connection N.
* ``slow_drip``, ``heartbeat_gap``, ``drop_ack``, ``delay_ack`` without a position apply to
  the whole dump.

With actions, both directions are relayed packet by packet (:class:`FaultRelay`); the server's
packets keep their sequence numbers except where an action adds or removes a packet (the ones
after are renumbered so the client's framing stays valid). ``duplicate_event`` sends the
event's bytes twice (CRC32 and ``log_pos`` as the server wrote them, the copy without a
semi-sync ACK request); ``corrupt_checksum_at`` flips the CRC32's last byte and nothing else;
``truncate_event`` sends the first ``keep`` bytes as a complete packet and closes. A TLS session
the proxy terminates (:mod:`.proxy_tls`) reaches this relay as plaintext and gets its faults;
a compressed session, or a TLS session the proxy does not terminate, is relayed unchanged (its
packets cannot be read; a note says so).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from binlogscope.drivers.drip import Drip
from binlogscope.drivers.scenario_files import (
    Action,
    action_from_mapping,
    check_action,
    read_scenario_file,
)
from binlogscope.drivers.scenario_files import ActionPlan as SharedPlan
from binlogscope.drivers.scenario_files import parse_action as _parse
from binlogscope.wire.binlog.types import is_heartbeat
from binlogscope.wire.constants import CapabilityFlag
from binlogscope.wire.framing import encode_packet
from binlogscope.wire.responses import ErrPacket, encode_err

#: action name -> (argument names with defaults, what it does on the relay)
ACTIONS: dict[str, tuple[dict[str, Any], str]] = {
    "delay": ({"seconds": 1.0}, "hold event N (and what follows) for this long"),
    "stall": ({"seconds": None}, "from event N on relay nothing to the client for this long "
              "(default: until the client goes away)"),
    "slow_drip": ({"bytes_per_second": 1024}, "from event N (default: the dump's start) on, "
                  "relay to the client at most this rate"),
    "disconnect_after_event": ({}, "close both connections right after relaying event N"),
    "corrupt_checksum_at": ({}, "relay event N with a wrong CRC32 (its last byte flipped)"),
    "truncate_event": ({"keep": None}, "relay only the first bytes of event N (default: half) "
                       "as a whole packet, then close both connections"),
    "duplicate_event": ({}, "relay event N twice (the copy asks for no semi-sync ACK)"),
    "drop_ack": ({}, "do not forward the client's Nth semi-sync ACK (default: every ACK)"),
    "delay_ack": ({"seconds": 1.0}, "hold the client's Nth semi-sync ACK (default: every ACK) "
                  "for this long"),
    "heartbeat_gap": ({"seconds": 10.0}, "from event N (default: the dump's start) on, drop the "
                      "server's heartbeats for this long"),
    "send_error": ({"code": 1236, "message": "binlogscope proxy: injected error"},
                   "send the client an ERR packet instead of event N and close both "
                   "connections"),
}
NO_POSITION = {"slow_drip", "heartbeat_gap", "drop_ack", "delay_ack"}
ACK_ACTIONS = {"drop_ack", "delay_ack"}
COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID = 0x12, 0x1E
SEMI_SYNC_INDICATOR = 0xEF
MAX_PAYLOAD = 0xFFFFFF


class ActionError(ValueError):
    """A bad ``--action`` or scenario file (one clear line)."""


#: the proxy's fault actions are the shared :class:`Action` type (the name stays for callers)
RelayAction = Action


def validate(a: Action) -> Action:
    """Check ``a`` against the proxy's table of actions (raises :class:`ActionError`)."""
    return check_action(a, ACTIONS, NO_POSITION, ActionError)


def describe(a: Action) -> str:
    """The action in a note (``at`` counts ACKs for the ACK actions)."""
    return a.describe("ACK" if a.kind in ACK_ACTIONS else "event")


def parse_action(text: str) -> Action:
    """``'KIND at=N key=value ...'`` (the mock master's ``--action`` syntax)."""
    return validate(_parse(text, ActionError))


def load_actions(path: str | Path) -> list[Action]:
    """The ``[[actions]]`` of a TOML or YAML scenario file (other keys are ignored: the file
    can be a mock master scenario)."""
    p = Path(path)
    data = read_scenario_file(p, ActionError)
    if not isinstance(data.get("actions", []), list):
        raise ActionError(f"{p}: expected a table with an 'actions' list")
    out = []
    for entry in data.get("actions", []):
        if not isinstance(entry, dict):
            raise ActionError(f"{p}: each action is a table")
        out.append(validate(action_from_mapping(entry, ActionError)))
    return out


class ActionPlan(SharedPlan):
    """The actions of a proxy run, checked; hands each dumping connection its share."""

    def __init__(self, actions: list[Action]) -> None:
        super().__init__(validate(a) for a in actions)


def _packets(buf: bytearray) -> list[tuple[int, bytes, int]]:
    """Take the complete packets off ``buf``: (sequence id, payload, physical packet count);
    a payload split at 16 MiB comes back as one."""
    out = []
    pos = 0
    n = len(buf)
    while True:
        p = pos
        parts: list[bytes] = []
        seq = -1
        done = False
        while p + 4 <= n:
            length = int.from_bytes(buf[p:p + 3], "little")
            if p + 4 + length > n:
                break
            if seq < 0:
                seq = buf[p + 3]
            parts.append(bytes(buf[p + 4:p + 4 + length]))
            p += 4 + length
            if length < MAX_PAYLOAD:
                done = True
                break
        if not done:
            break
        out.append((seq, b"".join(parts), len(parts)))
        pos = p
    del buf[:pos]
    return out


#: offer(who, data, read, sent): who "client"/"server"; read: time.time() when the chunk that
#: completed the data was read, sent: just before the data was forwarded (an action's delay lies
#: between the two)
Offer = Callable[[str, bytes, float, float], None]


class FaultRelay:
    """Relays one connection packet by packet and applies its actions."""

    def __init__(self, actions_for: Callable[[], list[Action]], offer: Offer,
                 note: Callable[[str], None]) -> None:
        self._actions_for = actions_for
        self.actions: list[Action] = []
        self.offer = offer
        self.note = note
        self.raw = False
        self.dumping = False
        self.first_client_packet = True
        self.events = 0
        self.acks = 0
        self.shift = 0
        self.started = 0.0
        self.drip: float | None = None
        self._drip = Drip()
        self.no_heartbeat_until = 0.0
        self.closing = False
        #: an action closed the connection (the proxy, not the client or the server)
        self.closed_by_action = False
        self.client_gone = False
        self.c_writer: asyncio.StreamWriter | None = None
        self.s_writer: asyncio.StreamWriter | None = None

    # ------------------------------------------------------------------ client -> server
    def _client_packet(self, seq: int, payload: bytes) -> list[tuple[str, Any]]:
        """What to do with one client packet: a list of ('send', bytes) / ('sleep', s)."""
        if self.first_client_packet:
            self.first_client_packet = False
            caps = int.from_bytes(payload[:4], "little") if len(payload) >= 4 else 0
            if caps & CapabilityFlag.CLIENT_SSL and len(payload) == 32:
                self.raw = True
                self.note("TLS session: relayed unchanged, fault actions are off for it")
            elif caps & (CapabilityFlag.CLIENT_COMPRESS
                         | CapabilityFlag.CLIENT_ZSTD_COMPRESSION_ALGORITHM):
                self.raw = True
                self.note("compressed protocol: relayed unchanged, fault actions are off for it")
        elif seq == 0 and payload[:1] in (bytes((COM_BINLOG_DUMP,)),
                                          bytes((COM_BINLOG_DUMP_GTID,))) and not self.dumping:
            self.dumping = True
            self.started = time.monotonic()
            self.actions = self._actions_for()
            for a in self.actions:
                if a.at is None and a.after_seconds is None:
                    self._whole(a)
        elif self.dumping and payload[:1] == bytes((SEMI_SYNC_INDICATOR,)):
            self.acks += 1
            for a in [a for a in self.actions if a.kind in ACK_ACTIONS and
                      (a.at is None or a.at == self.acks)]:
                if a.kind == "drop_ack":
                    self.note(f"drop_ack: semi-sync ACK {self.acks} not forwarded")
                    return []
                secs = float(a.arg("seconds"))
                self.note(f"delay_ack: semi-sync ACK {self.acks} held {secs:g}s")
                return [("sleep", secs), ("send", encode_packet(payload, seq))]
        return [("send", encode_packet(payload, seq))]

    def _whole(self, a: RelayAction) -> None:
        """An action without a position: in force from the dump's start."""
        if a.kind == "slow_drip":
            self.drip = float(a.arg("bytes_per_second"))
            self.note(f"slow_drip: at most {self.drip:g} bytes/s from the dump's start")
        elif a.kind == "heartbeat_gap":
            self.no_heartbeat_until = time.monotonic() + float(a.arg("seconds"))
            self.note(f"heartbeat_gap: no heartbeats for {float(a.arg('seconds')):g}s")

    # ------------------------------------------------------------------ server -> client
    def _fires(self, heartbeat: bool) -> list[Action]:
        el = time.monotonic() - self.started
        out = []
        for a in list(self.actions):
            if a.kind in ACK_ACTIONS:
                continue
            if (a.at is not None and not heartbeat and a.at == self.events) or (
                    a.at is None and a.after_seconds is not None and el >= a.after_seconds):
                self.actions.remove(a)
                out.append(a)
        return out

    def _server_packet(self, seq: int, payload: bytes, count: int
                       ) -> list[tuple[str, Any]]:
        if not self.dumping or payload[:1] != b"\x00" or len(payload) < 20:
            if self.dumping and payload[:1] in (b"\xff", b"\xfe"):
                self.dumping = False  # the dump ended (ERR or EOF)
            return [("send", encode_packet(payload, seq + self.shift))]
        prefix = 1
        if payload[1] == SEMI_SYNC_INDICATOR and len(payload) >= 22 and \
                int.from_bytes(payload[12:16], "little") == len(payload) - 3:
            prefix = 3
        ev = payload[prefix:]
        heartbeat = is_heartbeat(ev[4])
        if not heartbeat:
            self.events += 1
        n = self.events
        steps: list[tuple[str, Any]] = []
        fire = self._fires(heartbeat)
        kinds = {a.kind for a in fire}
        for a in fire:
            what = describe(a)
            self.note(f"{what}: fired on event {n}" if not heartbeat else
                      f"{what}: fired on a heartbeat")
            if a.kind == "delay":
                steps.append(("sleep", float(a.arg("seconds"))))
            elif a.kind == "stall":
                secs = a.arg("seconds")
                steps.append(("stall", None if secs is None else float(secs)))
            elif a.kind == "slow_drip":
                self.drip = float(a.arg("bytes_per_second"))
            elif a.kind == "heartbeat_gap":
                self.no_heartbeat_until = time.monotonic() + float(a.arg("seconds"))
            elif a.kind == "send_error":
                err = encode_err(ErrPacket(int(a.arg("code")), str(a.arg("message"))))
                steps += [("send", encode_packet(err, seq + self.shift)), ("close", None)]
                return steps
        if heartbeat and time.monotonic() < self.no_heartbeat_until:
            self.shift -= count  # the packets after it are renumbered
            return steps
        if "corrupt_checksum_at" in kinds:
            ev = ev[:-1] + bytes((ev[-1] ^ 0xFF,))
        if "truncate_event" in kinds:
            a = next(a for a in fire if a.kind == "truncate_event")
            keep = int(a.arg("keep") or len(ev) // 2)
            steps += [("send", encode_packet(payload[:prefix] + ev[:keep], seq + self.shift)),
                      ("close", None)]
            return steps
        data = encode_packet(payload[:prefix] + ev, seq + self.shift)
        steps.append(("send", data))
        if "duplicate_event" in kinds:
            copy = payload[:1] + (bytes((SEMI_SYNC_INDICATOR, 0)) if prefix == 3 else b"") + ev
            self.shift += count
            steps.append(("send", encode_packet(copy, seq + self.shift)))
        if "disconnect_after_event" in kinds:
            steps.append(("close", None))
        return steps

    # ------------------------------------------------------------------ the pumps
    async def pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                   client_side: bool, chunk: int) -> None:
        """Relay ``src`` to ``dst`` (the client's bytes when ``client_side``)."""
        buf = bytearray()
        peer = "client" if client_side else "server"
        read = 0.0
        try:
            while not self.closing:
                data = await src.read(chunk)
                read = time.time()
                if not data:
                    break
                if self.raw:
                    dst.write(data)
                    self.offer(peer, data, read, read)
                    await dst.drain()
                    continue
                buf += data
                out = bytearray()
                for seq, payload, count in _packets(buf):
                    steps = (self._client_packet(seq, payload) if client_side
                             else self._server_packet(seq, payload, count))
                    for what, arg in steps:
                        if what == "send":
                            out += arg
                            continue
                        await self._flush(dst, out, peer, read)
                        out = bytearray()
                        if what == "sleep":
                            await asyncio.sleep(arg)
                        elif what == "stall":
                            await self._stall(arg)
                        elif what == "close":
                            self.closed_by_action = True
                            self._close_all()
                            return
                    if self.raw:
                        out += buf  # (the rest: TLS or compressed from here on)
                        buf.clear()
                await self._flush(dst, out, peer, read)
                if self.closing:
                    return
        except (ConnectionError, OSError):
            pass
        finally:
            if client_side:
                self.client_gone = True
            if buf and not self.closing:
                try:
                    sent = time.time()
                    dst.write(bytes(buf))
                    self.offer(peer, bytes(buf), read or sent, sent)
                except (ConnectionError, OSError, RuntimeError):
                    pass

    async def _flush(self, dst: asyncio.StreamWriter, out: bytearray, peer: str,
                     read: float) -> None:
        if not out:
            return
        data = bytes(out)
        sent = time.time()
        if self.drip and peer == "server":
            await self._drip.send(data, self.drip, dst.write, dst.drain)
        else:
            dst.write(data)
            await dst.drain()
        self.offer(peer, data, read, sent)

    async def _stall(self, seconds: float | None) -> None:
        if seconds is not None:
            await asyncio.sleep(seconds)
            return
        while not self.client_gone and not self.closing:
            await asyncio.sleep(0.1)
        self._close_all()

    def _close_all(self) -> None:
        self.closing = True
        for w in (self.c_writer, self.s_writer):
            if w is not None:
                w.close()


__all__ = ["ACTIONS", "Action", "ActionError", "ActionPlan", "FaultRelay", "RelayAction",
           "describe", "load_actions", "parse_action"]
