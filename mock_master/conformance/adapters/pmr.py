"""The conformance adapter for python-mysql-replication (``pymysqlreplication``).

::

    python -m mock_master.conformance.adapters.pmr HOST PORT USER PASSWORD FILE POS FLAVOR \
        [GTID] [HEARTBEAT] [TLS]

Reads the stream with ``BinLogStreamReader`` (non-blocking: it ends at the end of the binlog)
and prints one JSON line per event the library hands its user, in the schema of
docs/conformance.md. The values are passed on as the library returns them - the adapter
converts Python types to JSON (bytes to ``{"hex": ...}``, Decimal to text, datetime to
``YYYY-MM-DD HH:MM:SS[.ffffff]``, timedelta to ``[-]H:MM:SS[.ffffff]``, a set to a sorted list,
a partial JSON update's ``JsonDiff`` to ``{"op", "path", "value"}``)
and corrects nothing. HEARTBEAT (seconds) is the library's own ``slave_heartbeat`` with a
``read_timeout`` of twice that in its connection settings (how a user makes it notice a silent
source). TLS ``required`` passes ``ssl={"check_hostname": False}`` (TLS insisted on, the
certificate not verified); otherwise PyMySQL's default (it switches to TLS when the server
offers it). An exception is an ``error`` line and exit status 1 (the traceback on
stderr). The password comes as an argument because the conformance runner passes it that way to
every client; the mock master's test user's, never a real one.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sys
import traceback
from decimal import Decimal
from typing import Any


def _value(v: Any) -> Any:
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, dt.date | dt.time):
        return v.isoformat()
    if isinstance(v, dt.timedelta):
        total = v.days * 86_400_000_000 + v.seconds * 1_000_000 + v.microseconds
        sign = "-" if total < 0 else ""
        secs, us = divmod(abs(total), 1_000_000)
        hh, rest = divmod(secs, 3600)
        mm, ss = divmod(rest, 60)
        return f"{sign}{hh:02d}:{mm:02d}:{ss:02d}" + (f".{us:06d}" if us else "")
    if isinstance(v, bytes | bytearray | memoryview):
        return {"hex": bytes(v).hex()}
    if hasattr(v, "op") and hasattr(v, "path"):  # a partial JSON update's diff (JsonDiff)
        op = getattr(v.op, "name", v.op)
        path = v.path.decode("utf-8", "replace") if isinstance(v.path, bytes) else v.path
        return {"op": str(op).upper(), "path": path, "value": _value(getattr(v, "value", None))}
    if isinstance(v, set | frozenset):
        return sorted(_value(x) for x in v)
    if isinstance(v, dict):
        return {(k if isinstance(k, str) else json.dumps(_value(k))): _value(x)
                for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_value(x) for x in v]
    return repr(v)


#: pymysqlreplication's NONE_SOURCE.COLS_BITMAP: the library's mark on a None that stands for
#: a column the row image does not hold (binlog_row_image=MINIMAL), not a NULL
_NOT_IN_IMAGE = "cols bitmap"


def _row_values(d: dict[str, Any], none_sources: Any = None) -> dict[str, Any]:
    """The values as the library returns them; a column the library itself marks as not in
    the image (its ``none_sources``) is left out, as the library's user can tell."""
    absent = {k for k, src in (none_sources or {}).items() if src == _NOT_IN_IMAGE}
    return {str(k): _value(v) for k, v in d.items() if k not in absent}


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    if len(argv) < 7:
        print(__doc__, file=sys.stderr)
        return 2
    host, port, user, password, log_file, log_pos, flavor = argv[:7]
    gtid = argv[7] if len(argv) > 7 and argv[7] else None
    heartbeat = float(argv[8]) if len(argv) > 8 and argv[8] else None
    tls = argv[9] if len(argv) > 9 else ""
    import pymysqlreplication
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication import event as e
    from pymysqlreplication import row_event as r

    _emit({"type": "hello", "client": "python-mysql-replication "
           + str(getattr(pymysqlreplication, "__version__", "?")), "bytes": "object"})
    kw: dict[str, Any] = {"is_mariadb": flavor == "mariadb"}
    if gtid:
        kw["auto_position"] = gtid
    else:
        kw.update(log_file=log_file, log_pos=int(log_pos), resume_stream=True)
    settings: dict[str, Any] = {"host": host, "port": int(port), "user": user,
                                "passwd": password}
    if tls == "required":
        settings["ssl"] = {"check_hostname": False}
    if heartbeat:
        kw["slave_heartbeat"] = heartbeat
        settings["read_timeout"] = 2 * heartbeat
    try:
        stream = BinLogStreamReader(
            connection_settings=settings,
            server_id=3_000_000 + int(port) % 1000, blocking=False, **kw)
        for ev in stream:
            pos = {"log_file": stream.log_file, "log_pos": stream.log_pos}
            if isinstance(ev, r.WriteRowsEvent | r.UpdateRowsEvent | r.DeleteRowsEvent):
                kind = ("insert" if isinstance(ev, r.WriteRowsEvent) else
                        "update" if isinstance(ev, r.UpdateRowsEvent) else "delete")
                rows = []
                for row in ev.rows:
                    if kind == "update":
                        rows.append({"before": _row_values(row["before_values"], row.get(
                                         "before_none_sources")),
                                     "after": _row_values(row["after_values"], row.get(
                                         "after_none_sources"))})
                    elif kind == "insert":
                        rows.append({"after": _row_values(row["values"],
                                                          row.get("none_sources"))})
                    else:
                        rows.append({"before": _row_values(row["values"],
                                                           row.get("none_sources"))})
                _emit({"type": kind, "schema": ev.schema, "table": ev.table, "rows": rows,
                       **pos})
            elif isinstance(ev, e.QueryEvent):
                q = ev.query
                _emit({"type": "query", "schema": _value(ev.schema),
                       "query": q.decode("utf-8", "replace") if isinstance(q, bytes) else q,
                       **pos})
            elif isinstance(ev, e.GtidEvent | e.MariadbGtidEvent):
                _emit({"type": "gtid", "gtid": str(ev.gtid), **pos})
            elif isinstance(ev, e.XidEvent):
                _emit({"type": "xid", "xid": ev.xid, **pos})
            elif isinstance(ev, e.RotateEvent):
                _emit({"type": "rotate", "next_file": ev.next_binlog,
                       "position": ev.position, **pos})
            elif isinstance(ev, e.HeartbeatLogEvent):
                _emit({"type": "heartbeat", **pos})
            else:
                _emit({"type": "other", "event_type": type(ev).__name__, **pos})
        stream.close()
    except Exception as exc:  # the client's error is the case's evidence
        _emit({"type": "error", "message": f"{type(exc).__name__}: {exc}"[:2000]})
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
