"""``spark.readStream.format("binlog")``: a live server's binlog as a Structured Streaming
source, exactly once into a sink with a checkpoint (PySpark 4's
:class:`~pyspark.sql.datasource.DataSourceStreamReader`).

::

    register(spark)
    rows = (spark.readStream.format("binlog")
            .option("url", "mysql://repl@db1:3306").option("start", "earliest").load())
    (rows.writeStream.format("parquet").option("checkpointLocation", "/data/ckpt")
     .start("/data/rows"))

**Offsets are binlog coordinates**: ``{"file": "mysql-bin.000042", "pos": 1234, "gtid":
"0-1-77"}`` - a position in the server's binlog that is always a transaction boundary (the
server's own ``SHOW MASTER STATUS`` position, a file's end, or where a GTID start set ends),
with the GTID set executed up to there (MariaDB ``@@gtid_binlog_pos``, read on both sides of the
position so the two agree; MySQL ``Executed_Gtid_Set``). ``latestOffset`` asks the server where
its binlog ends, on a query connection of the live driver (its socket, TLS, login and session:
:class:`~binlogscope.drivers.live.columns.InformationSchema`), retried with the live driver's
backoff while the server is away.

**A micro-batch** ``(start, end]`` holds at most ``maxBytesPerTrigger`` bytes of binlog (64m by
default: it ends at the first transaction start past them, :meth:`BinlogStreamReader._limited`)
and is one input partition per binlog file it spans (the files' sizes from ``SHOW BINARY
LOGS``); with ``maxPartitionBytes`` a bigger range of one file is cut into about equal
partitions at transaction starts (:func:`split_slices`). A task is the live
replica itself (:class:`~binlogscope.export.sources.LiveRecordSource` over
:class:`~binlogscope.drivers.live.replica.LiveReplica`: one decoder, the live command's
reconnects) dumping from the slice's start and stopping after the event that ends at its end;
its records go through the export's decoder and mapper
(:func:`binlogscope.export.task.decode_input`), so the rows and columns are the export's.
Events in no file (the dump's fake ROTATE, a re-sent FORMAT_DESCRIPTION, heartbeats) are not
rows: a batch holds the binlog's events between its two coordinates, nothing else.

**Exactly once**: Spark writes a batch's offsets to the checkpoint before it runs, and after a
crash runs the last logged batch again with the same offsets; a slice's rows depend only on
its coordinates (the binlog does not change under them), so the replay gives the same rows and
a sink that commits per batch (the file sink, Delta, ...) holds each exactly once. The limits
(docs/spark.md): the binlog files a logged batch spans must still be on the server at the
restart, and ``capture_time``/``session_id`` say when and how a row was read, so a replayed
batch has other values there.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    SupportsTriggerAvailableNow,
)

from binlogscope.drivers.live.columns import InformationSchema
from binlogscope.drivers.live.items import LiveError
from binlogscope.export.arrow import full_schema
from binlogscope.export.records import EventRecord, InputDone, Record, ResumePoint
from binlogscope.export.spark.stream_options import (
    StreamOptionError,
    StreamOptions,
    parse_stream_options,
)
from binlogscope.export.task import InputReport, TaskOptions, decode_input
from binlogscope.wire.binlog.header import in_no_file

#: an offset: {"file": name or None, "pos": int or None, "gtid": set or None}
Offset = dict[str, Any]
T = TypeVar("T")
#: the live replica's reconnect backoff (drivers/live/replica.py): 0.5 s, doubling, at most 10
_FIRST_DELAY, _MAX_DELAY = 0.5, 10.0
#: a binlog file's first event starts here (after the 4-byte magic)
FILE_START = 4
#: the most events one ``SHOW BINLOG EVENTS`` lists when a big slice is cut into tasks (the
#: driver holds the listing, statements included; cuts past it are not made)
MAX_LISTED_EVENTS = 50_000


class BinlogStreamError(RuntimeError):
    """The stream cannot go on (one line, shown by Spark as the query's error)."""


def make_offset(file: str | None, pos: int | None, gtid: str | None = None) -> Offset:
    return {"file": file, "pos": pos, "gtid": gtid or None}


def offset_key(o: Offset) -> tuple[str, int]:
    """Binlog order of two offsets (file names of one server sort in binlog order)."""
    return (o.get("file") or "", -1 if o.get("pos") is None else int(o["pos"]))


# ----------------------------------------------------------------------------- the driver side

class ServerPositions:
    """Where the server's binlog is (queries on the live driver's query connection, opened on
    first use and again after a failure, with the live replica's backoff)."""

    def __init__(self, opts: StreamOptions) -> None:
        self.opts = opts
        self._query: InformationSchema | None = None
        self._mariadb: bool | None = None

    def close(self) -> None:
        q, self._query = self._query, None
        if q is not None:
            q.close()

    def _rows(self, sql: str) -> list[list[str | None]]:
        if self._query is None:
            self._query = InformationSchema(self.opts.live_settings())
        rows = self._query(sql)
        return [[None if v is None else bytes(v).decode("utf-8", "replace") for v in r]
                for r in rows]

    def retry(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()``, again after a lost connection or a server going away, with the live
        replica's backoff, at most ``maxReconnects`` times; then one clear error."""
        delay, attempts = _FIRST_DELAY, 0
        while True:
            try:
                return fn()
            except (OSError, TimeoutError, LiveError) as exc:
                self.close()
                code = getattr(exc, "code", None)
                fatal = isinstance(exc, LiveError) and code not in (None, 1053, 1927, 2013)
                if fatal or not self.opts.reconnect or attempts >= self.opts.max_reconnects:
                    more = f" (gave up after {attempts} retries)" if attempts else ""
                    raise BinlogStreamError(f"binlog stream from {self.opts.describe()}: "
                                            f"{what}: {exc}{more}") from None
                attempts += 1
                time.sleep(delay)
                delay = min(delay * 2, _MAX_DELAY)

    def is_mariadb(self) -> bool:
        if self._mariadb is None:
            version = self._rows("SELECT @@version")[0][0] or ""
            self._mariadb = "mariadb" in version.lower()
        return self._mariadb

    def _status_sql(self) -> str:
        if self.is_mariadb():
            return "SHOW MASTER STATUS"
        version = self._rows("SELECT @@version")[0][0] or ""
        major = version.split(".")[0]
        modern = major.isdigit() and (int(major) > 8 or version.startswith("8.4"))
        return "SHOW BINARY LOG STATUS" if modern else "SHOW MASTER STATUS"

    def _position_once(self) -> Offset:
        if self.is_mariadb():
            for _ in range(20):  # the GTID state read on both sides: no commit in between
                before = self._rows("SELECT @@global.gtid_binlog_pos")[0][0]
                status = self._rows("SHOW MASTER STATUS")
                after = self._rows("SELECT @@global.gtid_binlog_pos")[0][0]
                if before == after:
                    break
            gtid = after
        else:
            status = self._rows(self._status_sql())
            gtid = status[0][4] if status and len(status[0]) > 4 else None
        if not status or status[0][0] is None or status[0][1] is None:
            raise BinlogStreamError(f"binlog stream from {self.opts.describe()}: the server "
                                    "reports no binlog position (is log_bin on?)")
        return make_offset(status[0][0], int(status[0][1]), (gtid or "").replace("\n", ""))

    def position(self) -> Offset:
        """The end of the server's binlog now (a transaction boundary) and its GTID set."""
        return self.retry("reading the binlog position", self._position_once)

    def binary_logs(self) -> list[tuple[str, int]]:
        """``SHOW BINARY LOGS``: (file, size) in binlog order."""
        rows = self.retry("listing the binlog files", lambda: self._rows("SHOW BINARY LOGS"))
        return [(str(r[0]), int(r[1] or 0)) for r in rows if r and r[0]]

    def transaction_starts(self, file: str, pos: int, end: int) -> list[int]:
        """Where transactions start in ``file`` between ``pos`` and ``end`` (the positions of
        its GTID events: MariaDB's ``Gtid``, MySQL's ``Gtid``, ``Anonymous_Gtid`` and tagged
        GTIDs), from ``SHOW BINLOG EVENTS`` (at most :data:`MAX_LISTED_EVENTS` events). Empty
        when the server refuses the listing (a privilege, no such statement): the caller
        then does not cut."""
        name = file.replace("\\", "\\\\").replace("'", "\\'")
        try:
            rows = self._rows(f"SHOW BINLOG EVENTS IN '{name}' FROM {int(pos)} "
                              f"LIMIT {MAX_LISTED_EVENTS}")
        except (OSError, TimeoutError, LiveError):
            self.close()
            return []
        out = []
        for r in rows:
            if len(r) < 3 or r[1] is None or not r[1].isdigit():
                continue
            at, kind = int(r[1]), (r[2] or "").lower()
            if at >= end:
                break
            if at > pos and "gtid" in kind and "list" not in kind and "previous" not in kind:
                out.append(at)
        return out

    def gtid_start(self, gtid: str) -> Offset:
        """Where the first transaction after ``gtid`` starts (file, pos): found by the live
        replica itself (a non-blocking GTID dump, the first GTID event it is sent). None
        after it: the server's position, read on both sides of the dump (no commit in
        between)."""
        from binlogscope.drivers.live.replica import LiveReplica
        from binlogscope.session.events import PacketDecoded
        from binlogscope.wire.binlog.types import EventType

        starts = {int(EventType.GTID_EVENT), int(EventType.GTID_LOG_EVENT),
                  int(EventType.ANONYMOUS_GTID_LOG_EVENT), int(EventType.GTID_TAGGED_LOG_EVENT)}
        for _ in range(20):
            before = self.position()
            rep = LiveReplica(self.opts.live_settings(gtid=gtid, non_blocking=True))
            found: Offset | None = None
            rep.start()
            try:
                for cursor, item in rep.items():
                    rep.ack(cursor, item)
                    if item.kind == "error":
                        raise BinlogStreamError(f"binlog stream from {self.opts.describe()}: "
                                                f"start gtid:{gtid}: {item.text}")
                    ev = item.event
                    bev = ev.binlog_event if isinstance(ev, PacketDecoded) else None
                    h = None if bev is None else bev.header
                    if bev is None or h is None or in_no_file(h) or bev.file_pos is None:
                        continue
                    if h.type_code in starts:
                        found = make_offset(bev.binlog_file or rep.fetch_pos.log_file,
                                            bev.file_pos, gtid)
                        break
            finally:
                rep.stop()
                rep.join(5)
            if found is not None:
                return found
            after = self.position()
            if after == before:
                return make_offset(after["file"], after["pos"], gtid)
        raise BinlogStreamError(f"binlog stream from {self.opts.describe()}: start gtid:{gtid}:"
                                " the server kept committing while its end was looked for")


@dataclass(frozen=True, slots=True)
class StreamSlice(InputPartition):  # type: ignore[misc]
    """One task of a micro-batch: the binlog from ``file:pos`` to ``end_file:end_pos``."""

    index: int
    file: str
    pos: int
    end_file: str
    end_pos: int
    gtid: str | None  # the GTID set executed before file:pos (informational, for seeding)


def slices(start: Offset, end: Offset, logs: list[tuple[str, int]] | None) -> list[StreamSlice]:
    """The slices of ``(start, end]``: one per binlog file (``logs``: SHOW BINARY LOGS; None:
    unknown, one slice)."""
    if offset_key(end) <= offset_key(start):
        return []
    sf, sp, ef, ep = start["file"], int(start["pos"]), end["file"], int(end["pos"])
    if sf == ef or not logs:
        return [StreamSlice(0, sf, sp, ef, ep, start.get("gtid"))]
    sizes = dict(logs)
    names = [n for n, _ in logs if sf <= n <= ef]
    if not names or names[0] != sf or names[-1] != ef or sf not in sizes:
        return [StreamSlice(0, sf, sp, ef, ep, start.get("gtid"))]
    out: list[StreamSlice] = []
    for name in names:
        lo = sp if name == sf else FILE_START
        hi = ep if name == ef else sizes[name]
        if hi > lo:
            out.append(StreamSlice(len(out), name, lo, name, hi,
                                   start.get("gtid") if name == sf else None))
    return out


def split_slices(parts: list[StreamSlice], max_bytes: int,
                 starts: Callable[[str, int, int], list[int]]) -> list[StreamSlice]:
    """``parts`` with each slice of more than ``max_bytes`` cut into about equal pieces at
    transaction starts (``starts(file, pos, end)``: where transactions start inside the
    slice), renumbered. The pieces hold the slice's events, each once, in order; a slice
    with no known transaction start inside stays whole."""
    if max_bytes <= 0:
        return parts
    out: list[StreamSlice] = []
    for p in parts:
        size = p.end_pos - p.pos
        cuts: list[int] = []
        if p.file == p.end_file and size > max_bytes:
            known = starts(p.file, p.pos, p.end_pos)
            k = -(-size // max_bytes)
            for i in range(1, k):
                target = p.pos + size * i // k
                at = next((x for x in known if x >= target and (not cuts or x > cuts[-1])),
                          None)
                if at is not None and p.pos < at < p.end_pos:
                    cuts.append(at)
        lo, gtid = p.pos, p.gtid
        for hi in [*cuts, p.end_pos]:
            out.append(StreamSlice(len(out), p.file, lo, p.end_file, hi, gtid))
            lo, gtid = hi, None
    return out


class BinlogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
    """The streaming reader (see the module doc). Built on the driver (offsets, slices) and
    pickled to the executors (:meth:`read`): it holds the options, never a password or a
    connection (those are made where they are used)."""

    def __init__(self, options: Any) -> None:
        try:
            self.opts = parse_stream_options(options)
        except StreamOptionError as exc:
            raise BinlogStreamError(str(exc)) from None
        self.schema = full_schema(self.opts.table)
        self._positions: ServerPositions | None = None
        self._target: Offset | None = None
        #: ``maxBytesPerTrigger``: a micro-batch ends at the first transaction start past this
        #: many bytes (see :meth:`_limited`)
        self.max_bytes = self.opts.max_bytes_per_trigger

    def __getstate__(self) -> dict[str, Any]:  # (never a connection to the executors)
        state = {k: getattr(self, k) for k in ("opts", "schema", "_target", "max_bytes")}
        state["_positions"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)

    @property
    def positions(self) -> ServerPositions:
        if self._positions is None:
            self._positions = ServerPositions(self.opts)
        return self._positions

    # ---- offsets (on the driver)
    def initialOffset(self) -> Offset:  # noqa: N802 (Spark's names)
        start = self.opts.start
        low = start.lower()
        if low == "latest":
            return self.positions.position()
        if low == "earliest":
            logs = self.positions.binary_logs()
            if not logs:
                raise BinlogStreamError(f"binlog stream from {self.opts.describe()}: the server "
                                        "lists no binlog files (is log_bin on?)")
            return make_offset(logs[0][0], FILE_START)
        if low.startswith("gtid:"):
            return self.positions.gtid_start(start[5:].strip())
        name, _, pos = start.rpartition(":")
        return make_offset(name, int(pos))

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        return ReadMaxBytes(self.max_bytes) if self.max_bytes > 0 else ReadAllAvailable()

    def latestOffset(self, start: Offset, limit: ReadLimit) -> Offset:  # noqa: N802
        end = self._target if self._target is not None else self.positions.position()
        if offset_key(end) <= offset_key(start):
            return start
        if isinstance(limit, ReadMaxBytes) and limit.max_bytes > 0 and start.get("file"):
            end = self._limited(start, end, limit.max_bytes)
        return end

    def _limited(self, start: Offset, end: Offset, max_bytes: int) -> Offset:
        """Where a batch from ``start`` ends with ``max_bytes`` of binlog: the first
        transaction start past that many bytes that the server lists (``SHOW BINLOG EVENTS``,
        :meth:`ServerPositions.transaction_starts`), else the end of that binlog file (a
        boundary known without listing), else ``end``."""
        logs = self.positions.binary_logs() if start["file"] != end["file"] else []
        files = [(n, s) for n, s in logs if start["file"] <= n <= end["file"]]
        if not files or files[-1][0] != end["file"]:
            files = [(start["file"], 0)] if start["file"] == end["file"] else []
        used = 0
        for name, size in files:
            lo = int(start["pos"]) if name == start["file"] else FILE_START
            hi = int(end["pos"]) if name == end["file"] else size
            if hi <= lo:
                continue
            if used + hi - lo > max_bytes:
                target = lo + max_bytes - used
                cut = next((at for at in self.positions.transaction_starts(name, lo, hi)
                            if at >= target), None)
                if cut is not None:
                    return make_offset(name, cut, None)
                return end if name == end["file"] else make_offset(name, size, None)
            used += hi - lo
        return end

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self._target = self.positions.position()

    def reportLatestOffset(self) -> Offset | None:  # noqa: N802
        return None

    def partitions(self, start: Offset, end: Offset) -> list[StreamSlice]:
        if offset_key(end) <= offset_key(start):
            return []
        if start.get("file") is None:
            raise BinlogStreamError(f"binlog stream: offset {start} has no binlog file")
        logs: list[tuple[str, int]] | None = None
        if start["file"] != end["file"]:
            try:
                logs = self.positions.binary_logs()
            except BinlogStreamError:
                logs = None  # one slice: the same rows, read by one task
        return split_slices(slices(start, end, logs), self.opts.max_partition_bytes,
                            self.positions.transaction_starts)

    def commit(self, end: Offset) -> None:
        """Nothing to release: the server keeps its binlog (``expire_logs_days`` decides)."""

    def stop(self) -> None:
        if self._positions is not None:
            self._positions.close()

    # ---- the task (on an executor)
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, StreamSlice)
        yield from read_slice(self.opts, partition, self.schema)


def _in_file(records: Iterator[Record]) -> Iterator[Record]:
    """The binlog's events of a dump: no packets, no event in no file (the fake ROTATE, a
    FORMAT_DESCRIPTION re-sent at a mid-file start, heartbeats, artificial events)."""
    for rec in records:
        if isinstance(rec, EventRecord):
            h = rec.event.header
            if h is None or in_no_file(h) or rec.event.file_pos is None:
                continue
            yield rec
        elif isinstance(rec, InputDone):
            yield rec


def read_slice(opts: StreamOptions, part: StreamSlice, schema: pa.Schema
               ) -> Iterator[pa.RecordBatch]:
    """A slice's rows of the options' table: the live replica dumping from ``file:pos`` until
    the event that ends at ``end_file:end_pos``, decoded by the export's decoder and mapper.
    A connection that cannot be (re)made fails the task (the batch is run again from its
    offsets when the query is restarted). The replica's warnings (a semi-sync dump's thread
    the source would not KILL) go to the task's stderr, one line each, as ``export --live``
    prints them: the executor's log (the console in local mode)."""
    from binlogscope.export.sources import LiveRecordSource

    server_id = None if opts.server_id is None else opts.server_id + part.index
    settings = opts.live_settings(server_id=server_id)
    src = LiveRecordSource(settings, until_position=f"{part.end_file}:{part.end_pos}")
    source = f"live:{opts.describe()}"
    records = src.records(ResumePoint(0, None, {"log_file": part.file, "log_pos": part.pos,
                                                 "skip": 0, "gtid_set": part.gtid}))
    task = TaskOptions("live", opts.no_raw, tables=(opts.table,))
    for item in decode_input(part.index, source, 0, None, task, records=_in_file(records)):
        if isinstance(item, InputReport):
            if item.failure:
                raise BinlogStreamError(f"binlog stream from {opts.describe()}, "
                                        f"{part.file}:{part.pos} to {part.end_file}:"
                                        f"{part.end_pos}: {item.failure}")
            continue
        table, values, data = item
        if table == opts.table and data.num_rows:
            yield _with_partition(schema, values, data)
    for warning in src.warnings:  # (a semi-sync dump's thread the source would not KILL)
        print(f"binlogscope: spark stream: {opts.describe()}, {part.file}:{part.pos}: "
              f"{warning}", file=sys.stderr)


def _with_partition(schema: pa.Schema, values: tuple[str, ...], data: pa.Table
                    ) -> pa.RecordBatch:
    n = data.num_rows
    cols = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in data.columns]
    for v in values:  # "" is the NULL partition (as the dataset's __HIVE_DEFAULT__)
        cols.append(pa.repeat(pa.scalar(v or None, pa.string()), n))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


__all__ = ["BinlogStreamError", "BinlogStreamReader", "ServerPositions", "StreamSlice",
           "make_offset", "offset_key", "read_slice", "slices", "split_slices"]
