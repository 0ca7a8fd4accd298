"""The reports of ``binlogscope analyze``: Spark SQL over the registered views (``packets``,
``events``, ``rows``, ``transactions``, ``health``), each a :class:`Report` that
:mod:`binlogscope.export.report_output` shows. :mod:`binlogscope.export.spark.analyze` registers
the views and runs these."""

from __future__ import annotations

from typing import Any

from binlogscope.export.report_output import SILENCE_SECONDS, Report


def collect(name: str, title: str, df: Any, note: str | None = None) -> Report:
    rows = df.collect()
    return Report(name, title, list(df.columns), [tuple(r) for r in rows], note)


def _is_file_only(spark: Any) -> bool:
    kinds = {r[0] for r in spark.sql(
        "SELECT DISTINCT source_kind FROM events UNION SELECT DISTINCT source_kind FROM packets"
    ).collect()}
    return bool(kinds) and kinds <= {"file"}


def _distribution(spark: Any, view_sql: str, value: str) -> str:
    return f"""
SELECT count({value}) AS n, min({value}) AS min, percentile({value}, 0.5) AS p50,
       percentile({value}, 0.9) AS p90, percentile({value}, 0.99) AS p99,
       max({value}) AS max, avg({value}) AS mean
FROM ({view_sql})"""


def report_changes(spark: Any) -> Report:
    df = spark.sql("""
SELECT schema, `table`, operation, count(*) AS changes
FROM rows GROUP BY schema, `table`, operation
ORDER BY changes DESC, schema, `table`, operation""")
    return collect("changes_per_table", "Row changes per schema.table and operation", df)


_BUCKETS = [(0, 0, "0"), (1, 1, "1"), (2, 10, "2-10"), (11, 100, "11-100"),
            (101, 1000, "101-1000"), (1001, 10000, "1001-10000"),
            (10001, 100000, "10001-100000"), (100001, None, ">100000")]


def report_transaction_sizes(spark: Any) -> Report:
    cases = " ".join(
        f"WHEN rows >= {lo}" + (f" AND rows <= {hi}" if hi is not None else "")
        + f" THEN {i}" for i, (lo, hi, _) in enumerate(_BUCKETS))
    labels = ", ".join(f"{i}, '{label}'" for i, (_, _, label) in enumerate(_BUCKETS))
    df = spark.sql(f"""
SELECT element_at(map({labels}), b) AS rows_bucket, count(*) AS transactions,
       sum(rows) AS rows, sum(bytes) AS bytes,
       min(bytes) AS min_bytes, max(bytes) AS max_bytes
FROM (SELECT CASE {cases} END AS b, rows, bytes FROM transactions)
GROUP BY b ORDER BY b""")
    return collect("transaction_sizes", "Transaction sizes: distribution by rows", df)


def report_transaction_summary(spark: Any) -> Report:
    rows_sql = _distribution(spark, "SELECT rows AS v FROM transactions", "v")
    bytes_sql = _distribution(spark, "SELECT bytes AS v FROM transactions", "v")
    df = spark.sql(f"SELECT 'rows' AS metric, * FROM ({rows_sql}) "
                   f"UNION ALL SELECT 'bytes' AS metric, * FROM ({bytes_sql})")
    return collect("transaction_summary", "Transaction sizes: summary (rows, bytes)", df)


def report_events_per_second(spark: Any) -> Report:
    """Per source and session: a capture of two replicas, or a binlog beside a capture of its
    stream, holds the same events twice, and one pooled figure per second doubled them."""
    df = spark.sql("""
SELECT date_trunc('second', coalesce(capture_time, timestamp)) AS second, source, session_id,
       count(*) AS events, CAST(coalesce(sum(rows), 0) AS BIGINT) AS rows,
       sum(event_size) AS bytes
FROM events
WHERE coalesce(capture_time, timestamp) > TIMESTAMP '1970-01-01 00:00:00'
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""")
    return collect("events_per_second", "Events per second over time, per source and session "
                    "(capture time, else the event timestamp; artificial events with timestamp 0 "
                    "left out)", df)


def report_largest_transactions(spark: Any, limit: int = 20) -> Report:
    df = spark.sql(f"""
SELECT gtid, xid, binlog_file, trx_offset, rows, bytes, events, commit_timestamp, source,
       session_id
FROM transactions ORDER BY rows DESC, bytes DESC, source, session_id, binlog_file, trx_offset
LIMIT {int(limit)}""")
    return collect("largest_transactions", f"Largest transactions (top {limit} by rows)", df)


def report_largest_transactions_by_bytes(spark: Any, limit: int = 20) -> Report:
    """By bytes: a transaction of one row with a 17 MB BLOB stalls a replica (and a CDC
    pipeline) as much as a million small rows, and a ranking by rows never shows it."""
    df = spark.sql(f"""
SELECT gtid, xid, binlog_file, trx_offset, bytes, rows, events, commit_timestamp, source,
       session_id
FROM transactions ORDER BY bytes DESC, rows DESC, source, session_id, binlog_file, trx_offset
LIMIT {int(limit)}""")
    return collect("largest_transactions_by_bytes",
                    f"Largest transactions (top {limit} by bytes)", df)


def report_heartbeat_gaps(spark: Any, file_only: bool) -> Report:
    df = spark.sql("""
SELECT session_id, source, capture_time,
       (unix_micros(capture_time) - unix_micros(prev)) / 1e6 AS gap_seconds
FROM (SELECT session_id, source, capture_time,
             lag(capture_time) OVER (PARTITION BY source, session_id ORDER BY capture_time)
               AS prev
      FROM events WHERE event_type LIKE 'HEARTBEAT%' AND capture_time IS NOT NULL)
WHERE prev IS NOT NULL ORDER BY gap_seconds DESC, capture_time""")
    rep = collect("heartbeat_gaps", "Heartbeat gaps (largest first)", df)
    if not rep.rows:
        rep.note = ("not applicable: heartbeats exist only on a replication stream (pcap/live); "
                    "binlog files contain none" if file_only else
                    "no two heartbeats with a capture time in this export")
    return rep


def _per_session(values_sql: str) -> str:
    """The distribution of ``v`` per (source, session_id) of ``values_sql``: one row per TCP
    session, never several replicas' sessions pooled into one figure."""
    return f"""
SELECT source, session_id, count(v) AS n, min(v) AS min, percentile(v, 0.5) AS p50,
       percentile(v, 0.9) AS p90, percentile(v, 0.99) AS p99, max(v) AS max, avg(v) AS mean
FROM (SELECT source, session_id, CAST(v AS DOUBLE) AS v FROM ({values_sql}))
GROUP BY source, session_id ORDER BY source, session_id"""


def report_ack_latency(spark: Any, file_only: bool) -> Report:
    lat = """
SELECT q.source, q.session_id, (unix_micros(a.time) - unix_micros(q.time)) / 1000.0 AS v
FROM packets q JOIN packets a
  ON q.session_id = a.session_id AND q.log_pos = a.log_pos
     AND q.source <=> a.source
     AND coalesce(q.binlog_file, '') = coalesce(a.binlog_file, '')
WHERE q.ack_request AND q.direction = 'server'
  AND upper(a.kind) = 'SEMI_SYNC_ACK' AND a.direction = 'client' AND a.time >= q.time"""
    df = spark.sql(_per_session(lat))
    rep = collect("semi_sync_ack_latency",
                   "Semi-sync ACK latency in ms per session (ACK-requested event -> replica "
                   "ACK)", df)
    if not rep.rows or not any(r[2] for r in rep.rows):
        rep.rows = []
        n_packets = spark.table("packets").count()
        rep.note = ("not applicable: the export has no wire packets (binlog files carry none; "
                    "ACK latency needs a pcap or live capture of a semi-sync replica)"
                    if n_packets == 0 or file_only else
                    "no semi-sync ACK-requested events with a matching ACK in the packets")
    return rep


#: the ACK-requested event -> its ACK, per acknowledged event (what report_ack_latency reads)
_ACK_PAIRS = """
SELECT q.source, q.session_id, q.time AS t,
       (unix_micros(a.time) - unix_micros(q.time)) / 1000.0 AS ms
FROM packets q JOIN packets a
  ON q.session_id = a.session_id AND q.log_pos = a.log_pos
     AND q.source <=> a.source
     AND coalesce(q.binlog_file, '') = coalesce(a.binlog_file, '')
WHERE q.ack_request AND q.direction = 'server'
  AND upper(a.kind) = 'SEMI_SYNC_ACK' AND a.direction = 'client' AND a.time >= q.time"""


def report_ack_latency_over_time(spark: Any) -> Report:
    """The semi-sync ACK latency per second of capture time, per session (its mean, its
    largest and how many ACKs): what ``--plots`` draws over time (issue 29: the health of a
    session, from the wire)."""
    df = spark.sql(f"""
SELECT date_trunc('second', t) AS second, source, session_id, count(*) AS acks,
       avg(ms) AS mean_ms, max(ms) AS max_ms
FROM ({_ACK_PAIRS}) GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""")
    return collect("ack_latency_over_time", "Semi-sync ACK latency over time (ms, per second "
                    "of capture time and session)", df)


def report_lag_over_time(spark: Any) -> Report:
    """The position lag per second and session from the ``health`` table (the server's head -
    heartbeats, ``live --lag-every`` polls - against what was consumed): samples, mean and
    largest bytes behind, most files behind."""
    df = spark.sql("""
SELECT date_trunc('second', time) AS second, source, session_id, count(*) AS samples,
       avg(coalesce(bytes_behind, 0)) AS mean_bytes, max(coalesce(bytes_behind, 0)) AS max_bytes,
       max(files_behind) AS max_files
FROM health WHERE kind = 'lag' AND files_behind IS NOT NULL
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""")
    rep = collect("lag_over_time", "Position lag over time (bytes behind the server's head "
                   "in the same file, per second and session; files behind)", df)
    if not rep.rows:
        rep.note = "no lag samples (the export's health table: heartbeats, live --lag-every)"
    return rep


def report_delay_over_time(spark: Any) -> Report:
    """How far behind the stream ran, per second of capture time and session: capture time
    minus the event's header time (mean and largest) - the lag a replica or CDC consumer had."""
    df = spark.sql("""
SELECT date_trunc('second', capture_time) AS second, source, session_id, count(*) AS events,
       avg((unix_micros(capture_time) - unix_micros(timestamp)) / 1e6) AS mean_s,
       max((unix_micros(capture_time) - unix_micros(timestamp)) / 1e6) AS max_s
FROM events
WHERE capture_time IS NOT NULL AND timestamp > TIMESTAMP '1970-01-01 00:00:00'
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""")
    return collect("replication_delay_over_time", "Replication delay over time (s: capture "
                    "time - event timestamp, per second and session)", df)


def report_replication_delay(spark: Any, file_only: bool) -> Report:
    delay = """
SELECT source, session_id, (unix_micros(capture_time) - unix_micros(timestamp)) / 1e6 AS v
FROM events
WHERE capture_time IS NOT NULL AND timestamp > TIMESTAMP '1970-01-01 00:00:00'"""
    df = spark.sql(_per_session(delay))
    rep = collect("replication_delay",
                   "Replication delay in s per session (capture time - event timestamp)", df)
    if not rep.rows or not any(r[2] for r in rep.rows):
        rep.rows = []
        rep.note = ("not applicable: a binlog file has no capture time (delay needs a pcap or "
                    "live capture)" if file_only else "no events with a capture time")
    return rep


DDL_PATTERN = r"(?is)^\s*(/\*.*?\*/\s*)*(CREATE|ALTER|DROP|RENAME|TRUNCATE|GRANT|REVOKE)\b"


def report_ddl_timeline(spark: Any) -> Report:
    """One row per DDL statement, with where it was seen: the same statement read from a
    binlog and from a capture of its stream (or by two replicas' sessions) is one row whose
    ``seen_in`` names every source (and session) and where it was there, not the same line
    repeated unexplained. A statement is known by its GTID (a copy of a binlog under another
    file name holds the same transaction), else by its file and offset; ``binlog_file`` and
    ``offset`` are those of the first sighting in ``seen_in``'s order."""
    from pyspark.sql import functions as f

    ev = spark.table("events")
    who = f.when(f.col("session_id").isNull(), f.col("source")).otherwise(
        f.concat(f.col("source"), f.lit(" session "), f.col("session_id")))
    where = f.concat(who, f.lit(" at "), f.coalesce(f.col("binlog_file"), f.lit("?")),
                     f.lit(":"), f.coalesce(f.col("offset").cast("string"), f.lit("?")))
    key = f.coalesce(f.col("gtid"), f.concat(f.coalesce(f.col("binlog_file"), f.lit("")),
                                             f.lit(":"), f.col("offset").cast("string")))
    df = (ev.where(f.col("event_type").isin("QUERY_EVENT", "QUERY_COMPRESSED_EVENT")
                   & f.col("query").rlike(DDL_PATTERN))
          .withColumn("where", where).withColumn("key", key)
          .groupBy("key", "query")
          .agg(f.min("timestamp").alias("timestamp"), f.max("schema").alias("schema"),
               f.min_by("binlog_file", "where").alias("binlog_file"),
               f.min_by("offset", "where").alias("offset"), f.max("gtid").alias("gtid"),
               f.sort_array(f.collect_set("where")).alias("seen_in"),
               f.count(f.lit(1)).alias("sightings"))
          .select("timestamp", "schema", "binlog_file", "offset", "gtid",
                  f.upper(f.regexp_extract("query", r"(?is)^\s*(?:/\*.*?\*/\s*)*(\w+\s+\w+)", 1))
                  .alias("statement"),
                  "query", "seen_in", "sightings")
          .orderBy("timestamp", "gtid", "binlog_file", "offset", "query"))
    return collect("ddl_timeline", "DDL timeline (seen_in: the sources and sessions that "
                    "carried each statement, and where)", df)


def report_silences(spark: Any, threshold: float = SILENCE_SECONDS) -> Report:
    """The stretches without any event (heartbeats count: a live or captured stream sends
    them when idle), per source and session, longest first: where a stream went quiet, which
    the events-per-second chart shows as a gap rather than a line across it."""
    df = spark.sql(f"""
SELECT source, session_id, prev AS silent_from, t AS silent_until,
       (unix_micros(t) - unix_micros(prev)) / 1e6 AS seconds
FROM (SELECT source, session_id, t,
             lag(t) OVER (PARTITION BY source, session_id ORDER BY t) AS prev
      FROM (SELECT source, session_id, coalesce(capture_time, timestamp) AS t FROM events
            WHERE coalesce(capture_time, timestamp) > TIMESTAMP '1970-01-01 00:00:00'))
WHERE prev IS NOT NULL AND unix_micros(t) - unix_micros(prev) > {float(threshold)} * 1e6
ORDER BY seconds DESC, source, session_id, silent_from""")
    rep = collect("silences", f"Silences: stretches of more than {threshold:g} s without an "
                   "event, per source and session (capture time, else the event timestamp)",
                   df)
    if not rep.rows:
        rep.note = f"no stretch of more than {threshold:g} s without an event"
    return rep


def run_reports(spark: Any, limit: int = 20) -> list[Report]:
    file_only = _is_file_only(spark)
    return [
        report_changes(spark),
        report_transaction_sizes(spark),
        report_transaction_summary(spark),
        report_events_per_second(spark),
        report_silences(spark),
        report_largest_transactions(spark, limit),
        report_largest_transactions_by_bytes(spark, limit),
        report_heartbeat_gaps(spark, file_only),
        report_ack_latency(spark, file_only),
        report_replication_delay(spark, file_only),
        report_ack_latency_over_time(spark),
        report_lag_over_time(spark),
        report_delay_over_time(spark),
        report_ddl_timeline(spark),
    ]
