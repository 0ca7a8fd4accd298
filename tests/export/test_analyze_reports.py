"""``binlogscope analyze`` as issue 31 found it wanting, on Spark (``local[2]``) over a
hand-built export with hand-computed answers: two replicas' sessions in one capture (the same
transactions twice: never pooled), a one-row transaction of 17 MB (ranked by bytes), a DDL
statement seen in a binlog file and in both sessions (one row naming where), a long silence
(listed; the events-per-second chart drops to zero and breaks its line there), and the scales
of the charts (a log scale when counts spread widely)."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import pytest

from binlogscope.export.arrow import SCHEMA_VERSION
from binlogscope.export.report_output import rate_series, scale_for
from binlogscope.export.writer import DatasetWriter

S0 = 1_700_000_000
US = 1_000_000
BIG = 17 * 1024 * 1024


def _ev(source: str, session: str | None, offset: int, etype: str, size: int, ts: int,
        **kw: Any) -> dict[str, Any]:
    # the file source is an archived copy under another name: the same transactions (GTIDs)
    name = "mysql-bin.000001" if session else "archive-copy.000001"
    row = {"schema_version": SCHEMA_VERSION, "source_kind": "pcap" if session else "file",
           "source": source, "session_id": session, "binlog_file": name,
           "offset": offset, "event_size": size, "timestamp": ts * US, "event_type": etype,
           "server_id": 1}
    row.update(kw)
    return row


def _stream(source: str, session: str | None, lag: float) -> list[dict[str, Any]]:
    """A DDL, a 1000-row transaction of small rows, then (after 300 s of nothing) a one-row
    transaction of 17 MB; seen ``lag`` seconds after the event timestamps (sessions only)."""
    def at(ts: int) -> dict[str, Any]:
        return {"capture_time": int((ts + lag) * US)} if session else {}

    t1 = {"trx_offset": 400, "xid": 1, "gtid": "0-1-2"}
    t2 = {"trx_offset": 70_000, "xid": 2, "gtid": "0-1-3"}
    return [
        _ev(source, session, 256, "QUERY_EVENT", 120, S0, query="CREATE TABLE t (a INT)",
            trx_offset=256, gtid="0-1-1", **at(S0)),
        _ev(source, session, 400, "GTID_EVENT", 40, S0 + 1, **t1, **at(S0 + 1)),
        _ev(source, session, 440, "WRITE_ROWS_EVENT", 60_000, S0 + 1, rows=1000, table="t",
            **t1, **at(S0 + 1)),
        _ev(source, session, 60_440, "XID_EVENT", 31, S0 + 1, **t1, **at(S0 + 1)),
        _ev(source, session, 70_000, "GTID_EVENT", 40, S0 + 301, **t2, **at(S0 + 301)),
        _ev(source, session, 70_040, "WRITE_ROWS_EVENT", BIG, S0 + 301, rows=1, table="blobs",
            **t2, **at(S0 + 301)),
        _ev(source, session, 70_040 + BIG, "XID_EVENT", 31, S0 + 301, **t2, **at(S0 + 301)),
    ]


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sessions")
    w = DatasetWriter(root)
    for source, session, lag in (("archive-copy.000001", None, 0.0), ("two.pcap", "1", 0.5),
                                 ("two.pcap", "2", 2.0)):
        for e in _stream(source, session, lag):
            w.add("events", ("2023-11-14", "shop"), e)
    # semi-sync: session 1 ACKs in 2 ms, session 2 in 40 ms
    for session, ms in (("1", 2), ("2", 40)):
        q = (S0 + 1) * US
        for when, direction, kind, ack in ((q, "server", "binlog_event", True),
                                           (q + ms * 1000, "client", "semi_sync_ack", False)):
            w.add("packets", ("2023-11-14",), {
                "schema_version": SCHEMA_VERSION, "source_kind": "pcap", "source": "two.pcap",
                "session_id": session, "direction": direction, "time": when, "seq": 1,
                "payload_length": 10, "semi_sync": True, "ack_request": ack, "kind": kind,
                "binlog_file": "mysql-bin.000001", "log_pos": 60_471})
    w.checkpoint()
    return root


@pytest.fixture(scope="module")
def reports(spark: Any, export: Path) -> dict[str, Any]:
    from binlogscope.export.spark.analyze import register_tables, run_reports

    register_tables(spark, export, reports_only=True)
    return {r.name: r for r in run_reports(spark)}


@pytest.mark.spark
def test_sessions_are_not_pooled(spark: Any, reports: dict[str, Any]) -> None:
    """The same transaction seen by two sessions is two rows of 1000 rows, not one of 2000."""
    rows = spark.sql("SELECT source, session_id, rows, events FROM transactions "
                     "WHERE trx_offset = 400 ORDER BY source, session_id").collect()
    assert [tuple(r) for r in rows] == [("archive-copy.000001", None, 1000, 3),
                                        ("two.pcap", "1", 1000, 3), ("two.pcap", "2", 1000, 3)]
    top = reports["largest_transactions"].as_dicts()
    assert [(r["source"], r["session_id"], r["rows"]) for r in top[:3]] == [
        ("archive-copy.000001", None, 1000), ("two.pcap", "1", 1000), ("two.pcap", "2", 1000)]
    ack = reports["semi_sync_ack_latency"]
    assert [(r[0], r[1], r[2], r[3], r[7]) for r in ack.rows] == [
        ("two.pcap", "1", 1, 2.0, 2.0), ("two.pcap", "2", 1, 40.0, 40.0)]
    delay = {(r[0], r[1]): r[2:] for r in reports["replication_delay"].rows}
    assert set(delay) == {("two.pcap", "1"), ("two.pcap", "2")}
    assert delay[("two.pcap", "1")][0] == 7 and delay[("two.pcap", "1")][1] == 0.5
    assert delay[("two.pcap", "2")][1] == 2.0


@pytest.mark.spark
def test_events_per_second_per_session(reports: dict[str, Any]) -> None:
    """Second S0+1 holds 3 events in each of the three copies: three rows of 3, not one of 9
    (session 2 sees them 2 s late, so its row is at S0+3)."""
    rows = [(int(r[0].timestamp()) - S0, r[1], r[2], r[3]) for r in
            reports["events_per_second"].rows]
    assert (1, "archive-copy.000001", None, 3) in rows
    assert (1, "two.pcap", "1", 3) in rows  # +0.5 s: still second S0+1
    assert (3, "two.pcap", "2", 3) in rows
    assert all(n <= 3 for *_, n in rows)


@pytest.mark.spark
def test_the_17_mb_single_row_transaction_tops_the_ranking_by_bytes(
        reports: dict[str, Any]) -> None:
    by_rows = reports["largest_transactions"].as_dicts()
    assert by_rows[0]["rows"] == 1000  # by rows the big one comes last
    by_bytes = reports["largest_transactions_by_bytes"].as_dicts()
    assert [(r["gtid"], r["rows"], r["bytes"]) for r in by_bytes[:3]] == [
        ("0-1-3", 1, 40 + BIG + 31)] * 3
    assert {(r["source"], r["session_id"]) for r in by_bytes[:3]} == {
        ("archive-copy.000001", None), ("two.pcap", "1"), ("two.pcap", "2")}


@pytest.mark.spark
def test_a_ddl_seen_three_times_is_one_row_naming_where(reports: dict[str, Any]) -> None:
    """Known by its GTID: the archived copy (another file name) and the two sessions hold
    the same statement."""
    (row,) = reports["ddl_timeline"].as_dicts()
    assert row["statement"] == "CREATE TABLE" and row["offset"] == 256 and row["gtid"] == "0-1-1"
    assert row["seen_in"] == ["archive-copy.000001 at archive-copy.000001:256",
                              "two.pcap session 1 at mysql-bin.000001:256",
                              "two.pcap session 2 at mysql-bin.000001:256"]
    assert row["sightings"] == 3 and row["binlog_file"] == "archive-copy.000001"


@pytest.mark.spark
def test_silences_are_listed_per_source_and_session(reports: dict[str, Any]) -> None:
    rep = reports["silences"]
    got = [(r["source"], r["session_id"], r["seconds"]) for r in rep.as_dicts()]
    assert sorted(got, key=str) == sorted([("archive-copy.000001", None, 300.0),
                                           ("two.pcap", "1", 300.0),
                                           ("two.pcap", "2", 300.0)], key=str)


@pytest.mark.spark
def test_plots_of_the_reports(reports: dict[str, Any], tmp_path: Path) -> None:
    """What analyze prints and writes for these reports (the reports of the fixture: a second
    Spark pass through the CLI is test_spark's test_cli_sql_reports_and_plots)."""
    from binlogscope.export.report_output import format_report, write_plots, write_report

    reps = list(reports.values())
    text = "\n".join(line for r in reps for line in format_report(r))
    assert "== Largest transactions (top 20 by bytes)" in text
    assert "== Silences: stretches of more than 10 s without an event" in text
    pngs = {p.name for p in write_plots(reps, tmp_path / "png")}
    assert {"largest_transactions.png", "largest_transactions_by_bytes.png",
            "events_per_second.png"} <= pngs
    assert "changes_per_table.png" not in pngs  # this export has no rows table: no chart
    for p in (tmp_path / "png").iterdir():
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    written = write_report(reports["largest_transactions_by_bytes"], tmp_path / "rep")
    assert (tmp_path / "rep" / "largest_transactions_by_bytes.csv") in written


def test_the_rate_chart_draws_a_line_per_session() -> None:
    from binlogscope.export import report_output

    t0 = dt.datetime(2023, 11, 14, 22, 13, 20)
    rows = [(t0, "/caps/two.pcap", "two.pcap#1", 5), (t0, "/caps/two.pcap", "two.pcap#2", 7),
            (t0, "/binlogs/mysql-bin.000001", None, 5)]
    series = dict(report_output.session_series(rows))
    assert series == {"two.pcap#2": [(t0, 7.0)], "two.pcap#1": [(t0, 5.0)],
                      "mysql-bin.000001": [(t0, 5.0)]}
    many = [(t0, "c.pcap", f"c.pcap#{i}", i + 1) for i in range(12)]
    got = report_output.session_series(many)
    assert len(got) == report_output.MAX_SERIES + 1
    assert got[0][0] == "c.pcap#11"  # the busiest first
    assert got[-1] == ("4 other sessions", [(t0, 1.0 + 2 + 3 + 4)])


def test_counts_spread_widely_are_drawn_on_a_log_scale() -> None:
    """19 tables, one with 400,000 changes: on a linear axis the other 18 are invisible."""
    assert scale_for([400_000.0] + [300.0] * 18) == "symlog"
    assert scale_for([10.0, 12.0, 30.0]) == "linear"
    assert scale_for([0.0, 0.0]) == "linear"
    assert scale_for([0.0, 1.0, 500.0]) == "symlog"


def test_the_rate_line_drops_to_zero_and_breaks_at_a_silence() -> None:
    t0 = dt.datetime(2023, 11, 14, 22, 13, 20)
    s = dt.timedelta(seconds=1)
    rows = [(t0, 5), (t0 + s, 6), (t0 + 4 * s, 2), (t0 + 304 * s, 7)]
    xs, ys, silences = rate_series(rows, 10)
    pts = list(zip(xs, ys, strict=True))
    assert pts[:2] == [(t0, 5.0), (t0 + s, 6.0)]
    # a 3 s gap: zero after the last busy second and before the next one, no break
    assert pts[2:5] == [(t0 + 2 * s, 0.0), (t0 + 3 * s, 0.0), (t0 + 4 * s, 2.0)]
    # a 300 s silence: zero, a break (NaN) in the middle, zero, then the next point
    assert pts[5] == (t0 + 5 * s, 0.0)
    assert pts[6][0] == t0 + 154 * s and math.isnan(pts[6][1])
    assert pts[7:] == [(t0 + 303 * s, 0.0), (t0 + 304 * s, 7.0)]
    assert silences == [(t0 + 4 * s, t0 + 304 * s)]
    # consecutive seconds: the points as they are
    assert rate_series([(t0, 1), (t0 + s, 2)], 10) == ([t0, t0 + s], [1.0, 2.0], [])
