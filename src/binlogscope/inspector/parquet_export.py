"""Export the rows of the current view to a Parquet dataset (``x`` with a ``.parquet`` name).

The same exporter as ``binlogscope export`` (schema in docs/export-schema.md), fed with only the
rows in view: for binlog files the events at those offsets (re-read from the file), for live
sessions and captures the packets of those rows (and the binlog events they carry). Rows outside
the view are not exported, so transaction GTID/XID columns are empty when the view leaves the
GTID/XID events out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from binlogscope.drivers.binlog_file import read_binlog_file
from binlogscope.export.records import EventRecord, InputDone, Record, ResumePoint
from binlogscope.export.run import run_export
from binlogscope.export.sources import _packet_record, _tables_ctx
from binlogscope.session.events import PacketDecoded
from binlogscope.wire.binlog.context import DecodeContext


class _FileView:
    """The view's events of one or more binlog files (a file set: each file one input)."""

    kind = "file"

    def __init__(self, parts: list[tuple[Path, list[int]]], cancelled: Callable[[], bool]
                 ) -> None:
        self.parts = [(path, sorted(offsets)) for path, offsets in parts]
        self.cancelled = cancelled

    def inputs(self) -> list[str]:
        return [str(path) for path, _ in self.parts]

    def total_bytes(self) -> int | None:
        return None

    def records(self, resume: ResumePoint | None = None) -> Iterator[Record]:
        for k, (path, offsets) in enumerate(self.parts):
            wanted = set(offsets)
            ctx = DecodeContext()
            if offsets:
                for ev in read_binlog_file(path, record=False, ctx=ctx,
                                           stop_position=offsets[-1] + 1):
                    if self.cancelled():
                        break
                    if ev.offset in wanted:
                        yield EventRecord(ev, ctx, k, str(path), path.name)
            yield InputDone(k, str(path))


class _PacketView:
    def __init__(self, source: Any, indices: Sequence[int], cancelled: Callable[[], bool]
                 ) -> None:
        self.source, self.indices, self.cancelled = source, list(indices), cancelled
        self.kind = "live" if getattr(source, "live", False) else "pcap"

    def inputs(self) -> list[str]:
        return [str(getattr(self.source, "label", "view"))]

    def total_bytes(self) -> int | None:
        return None

    def records(self, resume: ResumePoint | None = None) -> Iterator[Record]:
        label = self.inputs()[0]
        ctx = DecodeContext()
        for i in self.indices:
            if self.cancelled():
                break
            pkt = self.source.packet(i)
            if not isinstance(pkt, PacketDecoded):
                continue
            _tables_ctx(ctx, pkt)
            r = self.source.row(i)
            yield _packet_record(pkt, index=0, source=label, kind=self.kind, session_id=label,
                                 flow=None, frame=None, time=getattr(r, "time", None),
                                 binlog_file=None)
            if pkt.binlog_event is not None:
                yield EventRecord(pkt.binlog_event, ctx, 0, label, "", source_kind=self.kind,
                                  session_id=label)
        yield InputDone(0, label)


def export_view_parquet(source: Any, indices: Sequence[int], out_dir: Path,
                        cancelled: Callable[[], bool]) -> str:
    """Write the rows to a new dataset directory; returns a one-line summary."""
    view: _FileView | _PacketView
    if hasattr(source, "packet"):
        view = _PacketView(source, indices, cancelled)
    elif hasattr(source, "parts"):  # several binlog files (BinlogSetSource)
        per: dict[str, list[int]] = {str(p.path): [] for p in source.parts}
        for i in indices:
            r = source.row(i)
            per[str(source.parts[source.part_of(i)].path)].append(r.offset)
        view = _FileView([(Path(k), v) for k, v in per.items()], cancelled)
    else:
        offsets = [source.row(i).offset for i in indices]
        view = _FileView([(Path(source.path), offsets)], cancelled)
    res = run_export(view, str(out_dir))
    c = res.counts
    return f"exported {c['events']} events, {c['rows']} rows, {c['packets']} packets to {out_dir}"
