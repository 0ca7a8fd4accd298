"""``spark.readStream.format("binlog")`` from a MySQL server: the mock master in its MySQL
flavour serving real MySQL binlogs from ../shared/fixtures (no MySQL server here), real Spark
``local[2]``.

* MySQL 8.0.45 with GTIDs (Percona binlog server's ``data_80045_gtid``: two files,
  ``uuid:1-6``): a query from ``gtid:uuid:1-2`` while the server holds the first file; its
  offset carries ``Executed_Gtid_Set`` (``uuid:1-4``); the server restarted holding the second
  file too, the same query from its checkpoint reads only ``uuid:5-6``; the sink equals the
  batch source over the two files from the first transaction after the set, row for row.
* MySQL 9.6 tagged GTIDs (``uuid:1-13:mytag:1-2``, then the transaction ``uuid:mytag:3``):
  a query from the tagged set reads that one transaction; its offset's set is tagged too.

What the server does (mysql-server, read, not run): ``SHOW MASTER STATUS`` answers
``Executed_Gtid_Set`` up to 8.3 and ``SHOW BINARY LOG STATUS`` from 8.2 (the only one from 8.4);
a GTID dump (``COM_BINLOG_DUMP_GTID``) skips the transactions of the replica's set
(``Binlog_sender::skip_event``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster
from tests.conftest import fixtures_dir
from tests.export.spark.stream_support import READ_COLUMNS, row_tuples

pytestmark = [pytest.mark.spark, pytest.mark.network, pytest.mark.slow]

UUID80 = "396e294c-1ca4-11f1-9ae7-00155da79c6b"
UUID96 = "55778904-0299-11f1-b1b8-4ef0c4956feb"


def _fixture(rel: str) -> Path:
    path = fixtures_dir() / rel
    if not path.exists():
        pytest.fail(f"the MySQL fixture binlog is missing: {path}")
    return path


def _serve(files: list[Path], port: int = 0, version: str | None = None) -> ThreadedMockMaster:
    return ThreadedMockMaster(Scenario(flavor="mysql", server_version=version,
                                       sources=[BinlogSource(list[str | Path](files))]),
                              "127.0.0.1", port).start()


def _stream(spark: Any, mm: ThreadedMockMaster, start: str, out: Path) -> Any:
    """A query from ``start`` into ``out/sink`` (checkpoint ``out/checkpoint``) until the
    server's current end; the password from an option file."""
    cnf = out.parent / f"{out.name}.cnf"
    cnf.write_text("[client]\npassword=replpass\n")
    q = (spark.readStream.format("binlog").option("url", f"mysql://repl@{mm.host}:{mm.port}")
         .option("defaultsFile", str(cnf)).option("sslMode", "DISABLED")
         .option("start", start).load()
         .writeStream.format("parquet").option("checkpointLocation", str(out / "checkpoint"))
         .trigger(availableNow=True).start(str(out / "sink")))
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    return q


def _initial(mm: ThreadedMockMaster, start: str, tmp: Path) -> dict[str, Any]:
    """The query's first offset (Spark's progress does not show it)."""
    from binlogscope.export.spark.stream import BinlogStreamReader

    cnf = tmp / "initial.cnf"
    cnf.write_text("[client]\npassword=replpass\n")
    reader = BinlogStreamReader({"url": f"mysql://repl@{mm.host}:{mm.port}", "start": start,
                                 "defaultsFile": str(cnf), "sslMode": "DISABLED"})
    try:
        return dict(reader.initialOffset())
    finally:
        reader.stop()


def _offset(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else dict(value)


def test_mysql_gtid_offsets_and_a_restart_from_the_checkpoint(spark: Any,
                                                              tmp_path: Path) -> None:
    from binlogscope.export.spark import register

    register(spark)
    d = "Percona-Lab__percona-binlog-server/mtr/binlog_streaming/std_data/data_80045_gtid"
    files = [_fixture(f"{d}/binlog.000001"), _fixture(f"{d}/binlog.000002")]
    mm = _serve(files[:1])
    port = mm.port
    try:
        # the first transaction after the set starts at 642 (its GTID event, uuid:3)
        assert _initial(mm, f"gtid:{UUID80}:1-2", tmp_path) == {
            "file": "binlog.000001", "pos": 642, "gtid": f"{UUID80}:1-2"}
        q = _stream(spark, mm, f"gtid:{UUID80}:1-2", tmp_path)
    finally:
        mm.stop()
    end = _offset(q.lastProgress["sources"][0]["endOffset"])
    assert end == {"file": "binlog.000001", "pos": 1516, "gtid": f"{UUID80}:1-4"}
    sink = spark.read.parquet(str(tmp_path / "sink"))
    assert sorted({r.gtid for r in sink.select("gtid").collect()}) == [f"{UUID80}:3",
                                                                      f"{UUID80}:4"]
    # the server restarted with the next file written: the query goes on from its checkpoint
    mm = _serve(files, port)
    try:
        q = _stream(spark, mm, "earliest", tmp_path)  # (the start is the checkpoint's)
    finally:
        mm.stop()
    assert _offset(q.recentProgress[0]["sources"][0]["startOffset"]) == end
    assert _offset(q.lastProgress["sources"][0]["endOffset"]) == {
        "file": "binlog.000002", "pos": 847, "gtid": f"{UUID80}:1-6"}
    sink = spark.read.parquet(str(tmp_path / "sink"))
    assert sorted(r.gtid for r in sink.select("gtid").collect()) == (
        [f"{UUID80}:3"] + [f"{UUID80}:4"] * 4 + [f"{UUID80}:5"] * 3 + [f"{UUID80}:6"] * 3)
    want = (spark.read.format("binlog").option("table", "rows")
            .load([str(f) for f in files])
            .where("binlog_file > 'binlog.000001' OR offset >= 642"))
    assert _image_values(sink) == _image_values(want)
    # (the live stream names the columns as the server does; the files carry no names)
    assert {r.after_json for r in sink.where("gtid LIKE '%:3'").collect()} == {'{"id": 2}'}


def _image_values(df: Any) -> list[tuple[Any, ...]]:
    """The rows' comparable columns (:data:`READ_COLUMNS` left out) with the row images as
    their values in column order instead of by column name (a live read has the server's
    column names where a file without them has ``@N``)."""
    maps = ("before", "after", "pk", "pk_columns")
    cols = [c for c in df.columns if c not in READ_COLUMNS and c not in maps]
    out = []
    for r in df.select(*cols).collect():
        out.append(tuple(
            json.dumps(None if r[c] is None else list(json.loads(r[c]).values()))
            if c in ("before_json", "after_json") else r[c] for c in cols))
    return sorted(out, key=lambda t: json.dumps(t, default=str))


def test_mysql_tagged_gtid_sets(spark: Any, tmp_path: Path) -> None:
    from binlogscope.export.spark import register

    register(spark)
    path = _fixture("blackbeam__rust_mysql_common/test-data/binlogs/"
                    "binlog_transaction_with_GTID_TAG.000001")
    mm = _serve([path], version="9.6.0")
    try:
        assert _initial(mm, f"gtid:{UUID96}:1-13:mytag:1-2", tmp_path) == {
            "file": "binlog.000004", "pos": 245, "gtid": f"{UUID96}:1-13:mytag:1-2"}
        q = _stream(spark, mm, f"gtid:{UUID96}:1-13:mytag:1-2", tmp_path)
        end = _offset(q.lastProgress["sources"][0]["endOffset"])
        assert end == {"file": "binlog.000004", "pos": 585, "gtid": f"{UUID96}:1-13:mytag:1-3"}
        sink = spark.read.parquet(str(tmp_path / "sink"))
        assert [(r.gtid, r.operation, r.offset) for r in sink.collect()] == [
            (f"{UUID96}:mytag:3", "INSERT", 461)]
        want = spark.read.format("binlog").option("table", "rows").load(str(path))
        # (the file's name is not the one the server gives it: binlog.000004)
        assert row_tuples(sink.drop("binlog_file")) == row_tuples(want.drop("binlog_file"))
        # again from the checkpoint: nothing new, no batch, the sink unchanged
        q = _stream(spark, mm, "earliest", tmp_path)
        assert not [p for p in q.recentProgress if int(p["numInputRows"])]
        assert spark.read.parquet(str(tmp_path / "sink")).count() == 1
    finally:
        mm.stop()
