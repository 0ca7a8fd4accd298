"""Export sources for captures (``--pcap``) and live replication streams (``--live``).

Both turn session events into the exporter's records: every wire packet becomes a
:class:`PacketRecord` (the ``packets`` table) and every binlog event carried in a packet an
:class:`EventRecord` (``events`` and ``rows``). Auth packets are redacted by the exporter's
``redact_payload`` hook, as for every source.

Column metadata for row images comes from the TABLE_MAP events seen in the same stream: each
flow keeps its own small table of them (table ids are per connection).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from binlogscope.drivers.health import Health, reconnects, share_status_head
from binlogscope.drivers.items import Flow, SourceItem
from binlogscope.export.records import (
    EventRecord,
    HealthRecord,
    InputDone,
    PacketRecord,
    Record,
    ResumePoint,
    SourceError,
    health_rows,
)
from binlogscope.session.events import PacketDecoded
from binlogscope.wire.binlog import bodies
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.types import EventType
from binlogscope.wire.replication import SemiSyncAck


def _tables_ctx(ctx: DecodeContext, pkt: PacketDecoded) -> None:
    ev = pkt.binlog_event
    if ev is None or ev.header is None:
        return
    if ev.header.type_code in (EventType.ROTATE_EVENT, EventType.FORMAT_DESCRIPTION_EVENT):
        ctx.tables.clear()
    tm = bodies.table_map(ev)
    if tm is not None:
        ctx.tables[tm.table_id] = tm


def _packet_record(pkt: PacketDecoded, *, index: int, source: str, kind: str,
                   session_id: str | None, flow: str | None, frame: int | None,
                   time: float | None, binlog_file: str | None) -> PacketRecord:
    ev = pkt.binlog_event
    semi = pkt.semi_sync
    log_pos = ev.header.log_pos if ev is not None and ev.header is not None else None
    ack = pkt.value
    if isinstance(ack, SemiSyncAck):  # the event it acknowledges: its end position and file
        log_pos, binlog_file = ack.binlog_pos, ack.binlog_filename or binlog_file
    return PacketRecord(
        input_index=index, source=source, source_kind=kind, direction=pkt.direction.value,
        seq=pkt.seq, payload_length=pkt.payload_length, kind=pkt.kind, session_id=session_id,
        flow=flow, frame=frame, time=time, semi_sync=semi is not None,
        ack_request=bool(semi is not None and semi.flag & 0x01),
        command=pkt.kind.upper() if pkt.direction.value == "client" else None,
        binlog_file=binlog_file, log_pos=log_pos, payload=pkt.payload or None)


#: the capture reader's words for bytes that never reached the decoder (drivers/capture/flows)
_LOST = re.compile(r"(\d+) bytes lost in the capture")


def _loss_record(item: Any, index: int, source: str) -> PacketRecord | None:
    """A TCP gap (or a capture error item) as a ``packets`` row of kind ``TCP_GAP``
    (``payload_length``: the bytes lost) or ``CAPTURE_ERROR``; None for anything else."""
    from binlogscope.session.events import DecodeError

    ev = item.event
    if item.kind == "error":
        text = item.text
    elif type(ev) is DecodeError and _LOST.search(ev.message):
        text = ev.message
    else:
        return None
    m = _LOST.search(text)
    direction = getattr(item.direction, "value", None) or (
        "client" if text.startswith("client") else "server")
    return PacketRecord(
        input_index=index, source=source, source_kind="pcap", direction=direction, seq=0,
        payload_length=int(m.group(1)) if m else 0,
        kind="TCP_GAP" if m else "CAPTURE_ERROR", session_id=f"{Path(source).name}#"
        f"{item.flow.id}", flow=item.flow.name, frame=item.frame, time=item.time,
        payload=text.encode())


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
        for i, path in enumerate(self.paths):
            if resume is not None and i < resume.input_index:
                continue
            yield from capture_records(i, path, self.ports)


def capture_records(index: int, path: str, ports: list[int] | None = None, *,
                    data: bytes | None = None) -> Iterator[Record]:
    """The records of one capture (input ``index``), ending with its :class:`InputDone`;
    ``data``: its bytes when they were read elsewhere (``path`` then only names them)."""
    from binlogscope.drivers.capture.pcap import CaptureError, read_capture

    ctxs: dict[int, DecodeContext] = {}
    files: dict[int, str] = {}
    healths: dict[int, tuple[Health, Flow]] = {}  # flow id -> its health timeline
    end = 0.0
    try:
        for item in read_capture(path, ports, record=False, data=data):
            pkt = item.event
            if item.time is not None and item.time > end:
                end = item.time
            if not isinstance(pkt, PacketDecoded):
                hf = healths.get(item.flow.id)
                if hf is not None and hf[0].closed_at is None and item.kind == "note" \
                        and "closed the connection" in item.text:
                    hf[0].closed_at = item.time  # (the state before the close is judged)
                lost = _loss_record(item, index, path)
                if lost is not None:  # nothing lost silently: a row, a non-zero exit
                    yield lost
                continue
            fid = item.flow.id
            ctx = ctxs.setdefault(fid, DecodeContext())
            _tables_ctx(ctx, pkt)
            bev = pkt.binlog_event
            rotate = bodies.rotate(bev) if bev is not None else None
            if rotate is not None:
                files[fid] = rotate.next_log_name
            sid = f"{Path(path).name}#{fid}"
            hf = healths.get(fid)
            if hf is None:
                hf = healths[fid] = (Health(pair_acks=True), item.flow)
            hf[0].packet(pkt, item.time or 0.0)
            if hf[0].status_head is not None:  # SHOW MASTER STATUS: the dumps' lag
                share_status_head(hf[0], item.flow.server,
                                  ((h, f.server) for h, f in healths.values()))
            yield _packet_record(pkt, index=index, source=path, kind="pcap", session_id=sid,
                                 flow=item.flow.name, frame=item.frame, time=item.time,
                                 binlog_file=files.get(fid))
            if bev is not None:
                yield EventRecord(bev, ctx, index, path, files.get(fid, ""),
                                  source_kind="pcap", session_id=sid,
                                  capture_time=item.time)
    except CaptureError as exc:
        yield from _capture_health(index, path, healths, end)
        yield InputDone(index, path, str(exc))
        return
    yield from _capture_health(index, path, healths, end)
    yield InputDone(index, path)


def _capture_health(index: int, path: str, healths: dict[int, tuple[Health, Flow]],
                    end: float) -> Iterator[HealthRecord]:
    """The health rows of a capture's flows: each flow's timeline, its state at the end (or
    before its close) and, for a later dump from the same client host, a ``reconnect`` row."""
    again = reconnects([(fid, f.client, f.first_timestamp, h.timeline != [])
                        for fid, (h, f) in healths.items()])
    rows: list[dict[str, Any]] = []
    for fid, (h, flow) in healths.items():
        if not h.timeline:
            continue
        if fid in again:
            h.timeline.insert(0, {"time": flow.first_timestamp, "kind": "reconnect",
                                  "text": f"reconnects flow {again[fid]} (a later dump from "
                                          "the same client host)"})
        h.finish(end, flow.closed_by is not None)
        rows += health_rows(h.timeline, path, f"{Path(path).name}#{fid}", flow.name)
    if rows:
        yield HealthRecord(index, path, rows)


#: seconds a stopped live export waits, idle, for the open transaction to end
_STOP_GRACE = 5.0
#: the live state items (drivers/live/states.py) written to the ``health`` table, and as which
#: kind: a stall as it is noticed and its end are ``state`` rows (how the connection stands from
#: then on; the ``silence`` row with its length follows from the packets), a reconnect a
#: ``reconnect`` row
_STATE_ROWS = {"stalled": "state", "recovered": "state", "reconnect": "reconnect"}


class LiveRecordSource:
    """A live replica session (``binlogscope live`` options) until the count, the position,
    the end of a non-blocking dump, or a stop request.

    Every event record carries the replica's restart point after it (``resume.position``), so
    an export checkpoints a live stream like a file and ``--resume`` reconnects there.
    ``should_stop`` (set by the caller: Ctrl-C, SIGTERM, SIGHUP) ends the records without an
    :class:`InputDone`: the stream is not finished, the export is interrupted."""

    kind = "live"

    def __init__(self, settings: Any, *, count: int | None = None,
                 until_position: str | None = None) -> None:
        self.settings = settings
        self.settings.stream_tree = False
        self.count = count
        self.until: tuple[str, int] | None = None
        self.until_position = until_position
        if until_position:
            name, _, pos = until_position.rpartition(":")
            if not name or not pos.isdigit():
                raise SourceError(f"--until-position {until_position!r}: expected FILE:POS")
            self.until = (name, int(pos))
        self.should_stop: Callable[[], bool] | None = None
        #: the replica's warnings once the records ended (a semi-sync dump thread the source
        #: would not KILL): the command prints them (the tables keep events, not notes)
        self.warnings: list[str] = []

    def inputs(self) -> list[str]:
        c = self.settings.conn
        return [f"live:{c.describe()}"]

    def options(self) -> dict[str, Any]:
        """What ``export --resume`` needs to reconnect (never the password)."""
        s, c = self.settings, self.settings.conn
        return {"host": c.host, "port": c.port, "socket": c.socket, "user": c.user,
                "ssl_mode": c.ssl_mode, "ssl_ca": c.ssl_ca, "ssl_cert": c.ssl_cert,
                "ssl_key": c.ssl_key, "server_id": s.server_id, "start": s.start,
                "gtid": s.gtid, "semi_sync": s.semi_sync, "heartbeat": s.heartbeat,
                "non_blocking": s.non_blocking, "net_read_timeout": s.net_read_timeout,
                "connect_timeout": s.connect_timeout,
                "reconnect": s.reconnect,
                "table": [p.pattern for p in s.table_filter.include],
                "exclude": [p.pattern for p in s.table_filter.exclude], "count": self.count,
                "until_position": self.until_position}

    def total_bytes(self) -> int | None:
        return None

    def records(self, resume: ResumePoint | None = None) -> Iterator[Record]:
        import time as _time

        from binlogscope.drivers.live.replica import LiveReplica
        from binlogscope.drivers.live.states import StateWatch
        from binlogscope.pipeline.position import RestartPoint
        from binlogscope.wire.binlog.header import is_artificial
        from binlogscope.wire.binlog.types import is_heartbeat

        source = self.inputs()[0]
        rep = LiveReplica(self.settings)
        rep.shows_notes = False
        if resume is not None and resume.position:
            rp = RestartPoint(**resume.position)
            rep.resume = rp
            rep.fetch_pos.seed_gtid(rp.gtid_set)
        stop = self.should_stop
        boundary = [True, 0.0]  # the last item ended a transaction; when a stop was first seen

        def idle_stop() -> bool:
            """While nothing arrives: stop now at a transaction boundary, else give the
            transaction a few seconds to end (the exporter stops at its end)."""
            if stop is None or not stop():
                return False
            if boundary[0]:
                return True
            if not boundary[1]:
                boundary[1] = _time.monotonic()
            return _time.monotonic() - boundary[1] > _STOP_GRACE

        rep.should_stop = idle_stop
        ctx = DecodeContext()
        sid = f"live-{int(_time.time())}"
        delivered = 0
        health = Health(pair_acks=True)  # the session's health timeline (the health table)
        watch = rep.lag_watch()  # --lag-every: the server's head on a control connection
        # the connection's state changes as they happen (drivers/live/states.py): a stall is
        # noticed while the store is empty and written with the next items (or at the end)
        states = StateWatch(self.settings.heartbeat_period(), rep.last_read)
        noticed: list[SourceItem] = []

        def quiet() -> None:
            noticed.extend(states.tick())

        def items() -> Iterator[tuple[int | None, SourceItem]]:
            for batch in rep.batches(idle=quiet):
                for cursor, item in batch:
                    while noticed:
                        yield None, noticed.pop(0)
                    yield cursor, item
                    if item.deliver:
                        for h in states.after(item):
                            yield None, h
            while noticed:
                yield None, noticed.pop(0)

        rep.start()
        if watch is not None:
            watch.start()
        try:
            for cursor, item in items():
                pkt = item.event
                if cursor is not None:
                    rep.ack(cursor, item)
                if watch is not None and item.deliver:
                    for h in watch.after(item):
                        if h.health is not None and h.health.get("source") == "status":
                            head, _, pos = str(h.health["head"]).rpartition(":")
                            health.head_seen(head, int(pos), h.time or _time.time(), "status")
                st = item.health.get("state") if item.kind == "health" and item.health else None
                if st in _STATE_ROWS:  # (the "connection lost" note says it too: not twice)
                    assert item.health is not None
                    health.mark(item.time or _time.time(), _STATE_ROWS[st],
                                seconds=item.health.get("seconds"),
                                text=str(item.health.get("text") or item.text))
                if health.timeline:
                    rows, health.timeline = health.timeline, []
                    yield HealthRecord(0, source, health_rows(rows, source, sid, None))
                if item.at is not None:
                    boundary[0] = item.skip == 0
                if item.kind == "error":
                    yield InputDone(0, source, item.text)
                    return
                if not isinstance(pkt, PacketDecoded):
                    continue
                _tables_ctx(ctx, pkt)  # (also from events replayed on a resume)
                if not item.deliver:
                    continue
                # the time its bytes arrived from the socket (not when exported)
                now = pkt.wire_time if pkt.wire_time is not None else _time.time()
                health.packet(pkt, now)
                bev = pkt.binlog_event
                # the file an event is in, from the stream's own coordinates: the fetcher's
                # tracker (rep.fetch_pos) reads on ahead, possibly past a ROTATE already
                fname = (bev.binlog_file if bev is not None and bev.binlog_file is not None
                         else rep.fetch_pos.log_file)
                yield _packet_record(pkt, index=0, source=source, kind="live", session_id=sid,
                                     flow=None, frame=None, time=now, binlog_file=fname)
                if bev is None or bev.header is None:
                    continue
                r = item.restart
                at = None if r is None else ResumePoint(0, None, {
                    "log_file": r.log_file, "log_pos": r.log_pos, "skip": r.skip,
                    "gtid_set": r.gtid_set})
                yield EventRecord(bev, ctx, 0, source, fname or "", source_kind="live",
                                  session_id=sid, capture_time=now, resume=at)
                if self.count is not None and not is_heartbeat(bev.header.type_code):
                    delivered += 1  # as live --count counts: live_items.counted_event
                    if delivered >= self.count:
                        break
                if self.until is not None and fname is not None and bev.header.log_pos \
                        and not is_artificial(bev.header) \
                        and (fname, bev.header.log_pos) >= self.until:
                    break
        finally:
            rep.stop()
            rep.join(5)  # (the replica's last work: a semi-sync dump's KILL)
            self.warnings += rep.warnings
            if watch is not None:
                watch.stop()
                watch.close()
        health.finish(_time.time(), rep.error is not None)
        if health.timeline:
            yield HealthRecord(0, source, health_rows(health.timeline, source, sid, None))
        if rep.error:
            yield InputDone(0, source, rep.error)
        elif stop is None or not stop():
            yield InputDone(0, source)


__all__ = ["LiveRecordSource", "PcapRecordSource"]
