"""An event of a type neither MySQL nor MariaDB defines (the conformance fuzz sent type 188)
without LOG_EVENT_IGNORABLE_F: a real replica stops there (MariaDB and MySQL
``Log_event::read_log_event``: "Found invalid event in binary log"); ``live`` and ``file``
show the event with that error and exit 1. The same unknown type flagged ignorable is shown
and tolerated (exit 0), as a replica skips it. The events are built by the encoder and
appended to a real MariaDB binlog, served by the mock master."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from binlogscope.wire.binlog.encode_events import encode_event

REPO = Path(__file__).resolve().parents[3]
CAPTURE = REPO / "captures" / "mariadb-10.11-workload.000001"


def _binlog(tmp: Path, flags: int) -> Path:
    src = CAPTURE.read_bytes()
    body = b"\x01\x02\x03\x04an event type nobody defines"
    ev = encode_event(188, body, server_id=1, log_pos=len(src) + 19 + len(body) + 4,
                      flags=flags, checksum=True)
    out = tmp / "mysql-bin.000001"
    out.write_bytes(src + ev)
    return out


def _last(items: list[dict[str, Any]]) -> dict[str, Any]:
    return next(i for i in reversed(items) if i.get("type_code") == 188)


@pytest.mark.network
@pytest.mark.parametrize(("flags", "rc_want"), [(0, 1), (0x80, 0)])
def test_live_unknown_event(mock_master: Callable[..., Any], tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch, flags: int, rc_want: int) -> None:
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    monkeypatch.setenv("HOME", str(tmp_path))
    mm = mock_master(binlogs=[_binlog(tmp_path, flags)])
    out, err = io.StringIO(), io.StringIO()
    rc = main(["live", "--json", "--host", mm.host, "--port", str(mm.port), "-u", "repl",
               "--ssl-mode", "DISABLED", "--no-reconnect", "--start", "mysql-bin.000001:4",
               "--non-blocking"], out=out, err=err)
    items = [json.loads(line) for line in out.getvalue().splitlines()]
    ev = _last(items)
    assert ev["event_type"] == "UNKNOWN_EVENT_188" and ev["flags"] == flags
    assert "Traceback" not in err.getvalue()
    assert rc == rc_want, err.getvalue()
    if rc_want:
        assert "without LOG_EVENT_IGNORABLE_F" in (ev.get("error") or ""), ev
        assert "LOG_EVENT_IGNORABLE_F" in err.getvalue()
    else:
        assert ev.get("error") is None
        assert "could not be decoded" not in err.getvalue()


@pytest.mark.parametrize(("flags", "rc_want"), [(0, 1), (0x80, 0)])
def test_file_unknown_event(tmp_path: Path, flags: int, rc_want: int) -> None:
    path = _binlog(tmp_path, flags)
    out, err = io.StringIO(), io.StringIO()
    rc = main(["file", "--json", str(path)], out=out, err=err)
    ev = _last([json.loads(line) for line in out.getvalue().splitlines()])
    assert rc == rc_want, err.getvalue()
    assert ("without LOG_EVENT_IGNORABLE_F" in (ev.get("error") or "")) == bool(rc_want)
