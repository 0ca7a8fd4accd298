"""``binlogscope analyze`` on Spark (``local[2]``, for real): reports on a small hand-built
stream equal hand-computed figures; a real fixture export reads back with the documented schema;
``--sql`` runs over the views."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from binlogscope.export.arrow import SCHEMA_VERSION, read_table
from binlogscope.export.writer import DatasetWriter

pytestmark = pytest.mark.spark

FIX = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
CRC32 = FIX / "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.checksum-crc32"

S0 = 1_700_000_000  # 2023-11-14 22:13:20 UTC
US = 1_000_000


# (the Spark session is the test run's: tests/export/conftest.py; stopping one here ended it for
# every module after this one)


def _ev(offset: int, etype: str, size: int, ts: int, **kw: Any) -> dict[str, Any]:
    row = {"schema_version": SCHEMA_VERSION, "source_kind": "file", "source": "s",
           "binlog_file": "f", "offset": offset, "event_size": size, "timestamp": ts * US,
           "event_type": etype, "server_id": 1}
    row.update(kw)
    return row


def _known_stream(root: Path) -> None:
    """Two DML transactions, one DDL, a rotate/stop pair seen live, heartbeats, semi-sync."""
    w = DatasetWriter(root)
    t1 = {"trx_offset": 100, "xid": 11, "gtid": "u:1"}
    t2 = {"trx_offset": 426, "xid": 12, "gtid": "u:2"}
    t3 = {"trx_offset": 962, "gtid": "u:3"}
    events = [
        (None, _ev(4, "FORMAT_DESCRIPTION_EVENT", 120, 0)),
        ("shop", _ev(100, "GTID_LOG_EVENT", 65, S0, **t1)),
        ("shop", _ev(165, "QUERY_EVENT", 80, S0, query="BEGIN", **t1)),
        ("shop", _ev(245, "TABLE_MAP_EVENT", 50, S0, table="orders", **t1)),
        ("shop", _ev(295, "WRITE_ROWS_EVENT", 100, S0, table="orders", rows=2, **t1)),
        (None, _ev(395, "XID_EVENT", 31, S0, **t1)),
        ("shop", _ev(426, "GTID_LOG_EVENT", 65, S0 + 1, **t2)),
        ("shop", _ev(491, "QUERY_EVENT", 80, S0 + 1, query="BEGIN", **t2)),
        ("shop", _ev(571, "TABLE_MAP_EVENT", 50, S0 + 1, table="orders", **t2)),
        ("shop", _ev(621, "UPDATE_ROWS_EVENT", 200, S0 + 1, table="orders", rows=4, **t2)),
        ("shop", _ev(821, "TABLE_MAP_EVENT", 50, S0 + 1, table="items", **t2)),
        ("shop", _ev(871, "DELETE_ROWS_EVENT", 60, S0 + 1, table="items", rows=1, **t2)),
        (None, _ev(931, "XID_EVENT", 31, S0 + 2, **t2)),
        ("shop", _ev(962, "GTID_LOG_EVENT", 65, S0 + 2, **t3)),
        ("shop", _ev(1027, "QUERY_EVENT", 120, S0 + 2, query="/* x */ create table t2 (a int)",
                     **t3)),
        (None, _ev(1147, "ROTATE_EVENT", 44, S0 + 3, source_kind="live",
                   capture_time=S0 * US + 3_250_000)),
        (None, _ev(1191, "STOP_EVENT", 23, S0 + 3, source_kind="live",
                   capture_time=(S0 + 4) * US)),
    ]
    for i, cap in enumerate((S0 + 10, S0 + 11.5, S0 + 14)):
        events.append((None, _ev(2000 + i, "HEARTBEAT_LOG_EVENT", 39, 0, source_kind="live",
                                 session_id="s1", capture_time=int(cap * US))))
    for schema, e in events:
        w.add("events", ("1970-01-01" if e["timestamp"] == 0 else "2023-11-14", schema or ""), e)
    rows = [("orders", "INSERT", 295, 2, t1), ("orders", "UPDATE", 621, 4, t2),
            ("items", "DELETE", 871, 1, t2)]
    for table, op, off, n, t in rows:
        for i in range(n):
            w.add("rows", ("2023-11-14", "shop"), {
                "schema_version": SCHEMA_VERSION, "source_kind": "file", "source": "s",
                "binlog_file": "f", "offset": off, "row_index": i, "table": table,
                "operation": op, "after": [("id", str(i))], "xid": t.get("xid"),
                "gtid": t["gtid"], "trx_offset": t["trx_offset"]})
    p0 = (S0 + 100) * US
    for q, a, pos in ((p0, p0 + 2_000, 395), (p0 + US, p0 + US + 5_000, 931)):
        for when, direction, kind, ack in ((q, "server", "binlog_event", True),
                                           (a, "client", "semi_sync_ack", False)):
            w.add("packets", ("2023-11-14",), {
                "schema_version": SCHEMA_VERSION, "source_kind": "live", "source": "h:3306",
                "session_id": "s1", "direction": direction, "time": when, "seq": 1,
                "payload_length": 10, "semi_sync": True, "ack_request": ack, "kind": kind,
                "binlog_file": "f", "log_pos": pos})
    w.checkpoint()


@pytest.fixture(scope="module")
def known(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("known")
    _known_stream(root)
    return root


@pytest.fixture(scope="module")
def reports(spark: Any, known: Path) -> dict[str, Any]:
    from binlogscope.export.spark.analyze import REPORT_COLUMNS, register_tables, run_reports

    frames = register_tables(spark, known, reports_only=True)  # as analyze runs the reports
    for name in ("packets", "events", "rows"):
        assert tuple(frames[name].columns) == REPORT_COLUMNS[name]
    return {r.name: r for r in run_reports(spark)}


def test_changes_per_table(reports: dict[str, Any]) -> None:
    assert reports["changes_per_table"].rows == [
        ("shop", "orders", "UPDATE", 4), ("shop", "orders", "INSERT", 2),
        ("shop", "items", "DELETE", 1)]


def test_transaction_sizes(reports: dict[str, Any]) -> None:
    # T1: 5 events 2 rows 326 bytes; T2: 7 events 5 rows 536 bytes; DDL: 2 events 0 rows 185
    assert reports["transaction_sizes"].rows == [
        ("0", 1, 0, 185, 185, 185), ("2-10", 2, 7, 862, 326, 536)]
    summary = {r[0]: r[1:] for r in reports["transaction_summary"].rows}
    # exact percentiles with linear interpolation over [0, 2, 5] and [185, 326, 536]
    n, lo, p50, p90, p99, hi, mean = summary["rows"]
    assert (n, lo, p50, hi) == (3, 0, 2.0, 5)
    assert p90 == pytest.approx(4.4) and p99 == pytest.approx(4.94)
    assert mean == pytest.approx(7 / 3)
    n, lo, p50, p90, p99, hi, mean = summary["bytes"]
    assert (n, lo, p50, hi) == (3, 185, 326.0, 536)
    assert p90 == pytest.approx(494.0) and p99 == pytest.approx(531.8)
    assert mean == pytest.approx(349.0)


def test_largest_transactions(reports: dict[str, Any]) -> None:
    rep = reports["largest_transactions"]
    got = [(r["gtid"], r["xid"], r["rows"], r["bytes"], r["events"]) for r in rep.as_dicts()]
    assert got == [("u:2", 12, 5, 536, 7), ("u:1", 11, 2, 326, 5), ("u:3", None, 0, 185, 2)]
    commit = rep.as_dicts()[0]["commit_timestamp"]
    assert int(commit.timestamp()) == S0 + 2  # the XID's time


def test_events_per_second(reports: dict[str, Any]) -> None:
    got = [(int(r[0].timestamp()) - S0, r[1], r[2], r[3], r[4], r[5]) for r in
           reports["events_per_second"].rows]
    # the file's events and the live rotate/stop (no session), then session s1's heartbeats
    assert got == [(0, "s", None, 5, 2, 326), (1, "s", None, 6, 5, 505),
                   (2, "s", None, 3, 0, 216), (3, "s", None, 1, 0, 44),
                   (4, "s", None, 1, 0, 23), (10, "s", "s1", 1, 0, 39),
                   (11, "s", "s1", 1, 0, 39), (14, "s", "s1", 1, 0, 39)]


def test_heartbeat_gaps(reports: dict[str, Any]) -> None:
    assert [r[3] for r in reports["heartbeat_gaps"].rows] == [2.5, 1.5]


def test_semi_sync_ack_latency(reports: dict[str, Any]) -> None:
    rep = reports["semi_sync_ack_latency"]
    assert rep.note is None
    assert rep.rows == [("h:3306", "s1", 2, 2.0, 3.5, pytest.approx(4.7), pytest.approx(4.97),
                         5.0, 3.5)]


def test_ack_latency_of_a_real_semi_sync_capture(spark: Any, tmp_path: Path) -> None:
    """The exporter's own packets (ACK rows carry the acknowledged position) feed the report:
    every ACK of a real MariaDB semi-sync capture, latencies as computed from the packets."""
    from binlogscope.export.spark.analyze import register_tables
    from binlogscope.export.spark.reports import report_ack_latency

    cap = Path(__file__).resolve().parents[2] / "captures" / "pcap-semisync.pcap"
    out = tmp_path / "ss"
    assert main(["export", "--pcap", str(cap), "--out", str(out)], out=io.StringIO(),
                err=io.StringIO()) == 0
    packets = read_table(out, "packets").to_pylist()
    sent = {(p["binlog_file"], p["log_pos"]): p["time"] for p in packets if p["ack_request"]}
    acks = [p for p in packets if p["kind"] == "semi_sync_ack"]
    assert len(acks) == len(sent) > 3
    expected = sorted((a["time"] - sent[(a["binlog_file"], a["log_pos"])]).total_seconds() * 1e3
                      for a in acks)
    register_tables(spark, out, reports_only=True)
    rep = report_ack_latency(spark, False)
    assert rep.note is None
    (source, _session, *figures), = rep.rows  # one session in this capture
    assert source == str(cap)
    n, lo, _p50, _p90, _p99, hi, mean = (float(v) for v in figures)
    assert n == len(acks)
    assert (lo, hi) == (pytest.approx(expected[0]), pytest.approx(expected[-1]))
    assert mean == pytest.approx(sum(expected) / len(expected))


def test_replication_delay(reports: dict[str, Any]) -> None:
    (source, session, n, lo, p50, _p90, _p99, hi, mean), = reports["replication_delay"].rows
    assert (source, session) == ("s", None)
    assert (n, lo, p50, hi, mean) == (2, 0.25, 0.625, 1.0, 0.625)


def test_ddl_timeline(reports: dict[str, Any]) -> None:
    (row,) = reports["ddl_timeline"].as_dicts()
    assert (row["schema"], row["offset"], row["statement"], row["gtid"]) == (
        "shop", 1027, "CREATE TABLE", "u:3")
    assert (row["seen_in"], row["sightings"]) == (["s at f:1027"], 1)


def test_file_source_reports_say_not_applicable(spark: Any, tmp_path: Path) -> None:
    from binlogscope.export.spark.analyze import register_tables, run_reports

    assert main(["export", str(CRC32), "--out", str(tmp_path / "x")], out=io.StringIO(),
                err=io.StringIO()) == 0
    register_tables(spark, tmp_path / "x", reports_only=True)
    reps = {r.name: r for r in run_reports(spark)}
    for name in ("heartbeat_gaps", "semi_sync_ack_latency", "replication_delay"):
        assert reps[name].rows == []
        note = reps[name].note
        assert note is not None and note.startswith("not applicable")
    assert sum(r[3] for r in reps["changes_per_table"].rows) == 63


def test_spark_reads_the_export_with_the_documented_schema(spark: Any, tmp_path: Path) -> None:
    from binlogscope.export.spark.analyze import register_tables, spark_schema

    out = tmp_path / "x"
    assert main(["export", str(CRC32), "--out", str(out)], out=io.StringIO(),
                err=io.StringIO()) == 0
    frames = register_tables(spark, out)
    for name in ("packets", "events", "rows"):
        assert frames[name].schema == spark_schema(name)
    got = Counter((r[0], r[1], r[2]) for r in spark.sql(
        "SELECT schema, `table`, operation FROM rows").collect())
    arrow_rows = read_table(out, "rows")
    assert got == Counter(zip(arrow_rows["schema"].to_pylist(), arrow_rows["table"].to_pylist(),
                              arrow_rows["operation"].to_pylist(), strict=True))
    assert sum(got.values()) == 63
    assert spark.table("events").count() == 303
    first = spark.sql("SELECT after['@1'] AS a, after_json FROM rows WHERE offset = 384").collect()
    assert first[0]["a"] == str(json.loads(first[0]["after_json"])["@1"])


def test_cli_sql_reports_and_plots(spark: Any, known: Path, tmp_path: Path) -> None:
    out = io.StringIO()
    code = main(["analyze", str(known), "--master", "local[2]", "--sql",
                 "SELECT operation, count(*) AS n FROM rows GROUP BY operation ORDER BY n DESC",
                 "--reports", str(tmp_path / "sql")], out=out, err=io.StringIO())
    assert code == 0
    lines = out.getvalue().splitlines()
    assert lines[1].split() == ["operation", "n"]
    assert [ln.split() for ln in lines[3:6]] == [["UPDATE", "4"], ["INSERT", "2"],
                                                 ["DELETE", "1"]]
    assert (tmp_path / "sql" / "sql.csv").read_text().splitlines()[1:] == [
        '"UPDATE",4', '"INSERT",2', '"DELETE",1']

    err = io.StringIO()
    assert main(["analyze", str(known), "--sql", "SELECT nope FROM rows"], out=io.StringIO(),
                err=err) == 1
    assert err.getvalue().startswith("binlogscope: analyze: --sql:")

    out = io.StringIO()
    assert main(["analyze", str(known), "--plots", str(tmp_path / "png"), "--reports",
                 str(tmp_path / "rep")], out=out, err=io.StringIO()) == 0
    assert "== Row changes per schema.table and operation" in out.getvalue()
    pngs = sorted(p.name for p in (tmp_path / "png").iterdir())
    assert {"changes_per_table.png", "events_per_second.png", "transaction_sizes.png",
            "ddl_timeline.png", "heartbeat_gaps.png"} <= set(pngs)
    for p in (tmp_path / "png").iterdir():
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import pyarrow.parquet as pq

    t = pq.read_table(tmp_path / "rep" / "changes_per_table.parquet")
    assert t.column("changes").to_pylist() == [4, 2, 1]
