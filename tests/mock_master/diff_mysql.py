"""The MySQL-flavour differential scenario. There is no real MySQL on this machine, so the
packet-by-packet comparison is not possible: the mock master (``flavor = "mysql"``) serves
the MySQL 8.0.45 GTID fixture binlogs to python-mysql-replication in GTID mode
(``auto_position``, COM_BINLOG_DUMP_GTID) logging in with caching_sha2_password, and what the
client decodes is compared with ``binlogscope file --json`` of the same files (the transactions
in the client's GTID set left out).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / (
    "Percona-Lab__percona-binlog-server/mtr/binlog_streaming/std_data/data_80045_gtid")
FILES = ("binlog.000001", "binlog.000002")
UUID = "396e294c-1ca4-11f1-9ae7-00155da79c6b"
ROW_EVENTS = {"WRITE_ROWS_EVENT": "write", "UPDATE_ROWS_EVENT": "update",
              "DELETE_ROWS_EVENT": "delete"}


def expected(paths: list[Path], skip: set[int]) -> list[tuple[Any, ...]]:
    """(gtid) and (kind, schema.table, rows) items from ``binlogscope file --json``; the rows
    as lists of values in column order; transactions whose GNO is in ``skip`` left out."""
    proc = subprocess.run([sys.executable, "-m", "binlogscope", "file", "--json",
                           *map(str, paths)], capture_output=True, text=True, timeout=120,
                          check=True)
    out: list[tuple[Any, ...]] = []
    skipping = False
    for line in proc.stdout.splitlines():
        ev = json.loads(line)
        if ev["event_type"] == "GTID_LOG_EVENT":
            gno = int(ev["gtid"].rsplit(":", 1)[1])
            skipping = gno in skip
            if not skipping:
                out.append(("gtid", ev["gtid"]))
        elif ev["event_type"] in ROW_EVENTS and not skipping:
            rows: list[Any] = []
            for r in ev["rows"]:
                if r["before"] is not None and r["after"] is not None:
                    rows.append((_values(r["before"]), _values(r["after"])))
                else:
                    rows.append(_values(r["after"] if r["after"] is not None else r["before"]))
            out.append((ROW_EVENTS[ev["event_type"]], f"{ev['schema']}.{ev['table']}", rows))
    return out


def _values(image: dict[str, Any]) -> list[Any]:
    return [image[k] for k in sorted(image, key=lambda k: int(k.lstrip("@")))]


def via_pymysqlreplication(host: str, port: int, auto_position: str) -> list[tuple[Any, ...]]:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import GtidEvent
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    s = BinLogStreamReader(
        connection_settings={"host": host, "port": port, "user": "repl",
                             "password": "replpass"},
        server_id=4343, blocking=False, auto_position=auto_position,
        only_events=[GtidEvent, WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent])
    out: list[tuple[Any, ...]] = []
    try:
        for ev in s:
            if isinstance(ev, GtidEvent):
                out.append(("gtid", ev.gtid))
                continue
            kind = {WriteRowsEvent: "write", UpdateRowsEvent: "update",
                    DeleteRowsEvent: "delete"}[type(ev)]
            rows: list[Any] = []
            for r in ev.rows:
                if "before_values" in r:
                    rows.append((list(r["before_values"].values()),
                                 list(r["after_values"].values())))
                else:
                    rows.append(list(r["values"].values()))
            out.append((kind, f"{ev.schema}.{ev.table}", rows))
    finally:
        s.close()
    return out
