"""``spark.readStream.format("binlog")`` against the real MariaDB (real Spark ``local[2]``):
a stream's sink equals the server's binlog (every row and column a file read gives, minus how
and when it was read), across binlog files, from FILE:POS and from a GTID set; a second run
from the checkpoint reads only what came after; the options refuse a password."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from binlogscope.export.spark.stream_options import StreamOptionError, parse_stream_options
from tests.export.spark.stream_support import binlog_rows, master_status, row_tuples
from tests.watch_support import run_sql


def test_the_password_is_never_an_option() -> None:
    with pytest.raises(StreamOptionError) as e:
        parse_stream_options({"url": "mysql://repl:S3cr3t-pw@db1:3306"})
    assert "S3cr3t-pw" not in str(e.value) and "option file" in str(e.value)
    for key in ("password", "PASSWORD", "mysqlPassword"):
        with pytest.raises(StreamOptionError, match="not an option"):
            parse_stream_options({key: "x"})
    o = parse_stream_options({"url": "mariadb://repl@db1:3307", "start": "gtid:0-1-5",
                              "include": '["shop\\\\..*", "crm\\\\.a"]', "sslMode": "required"})
    assert (o.user, o.host, o.port, o.start, o.ssl_mode) == ("repl", "db1", 3307, "gtid:0-1-5",
                                                            "REQUIRED")
    assert o.include == ("shop\\..*", "crm\\.a")
    with pytest.raises(StreamOptionError, match="start"):
        parse_stream_options({"start": "somewhere"})
    with pytest.raises(StreamOptionError, match="rows or events"):
        parse_stream_options({"table": "packets"})


def _stream(spark: Any, db: Any, start: str, out: Path, **options: str) -> Any:
    """A query from ``start`` into ``out/sink`` with the checkpoint ``out/checkpoint``, run
    until the server's current end (``availableNow``); the password from an option file (the
    session's JVM and its Python workers started before any MYSQL_PWD of a test)."""
    cnf = out.parent / f"{out.name}.cnf"
    cnf.write_text(f"[client]\npassword={db.repl_password}\n")
    r = (spark.readStream.format("binlog")
         .option("url", f"mysql://{db.repl_user}@{db.host}:{db.port}")
         .option("defaultsFile", str(cnf))
         .option("sslMode", "DISABLED").option("start", start))
    for k, v in options.items():
        r = r.option(k, v)
    q = (r.load().writeStream.format("parquet")
         .option("checkpointLocation", str(out / "checkpoint"))
         .trigger(availableNow=True).start(str(out / "sink")))
    q.awaitTermination(600)
    assert q.exception() is None, q.exception()
    return q


def _offset(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else dict(value)


@pytest.mark.spark
@pytest.mark.mysql
@pytest.mark.slow
def test_the_sink_equals_the_binlog_across_files_and_restarts(
        spark: Any, mariadb: Any, tmp_path: Path) -> None:
    from binlogscope.export.spark import register

    register(spark)
    db = mariadb
    run_sql(db, "DROP TABLE IF EXISTS st1",
            "CREATE TABLE st1 (id INT PRIMARY KEY, v VARCHAR(40), n DECIMAL(10,2))")
    start = master_status(db)
    gtid0 = run_sql(db, "SELECT @@global.gtid_binlog_pos")[0][0]
    for i in range(0, 300, 30):
        run_sql(db, "INSERT INTO st1 VALUES " + ",".join(
            f"({j}, 'v{j}', {j}.25)" for j in range(i, i + 30)))
    run_sql(db, "FLUSH BINARY LOGS")  # the next batch spans two files: two tasks
    run_sql(db, "UPDATE st1 SET v = CONCAT(v, '-u') WHERE id % 3 = 0")
    q = _stream(spark, db, f"{start[0]}:{start[1]}", tmp_path)
    first = _offset(q.lastProgress["sources"][0]["endOffset"])
    assert (first["file"], first["pos"]) == master_status(db)
    assert first["gtid"] == run_sql(db, "SELECT @@global.gtid_binlog_pos")[0][0]
    # more, then the same query again from its checkpoint: only what is new
    run_sql(db, "DELETE FROM st1 WHERE id >= 250", "FLUSH BINARY LOGS",
            "INSERT INTO st1 VALUES (1000, 'late', 0)")
    q = _stream(spark, db, "earliest", tmp_path)  # (start is the first run's: checkpointed)
    assert _offset(q.recentProgress[0]["sources"][0]["startOffset"]) == first
    sink = spark.read.parquet(str(tmp_path / "sink")).where("`table` = 'st1'")
    files = db.binlog_files()
    want = row_tuples(binlog_rows(spark, files, start, "st1"))
    got = row_tuples(sink)
    assert len(want) == 300 + 100 + 50 + 1
    assert got == want
    # from a GTID set: the rows after it (the first INSERT's transaction is in the set)
    gtid1 = f"{gtid0.rsplit('-', 1)[0]}-{int(gtid0.rsplit('-', 1)[1]) + 1}"
    q = _stream(spark, db, f"gtid:{gtid1}", tmp_path / "g")
    g = spark.read.parquet(str(tmp_path / "g" / "sink")).where("`table` = 'st1'")
    rest = binlog_rows(spark, files, start, "st1").where(f"gtid IS NULL OR gtid != '{gtid1}'")
    assert row_tuples(g) == row_tuples(rest)
    assert len(row_tuples(rest)) == len(want) - 30


def test_a_micro_batch_is_one_slice_per_binlog_file() -> None:
    from binlogscope.export.spark.stream import make_offset, slices

    logs = [("b.000001", 900), ("b.000002", 500), ("b.000003", 300), ("b.000004", 120)]
    got = slices(make_offset("b.000001", 400, "0-1-5"), make_offset("b.000003", 200), logs)
    assert [(s.index, s.file, s.pos, s.end_file, s.end_pos, s.gtid) for s in got] == [
        (0, "b.000001", 400, "b.000001", 900, "0-1-5"), (1, "b.000002", 4, "b.000002", 500, None),
        (2, "b.000003", 4, "b.000003", 200, None)]
    # a start at a file's end: nothing to read there
    got = slices(make_offset("b.000001", 900), make_offset("b.000002", 300), logs)
    assert [(s.file, s.pos, s.end_pos) for s in got] == [("b.000002", 4, 300)]
    # nothing new, or the files unknown (one slice: the same rows, one task)
    assert slices(make_offset("b.000002", 300), make_offset("b.000002", 300), logs) == []
    assert slices(make_offset("b.000003", 10), make_offset("b.000002", 300), logs) == []
    one = slices(make_offset("b.000001", 400), make_offset("b.000003", 200), None)
    assert [(s.file, s.pos, s.end_file, s.end_pos) for s in one] == [
        ("b.000001", 400, "b.000003", 200)]


@pytest.mark.mysql
def test_a_slice_ends_at_its_file_end_when_the_fetcher_is_ahead(mariadb: Any) -> None:
    """A slice's end is compared with the file of the event itself, not the live replica's
    fetch position: the fetcher reads on (here: past the ROTATE into the next file) while the
    consumer is still in the slice's file. (The comparison used the fetcher's file: the slice
    ended at its first event and its rows were lost.)"""
    import time as _time

    from binlogscope.export.records import EventRecord, InputDone, ResumePoint
    from binlogscope.export.sources import LiveRecordSource
    from binlogscope.export.spark.stream_options import StreamOptions

    db = mariadb
    run_sql(db, "DROP TABLE IF EXISTS st2", "CREATE TABLE st2 (id INT PRIMARY KEY)")
    name, pos = master_status(db)
    for i in range(0, 100, 10):
        run_sql(db, "INSERT INTO st2 VALUES " + ",".join(f"({j})" for j in range(i, i + 10)))
    run_sql(db, "FLUSH BINARY LOGS", "INSERT INTO st2 VALUES (1000)")
    size = next(int(r[1]) for r in run_sql(db, "SHOW BINARY LOGS") if r[0] == name)
    opts = StreamOptions(host=db.host, port=db.port, user=db.repl_user, ssl_mode="DISABLED")
    settings = opts.live_settings()
    settings.conn.password = db.repl_password
    src = LiveRecordSource(settings, until_position=f"{name}:{size}")
    records = src.records(ResumePoint(0, None, {"log_file": name, "log_pos": pos, "skip": 0,
                                                "gtid_set": None}))
    first = next(records)
    _time.sleep(2)  # the fetcher reads everything there is, into the next file
    rest = [first, *records]
    events = [r.event for r in rest if isinstance(r, EventRecord) and r.event.file_pos]
    assert isinstance(rest[-1], InputDone) and rest[-1].error is None
    assert sum(len(getattr(e.body, "rows", None) or []) for e in events) == 100
    assert {e.binlog_file for e in events} == {name}
    assert events[-1].file_pos is not None and events[-1].header is not None
    assert events[-1].file_pos + events[-1].header.event_size == size
