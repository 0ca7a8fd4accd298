"""Re-decoding one packet or binlog event with its Node tree: the inspector's detail on demand.

The inspector indexes a source without trees (``record=False``: fast and small) and decodes the
tree of a row only when it is shown or exported with ``--tree``. This module is that one service.
It needs no byte tap and no second session:

- the bytes are kept by the decoders themselves: a
:class:`~binlogscope.session.events.PacketDecoded`
  carries its joined ``payload`` (the wire framing is rebuilt from it with
  :func:`~binlogscope.wire.framing.encode_packet`), a
  :class:`~binlogscope.wire.binlog.decode.DecodedEvent` its ``raw`` event bytes;
- the decode context that was in force is a :class:`PacketContext` (capabilities, the format
  description and the event's table map, the semi-sync header, a result set's column names).
  :class:`ContextLog` learns it from the decoded packets of each connection while a stream is
  indexed and stores it compactly (one entry per distinct context, an ``int`` per row);
- the bytes go through the wire decoders (:func:`~binlogscope.wire.packet.run_decoder`,
  :func:`~binlogscope.wire.replication.decode_binlog_packet`,
  :func:`~binlogscope.wire.binlog.decode.decode_event`) in recording mode.
"""

from __future__ import annotations

import dataclasses
from array import array
from dataclasses import dataclass, field
from typing import Any

from binlogscope.session.events import DecodeEnv, PacketDecoded, Peer, Phase
from binlogscope.wire import replication
from binlogscope.wire.binlog import bodies
from binlogscope.wire.binlog.context import DecodeContext, TableMap
from binlogscope.wire.binlog.decode import DecodedEvent, decode_event
from binlogscope.wire.binlog.types import EventType
from binlogscope.wire.framing import Packet, PacketBuffer, encode_packet
from binlogscope.wire.handshake import DEFAULT_CAPABILITIES
from binlogscope.wire.packet import KIND_DOCS, KINDS, DecodedPayload, packet_tree, run_decoder
from binlogscope.wire.results import decode_text_row

_FDE = int(EventType.FORMAT_DESCRIPTION_EVENT)
_TABLE_MAP = int(EventType.TABLE_MAP_EVENT)


@dataclass(slots=True)
class PacketContext:
    """What decoding one packet depended on besides its bytes and its kind."""

    caps: int = DEFAULT_CAPABILITIES  # the connection's capabilities (server & client)
    binlog: DecodeContext | None = None  # binlog events: the FDE context + the event's table map
    semi_sync: bool = False  # binlog events: the 0xEF semi-sync header precedes the event
    columns: tuple[str, ...] | None = None  # text rows: the result set's column names


def copy_context(ctx: DecodeContext) -> DecodeContext:
    """A context a decode may change without touching ``ctx`` (its table maps copied too)."""
    return dataclasses.replace(ctx, tables=dict(ctx.tables))


def redecode_event(raw: bytes, ctx: DecodeContext, *, base: int) -> DecodedEvent:
    """The binlog event in ``raw`` (one whole event, at absolute offset ``base``) with its tree,
    decoded in ``ctx`` (the context before it; not changed)."""
    return decode_event(raw, copy_context(ctx), base=base, record=True)


def wire_packet(payload: bytes, *, offset: int, seq: int) -> Packet | None:
    """The packet of ``payload`` framed as on the wire (header at ``offset``, sequence ``seq``)."""
    buf = PacketBuffer(offset)
    buf.receive_data(encode_packet(payload, seq))
    return buf.next_packet()


def redecode_payload(payload: bytes, kind: str, pc: PacketContext, *, base: int
                     ) -> DecodedPayload:
    """A packet's payload (first byte at ``base``) with its tree, as the session decoded it."""
    if kind == "binlog_event" and pc.binlog is not None:
        ctx = copy_context(pc.binlog)
        semi = pc.semi_sync

        def binlog(r: Any, caps: int) -> replication.BinlogPacket:
            return replication.decode_binlog_packet(r, caps, ctx, semi_sync=semi)

        return run_decoder(kind, binlog, payload, caps=pc.caps, base=base)
    if kind == "text_row":
        names = pc.columns

        def text_row(r: Any, caps: int) -> Any:
            return decode_text_row(r, caps, names)

        return run_decoder(kind, text_row, payload, caps=pc.caps, base=base)
    fn, _ = KINDS.get(kind, KINDS["raw"])
    return run_decoder(kind if kind in KIND_DOCS else "raw", fn, payload, caps=pc.caps, base=base)


def redecode_packet(payload: bytes, kind: str, pc: PacketContext, *, direction: Peer,
                    offset: int, seq: int) -> PacketDecoded:
    """A packet decoded again with its tree, from its ``payload`` (``PacketDecoded.payload``),
    the session's ``kind`` for it, its context, and where it was (header at ``offset``)."""
    pkt = wire_packet(payload, offset=offset, seq=seq)
    if pkt is None:  # cannot happen for a payload framed by encode_packet
        raise ValueError(f"packet at {offset}: its payload does not frame")
    return packet_decoded(direction, pkt, kind, pc)


def packet_decoded(direction: Peer, pkt: Packet, kind: str, pc: PacketContext) -> PacketDecoded:
    """Decode ``pkt`` as ``kind`` with its tree: the packet node (header(s) + payload tree)."""
    d = redecode_payload(pkt.payload, kind, pc, base=pkt.payload_offset)
    semi = bev = None
    error = d.error
    if isinstance(d.value, replication.BinlogPacket):
        semi, bev = d.value.semi_sync, d.value.event
        error = error or d.value.error or bev.error
    node = packet_tree(pkt, d, error)
    return PacketDecoded(direction, pkt.offset, pkt.sequence_id, len(pkt.payload), d.kind,
                         d.value, node, Phase.BINLOG_STREAM if bev else Phase.COMMAND, semi,
                         bev, error, pkt.wire_length, pkt.payload)


# ---------------------------------------------------------------------------- contexts
def _table_key(tm: TableMap) -> tuple[Any, ...]:
    if tm.raw:
        return (tm.table_id, tm.raw)
    return (tm.table_id, tm.schema, tm.table, tm.flags,
            tuple((c.type, c.meta, c.name, c.unsigned, c.charset) for c in tm.columns))


@dataclass(slots=True)
class _Conn:
    """Per connection: the table maps and result-set columns the next packets refer to."""

    tables: dict[int, int] = field(default_factory=dict)  # table_id -> ContextLog._tables index
    columns: list[str] = field(default_factory=list)  # of the current result set
    names: int = -1  # their index in ContextLog._names once a row uses them


class ContextLog:
    """The decode contexts of a stream's packets, stored compactly for re-decoding.

    :meth:`observe` is called with each packet of a connection in order and returns an id
    (``int``) of the context the packet was decoded in; :meth:`context` turns the id back into a
    :class:`PacketContext`. The capabilities and the FORMAT_DESCRIPTION context are the
    session's own (:attr:`PacketDecoded.env`, one object until it changes: interned by
    identity, nothing decoded again); what a packet refers to besides them is taken from the
    decoded values: the TABLE_MAP of a rows event, a result set's column names. Identical
    contexts share one id; table maps are stored once.
    """

    def __init__(self) -> None:
        self._conns: dict[int, _Conn] = {}
        self._envs: list[DecodeEnv | None] = []
        self._env_index: dict[int, int] = {}  # id(env) -> index (the envs are kept alive)
        self._tables: list[TableMap] = []
        self._table_index: dict[tuple[Any, ...], int] = {}
        self._names: list[tuple[str, ...]] = []
        self._keys: list[tuple[int, int, int, bool]] = []  # env, table, names, semi
        self._key_index: dict[tuple[int, int, int, bool], int] = {}
        self.server_version = ""
        self.checksum_alg: int | None = None
        # the last packet's connection and env, and its env's index (packets come in runs)
        self._last_conn = -1
        self._last_c = _Conn()
        self._last_env: object = object()
        self._last_envi = -1

    def _conn(self, conn: int) -> _Conn:
        c = self._conns.get(conn)
        if c is None:
            c = self._conns[conn] = _Conn()
        return c

    def _env(self, env: DecodeEnv | None) -> int:
        i = self._env_index.get(id(env))
        if i is None:
            i = self._env_index[id(env)] = len(self._envs)
            self._envs.append(env)
            ctx = env.binlog if env is not None else None
            if ctx is not None:
                if ctx.server_version:
                    self.server_version = ctx.server_version
                self.checksum_alg = ctx.checksum_alg
        return i

    def observe(self, ev: PacketDecoded, conn: int = 0) -> int:
        """Note packet ``ev`` of connection ``conn``; the id of its decode context."""
        if conn == self._last_conn:
            c = self._last_c
        else:
            c = self._last_c = self._conn(conn)
            self._last_conn = conn
        v = ev.value
        k = ev.kind
        table = names = -1
        if k == "column_count":
            c.columns = []
            c.names = -1
        elif k == "column_definition41" and v is not None:
            c.columns.append(v.name)
        elif k == "text_row" and c.columns:
            if c.names < 0:
                c.names = len(self._names)
                self._names.append(tuple(c.columns))
            names = c.names
        bev = ev.binlog_event
        if bev is not None:
            h = bev.header
            if h is not None and h.type_code == _FDE:
                c.tables = {}
            elif h is not None and h.type_code == _TABLE_MAP:
                tm = bodies.table_map(bev)
                if tm is not None:
                    self._learn_table(c, tm)
            tid = bodies.table_id(bev)
            if tid is not None:
                table = c.tables.get(tid, -1)
        env = ev.env
        if env is self._last_env:
            envi = self._last_envi
        else:
            envi = self._last_envi = self._env(env)
            self._last_env = env
        key = (envi, table, names, ev.semi_sync is not None)
        i = self._key_index.get(key)
        if i is None:
            i = self._key_index[key] = len(self._keys)
            self._keys.append(key)
        return i

    def run_contexts(self, conn: int, env: DecodeEnv | None, semi: bool,
                     entries: list[tuple[Any, ...]], codes: bytes, ents: array[int]
                     ) -> array[int]:
        """:meth:`observe` of a run of binlog event packets the native kernel indexed
        (``inspector/sources/packet_index.py``): each row's context id, from the run's
        environment and the table map of each row's entry in ``entries`` (``ents``: its index
        there, -1: none; a TABLE_MAP row's map is learnt, as observe learns it)."""
        c = self._conn(conn)
        if env is self._last_env:
            envi = self._last_envi
        else:
            envi = self._last_envi = self._env(env)
            self._last_env = env

        def key_id(table: int) -> int:
            key = (envi, table, -1, semi)
            i = self._key_index.get(key)
            if i is None:
                i = self._key_index[key] = len(self._keys)
                self._keys.append(key)
            return i

        none = key_id(-1)
        if not entries:
            return array("i", (none,)) * len(codes)
        patch: list[tuple[int, int, int]] = []  # (entry, rows before, the id they had)
        learnt: set[int] = set()
        k = codes.find(_TABLE_MAP)
        while k >= 0:  # (the TABLE_MAP rows, in order)
            j = ents[k]
            if j >= 0 and j not in learnt:
                learnt.add(j)
                tm = entries[j][0]
                before = c.tables.get(tm.table_id, -1)
                self._learn_table(c, tm)
                if c.tables.get(tm.table_id, -1) != before and ents.index(j) < k:
                    patch.append((j, k, key_id(before)))
            k = codes.find(_TABLE_MAP, k + 1)
        ids = [none] + [key_id(c.tables.get(e[0].table_id, -1)) for e in entries]
        out = array("i", map(ids.__getitem__, (e + 1 for e in ents)))
        for j, end, old in patch:  # (rare: rows of a table before its map changed the log)
            for i in range(end):
                if ents[i] == j:
                    out[i] = old
        return out

    def context(self, cid: int) -> PacketContext:
        envi, table, names, semi = self._keys[cid]
        env = self._envs[envi]
        binlog = None
        if env is not None and env.binlog is not None:
            binlog = dataclasses.replace(env.binlog, tables={})
            if table >= 0:
                tm = self._tables[table]
                binlog.tables[tm.table_id] = tm
        return PacketContext(env.caps if env is not None else DEFAULT_CAPABILITIES, binlog,
                             semi, self._names[names] if names >= 0 else None)

    def table(self, cid: int) -> TableMap | None:
        """The table map the packet of context ``cid`` refers to (rows events), if known."""
        table = self._keys[cid][1]
        return self._tables[table] if table >= 0 else None

    def _learn_table(self, c: _Conn, tm: TableMap) -> None:
        key = _table_key(tm)
        i = self._table_index.get(key)
        if i is None:
            i = self._table_index[key] = len(self._tables)
            self._tables.append(tm)
        c.tables[tm.table_id] = i


__all__ = ["ContextLog", "PacketContext", "copy_context", "packet_decoded", "redecode_event",
           "redecode_packet", "redecode_payload", "wire_packet"]
