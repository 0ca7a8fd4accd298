"""A micro-batch's big binlog range read by several tasks (option ``maxPartitionBytes``), and a
backlog read in several micro-batches (option ``maxBytesPerTrigger``): both cut at transaction
starts the server lists (``SHOW BINLOG EVENTS``), and the pieces' rows are the whole range's
rows, each once (real MariaDB, the live replica; real Spark ``local[2]`` where marked)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from binlogscope.export.spark.stream import StreamSlice, split_slices
from binlogscope.export.spark.stream_options import StreamOptionError, parse_stream_options
from tests.export.spark.stream_support import master_status
from tests.watch_support import run_sql


def test_a_big_slice_is_cut_at_transaction_starts_into_about_equal_pieces() -> None:
    starts = [150, 400, 420, 700, 960]
    asked: list[tuple[str, int, int]] = []

    def listed(file: str, pos: int, end: int) -> list[int]:
        asked.append((file, pos, end))
        return [s for s in starts if pos < s < end]

    parts = [StreamSlice(0, "b.1", 100, "b.1", 1000, "0-1-5"),
             StreamSlice(1, "b.2", 4, "b.2", 50, None)]
    got = split_slices(parts, 300, listed)
    assert [(s.index, s.file, s.pos, s.end_pos, s.gtid) for s in got] == [
        (0, "b.1", 100, 400, "0-1-5"), (1, "b.1", 400, 700, None),
        (2, "b.1", 700, 1000, None), (3, "b.2", 4, 50, None)]
    assert asked == [("b.1", 100, 1000)]  # (the small slice is not listed)
    # no transaction start known inside, or cutting off: the slice stays whole
    assert split_slices(parts, 300, lambda f, p, e: []) == parts
    assert split_slices(parts, 0, listed) == parts
    # one start only: two pieces, never an empty one
    got = split_slices(parts[:1], 100, lambda f, p, e: [960])
    assert [(s.pos, s.end_pos) for s in got] == [(100, 960), (960, 1000)]


def test_the_option_is_a_byte_count() -> None:
    assert parse_stream_options({"maxPartitionBytes": "8m"}).max_partition_bytes == 8 << 20
    assert parse_stream_options({"maxpartitionbytes": "65536"}).max_partition_bytes == 65536
    assert parse_stream_options({}).max_partition_bytes == 0
    with pytest.raises(StreamOptionError, match="maxPartitionBytes"):
        parse_stream_options({"maxPartitionBytes": "lots"})


@pytest.mark.mysql
def test_the_pieces_hold_the_slice_rows_each_once(mariadb: Any, tmp_path: Path) -> None:
    from binlogscope.export.arrow import full_schema
    from binlogscope.export.spark.stream import BinlogStreamReader, make_offset, read_slice

    db = mariadb
    run_sql(db, "DROP TABLE IF EXISTS sp1",
            "CREATE TABLE sp1 (id INT PRIMARY KEY, v VARCHAR(200))")
    start = master_status(db)
    for i in range(0, 600, 20):
        run_sql(db, "INSERT INTO sp1 VALUES " + ",".join(
            f"({j}, '{'x' * 150}{j}')" for j in range(i, i + 20)))
    run_sql(db, "UPDATE sp1 SET v = 'u' WHERE id % 7 = 0", "DELETE FROM sp1 WHERE id < 40")
    end = master_status(db)
    assert start[0] == end[0]
    cnf = tmp_path / "split.cnf"
    cnf.write_text(f"[client]\npassword={db.repl_password}\n")
    reader = BinlogStreamReader({"url": f"mysql://{db.repl_user}@{db.host}:{db.port}",
                                 "defaultsFile": str(cnf), "sslMode": "DISABLED",
                                 "maxPartitionBytes": str(-(-(end[1] - start[1]) // 4))})
    try:
        parts = reader.partitions(make_offset(*start), make_offset(*end))
    finally:
        reader.stop()
    assert len(parts) == 4
    assert [p.pos for p in parts[1:]] == [p.end_pos for p in parts[:-1]]
    assert (parts[0].pos, parts[-1].end_pos) == (start[1], end[1])
    gtid_starts = {int(r[1]) for r in run_sql(db, f"SHOW BINLOG EVENTS IN '{start[0]}'")
                   if r[2] == "Gtid"}
    assert {p.pos for p in parts[1:]} <= gtid_starts

    schema = full_schema("rows")

    def rows(slices: list[StreamSlice]) -> list[tuple[Any, ...]]:
        out = []
        for s in slices:
            for b in read_slice(reader.opts, s, schema):
                d = b.to_pydict()
                out += [(d["offset"][i], d["row_index"][i], d["gtid"][i], d["operation"][i],
                         d["after_json"][i]) for i in range(b.num_rows) if d["table"][i] == "sp1"]
        return out

    whole = rows([StreamSlice(0, start[0], start[1], end[0], end[1], None)])
    assert len(whole) == 600 + 86 + 40
    assert rows(parts) == whole


@pytest.mark.spark
@pytest.mark.mysql
def _in_thirds(spark: Any, db: Any, tmp_path: Path, start: tuple[str, int],
               end: tuple[str, int], option: str) -> Any:
    """A query from ``start`` into a Parquet sink, all that is there now (availableNow), with
    ``option`` (a byte budget) at a third of the bytes up to ``end``; ended without error."""
    cnf = tmp_path / "q.cnf"
    cnf.write_text(f"[client]\npassword={db.repl_password}\n")
    q = (spark.readStream.format("binlog")
         .option("url", f"mysql://{db.repl_user}@{db.host}:{db.port}")
         .option("defaultsFile", str(cnf)).option("sslMode", "DISABLED")
         .option("start", f"{start[0]}:{start[1]}")
         .option(option, str(-(-(end[1] - start[1]) // 3))).load()
         .writeStream.format("parquet").option("checkpointLocation", str(tmp_path / "ckpt"))
         .trigger(availableNow=True).start(str(tmp_path / "sink")))
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    return q


def test_a_query_reads_a_cut_batch_into_the_sink_once(spark: Any, mariadb: Any,
                                                       tmp_path: Path) -> None:
    """Through Spark: one micro-batch of one file, cut into 3 tasks (3 files in the sink), the
    sink equal to the binlog's rows read by the batch source."""
    from binlogscope.export.spark import register
    from tests.export.spark.stream_support import binlog_rows, row_tuples

    register(spark)
    db = mariadb
    run_sql(db, "DROP TABLE IF EXISTS sp2", "CREATE TABLE sp2 (id INT PRIMARY KEY, v TEXT)")
    start = master_status(db)
    for i in range(0, 300, 10):
        run_sql(db, "INSERT INTO sp2 VALUES " + ",".join(
            f"({j}, '{'y' * 300}')" for j in range(i, i + 10)))
    end = master_status(db)
    q = _in_thirds(spark, db, tmp_path, start, end, "maxPartitionBytes")
    assert [int(p["numInputRows"]) for p in q.recentProgress if int(p["numInputRows"])] == [300]
    assert len(list((tmp_path / "sink").glob("part-*.parquet"))) == 3
    sink = spark.read.parquet(str(tmp_path / "sink")).where("`table` = 'sp2'")
    want = binlog_rows(spark, db.binlog_files(), start, "sp2")
    assert row_tuples(sink) == row_tuples(want)


class _Listed:
    """The server's binlog as :meth:`BinlogStreamReader._limited` asks for it: two files and
    the transaction starts ``SHOW BINLOG EVENTS`` would list."""

    def __init__(self) -> None:
        self.logs = [("b.1", 1000), ("b.2", 800)]
        self.starts = {"b.1": [4, 150, 400, 420, 700, 960], "b.2": [4, 300, 500]}
        self.asked: list[tuple[str, int, int]] = []

    def binary_logs(self) -> list[tuple[str, int]]:
        return self.logs

    def transaction_starts(self, file: str, pos: int, end: int) -> list[int]:
        self.asked.append((file, pos, end))
        return [s for s in self.starts[file] if pos < s < end]


def test_max_bytes_per_trigger_ends_a_batch_at_a_transaction_start_inside_a_file() -> None:
    """The limit used to end a batch only at a binlog file's end: a backlog in one file (a
    server's file is up to 1 GB) was one micro-batch whatever the limit."""
    from pyspark.sql.streaming.datasource import ReadMaxBytes

    from binlogscope.export.spark.stream import BinlogStreamReader, make_offset

    reader = BinlogStreamReader({"maxBytesPerTrigger": "300"})
    listed = _Listed()
    reader._positions = listed  # type: ignore[assignment]
    lim = reader._limited
    # one file: the first transaction start at or past 100 + 300
    assert lim(make_offset("b.1", 100), make_offset("b.1", 1000), 300) == make_offset("b.1", 400)
    assert listed.asked == [("b.1", 100, 1000)]
    # the limit is reached in the second file
    assert lim(make_offset("b.1", 900), make_offset("b.2", 800), 300) == make_offset("b.2", 300)
    # no start listed past the limit: the file's end, or the batch's end in its last file
    assert lim(make_offset("b.1", 700), make_offset("b.2", 800), 280) == make_offset("b.1", 1000)
    assert lim(make_offset("b.2", 300), make_offset("b.2", 480), 100) == make_offset("b.2", 480)
    # within the limit: the end
    assert lim(make_offset("b.1", 900), make_offset("b.2", 100), 300) == make_offset("b.2", 100)
    limit = reader.getDefaultReadLimit()
    assert isinstance(limit, ReadMaxBytes) and limit.max_bytes == 300
    assert parse_stream_options({}).max_bytes_per_trigger == 64 << 20
    assert parse_stream_options({"maxBytesPerTrigger": "0"}).max_bytes_per_trigger == 0
    with pytest.raises(StreamOptionError, match="maxBytesPerTrigger"):
        parse_stream_options({"maxBytesPerTrigger": "a lot"})


@pytest.mark.spark
@pytest.mark.mysql
def test_max_bytes_per_trigger_cuts_one_file_into_batches_each_row_once(
        spark: Any, mariadb: Any, tmp_path: Path) -> None:
    """Through Spark: 300 rows of one file read in batches of about a third of their bytes,
    each batch ending at a GTID event's position; the sink equals the binlog's rows."""
    from binlogscope.export.spark import register
    from tests.export.spark.stream_support import binlog_rows, row_tuples

    register(spark)
    db = mariadb
    run_sql(db, "DROP TABLE IF EXISTS sp3", "CREATE TABLE sp3 (id INT PRIMARY KEY, v TEXT)")
    start = master_status(db)
    for i in range(1000, 1300, 10):  # (transactions of one size: ids of 4 digits)
        run_sql(db, "INSERT INTO sp3 VALUES " + ",".join(
            f"({j}, '{'z' * 300}')" for j in range(i, i + 10)))
    end = master_status(db)
    assert start[0] == end[0]
    q = _in_thirds(spark, db, tmp_path, start, end, "maxBytesPerTrigger")
    done = [p for p in q.recentProgress if int(p["numInputRows"])]
    assert [int(p["numInputRows"]) for p in done] == [100, 100, 100]
    gtid_starts = {int(r[1]) for r in run_sql(db, f"SHOW BINLOG EVENTS IN '{start[0]}'")
                   if r[2] == "Gtid"}
    ends = [json.loads(e) if isinstance(e, str) else dict(e)
            for e in (p["sources"][0]["endOffset"] for p in done)]
    assert [e["pos"] for e in ends[:-1]] == sorted(e["pos"] for e in ends[:-1])
    assert {e["pos"] for e in ends[:-1]} <= gtid_starts and ends[-1]["pos"] == end[1]
    sink = spark.read.parquet(str(tmp_path / "sink")).where("`table` = 'sp3'")
    want = binlog_rows(spark, db.binlog_files(), start, "sp3")
    assert row_tuples(sink) == row_tuples(want)
