"""The mapper's rows carry each value in its own column: the ``rows`` table's columns copied
from the row event's ``events`` row are the same values (a positional row had put the event's
row count into ``rows.capture_time``)."""

from __future__ import annotations

from pathlib import Path

from binlogscope.export.arrow import read_table
from binlogscope.export.run import run_export
from binlogscope.export.sources import PcapRecordSource

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
SHARED = ("source_kind", "source", "session_id", "binlog_file", "offset", "log_pos",
          "inner_index", "event_type", "table", "timestamp", "server_id", "gtid", "xid",
          "trx_offset", "capture_time")


def test_rows_take_their_event_columns_by_name(tmp_path: Path) -> None:
    caps = sorted(str(p) for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng"))
    run_export(PcapRecordSource(caps), tmp_path / "out")
    events = {(e["source"], e["session_id"], e["binlog_file"], e["offset"], e["inner_index"]): e
              for e in read_table(tmp_path / "out", "events").to_pylist()
              if e["rows"] is not None}
    rows = read_table(tmp_path / "out", "rows").to_pylist()
    assert rows
    for r in rows:
        ev = events[(r["source"], r["session_id"], r["binlog_file"], r["offset"],
                     r["inner_index"])]
        for name in SHARED:
            assert r[name] == ev[name], name
        assert r["capture_time"] is not None and r["capture_time"].year > 2000
