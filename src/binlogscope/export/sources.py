"""Export sources for captures (``--pcap``) and live replication streams (``--live``).

Both turn session events into the exporter's records: every wire packet becomes a
:class:`PacketRecord` (the ``packets`` table) and every binlog event carried in a packet an
:class:`EventRecord` (``events`` and ``rows``). Auth packets are redacted by the exporter's
``redact_payload`` hook, as for every source.

Column metadata for row images comes from the TABLE_MAP events seen in the same stream: each
flow keeps its own small table of them (table ids are per connection).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from binlogscope.events import PacketDecoded
from binlogscope.export.records import (
    EventRecord,
    InputDone,
    PacketRecord,
    Record,
    ResumePoint,
    SourceError,
)
from binlogscope.wire.binlog.context import DecodeContext, TableMap
from binlogscope.wire.binlog.types import EventType


def _tables_ctx(ctx: DecodeContext, pkt: PacketDecoded) -> None:
    ev = pkt.binlog_event
    if ev is None or ev.header is None:
        return
    if ev.header.type_code in (EventType.ROTATE_EVENT, EventType.FORMAT_DESCRIPTION_EVENT):
        ctx.tables.clear()
    tm = getattr(ev.body, "table_map", None)
    if isinstance(tm, TableMap):
        ctx.tables[tm.table_id] = tm


def _packet_record(pkt: PacketDecoded, *, index: int, source: str, kind: str,
                   session_id: str | None, flow: str | None, frame: int | None,
                   time: float | None, binlog_file: str | None) -> PacketRecord:
    ev = pkt.binlog_event
    semi = pkt.semi_sync
    log_pos = ev.header.log_pos if ev is not None and ev.header is not None else None
    return PacketRecord(
        input_index=index, source=source, source_kind=kind, direction=pkt.direction.value,
        seq=pkt.seq, payload_length=pkt.payload_length, kind=pkt.kind, session_id=session_id,
        flow=flow, frame=frame, time=time, semi_sync=semi is not None,
        ack_request=bool(semi is not None and semi.flag & 0x01),
        command=pkt.kind.upper() if pkt.direction.value == "client" else None,
        binlog_file=binlog_file, log_pos=log_pos, payload=pkt.payload or None)


class PcapRecordSource:
    """Packets and events of every MySQL flow in one or more captures."""

    kind = "pcap"

    def __init__(self, paths: list[str], ports: list[int] | None = None) -> None:
        for p in paths:
            if not Path(p).is_file():
                raise SourceError(f"{p}: no such file")
        self.paths = paths
        self.ports = ports

    def inputs(self) -> list[str]:
        return list(self.paths)

    def total_bytes(self) -> int | None:
        return sum(Path(p).stat().st_size for p in self.paths)

    def records(self, resume: ResumePoint | None = None) -> Iterator[Record]:
        from binlogscope.drivers.pcap import CaptureError, read_capture

        for i, path in enumerate(self.paths):
            if resume is not None and i < resume.input_index:
                continue
            ctxs: dict[int, DecodeContext] = {}
            files: dict[int, str] = {}
            try:
                for item in read_capture(path, self.ports, record=False):
                    pkt = item.event
                    if not isinstance(pkt, PacketDecoded):
                        continue
                    fid = item.flow.id
                    ctx = ctxs.setdefault(fid, DecodeContext())
                    _tables_ctx(ctx, pkt)
                    bev = pkt.binlog_event
                    name = getattr(getattr(bev, "body", None), "next_log_name", None)
                    if isinstance(name, str):
                        files[fid] = name
                    sid = f"{Path(path).name}#{fid}"
                    yield _packet_record(pkt, index=i, source=path, kind="pcap", session_id=sid,
                                         flow=item.flow.name, frame=item.frame,
                                         time=item.timestamp, binlog_file=files.get(fid))
                    if bev is not None:
                        yield EventRecord(bev, ctx, i, path, files.get(fid, ""),
                                          source_kind="pcap", session_id=sid,
                                          capture_time=item.timestamp)
            except CaptureError as exc:
                yield InputDone(i, path, str(exc))
                continue
            yield InputDone(i, path)


class LiveRecordSource:
    """A live replica session (``binlogscope live`` options) until the count, the position,
    the end of a non-blocking dump, or Ctrl-C."""

    kind = "live"

    def __init__(self, settings: Any, *, count: int | None = None,
                 until_position: str | None = None) -> None:
        self.settings = settings
        self.settings.stream_tree = False
        self.count = count
        self.until: tuple[str, int] | None = None
        if until_position:
            name, _, pos = until_position.rpartition(":")
            if not name or not pos.isdigit():
                raise SourceError(f"--until-position {until_position!r}: expected FILE:POS")
            self.until = (name, int(pos))

    def inputs(self) -> list[str]:
        c = self.settings.conn
        return [f"live:{c.describe()}"]

    def total_bytes(self) -> int | None:
        return None

    def records(self, resume: ResumePoint | None = None) -> Iterator[Record]:
        import time as _time

        from binlogscope.drivers.live import LiveReplica

        source = self.inputs()[0]
        rep = LiveReplica(self.settings)
        ctx = DecodeContext()
        sid = f"live-{int(_time.time())}"
        delivered = 0
        rep.start()
        try:
            for cursor, item in rep.items():
                pkt = item.event
                rep.ack(cursor, item)
                if item.kind == "error":
                    yield InputDone(0, source, item.text)
                    return
                if not isinstance(pkt, PacketDecoded) or not item.deliver:
                    continue
                _tables_ctx(ctx, pkt)
                now = _time.time()
                fname = rep.fetch_pos.log_file
                yield _packet_record(pkt, index=0, source=source, kind="live", session_id=sid,
                                     flow=None, frame=None, time=now, binlog_file=fname)
                bev = pkt.binlog_event
                if bev is None or bev.header is None:
                    continue
                yield EventRecord(bev, ctx, 0, source, fname or "", source_kind="live",
                                  session_id=sid, capture_time=now)
                if bev.header.log_pos and not bev.header.flags & 0x20:
                    delivered += 1
                    if self.count is not None and delivered >= self.count:
                        break
                    if self.until is not None and fname is not None and (
                            fname, bev.header.log_pos) >= self.until:
                        break
        finally:
            rep.stop()
            rep.join(5)
        if rep.error:
            yield InputDone(0, source, rep.error)
        else:
            yield InputDone(0, source)


__all__ = ["LiveRecordSource", "PcapRecordSource"]
