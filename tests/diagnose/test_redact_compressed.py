"""``binlogscope redact`` of a capture of a compressed-protocol session (zlib on a real MariaDB,
zstd from the mock master's MySQL flavour, recorded by ``live --record``): the frames are
inflated, the events scrubbed, and the bundle's ``capture.pcapng`` carries them in frames of
the same algorithm again, behind a made-up login (no secret of the original's): it decodes with
no error to the bundle's own events, and no value of the original survives - searched in the
bundle's bytes and in what its frames inflate to."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from binlogscope.diagnose.redact import Redactor
from binlogscope.diagnose.redact_capture import redact_capture
from binlogscope.drivers.binlog_file import read_binlog_file
from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.session.events import CompressedFrame, PacketDecoded
from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster
from tests.diagnose.test_redact import _strings

_NUMBER = re.compile(r"-?[0-9.]+")
CAPTURES = Path(__file__).resolve().parents[2] / "captures"
MYSQL_FILES = [Path(__file__).resolve().parents[3] / "shared" / "fixtures" /
               "Percona-Lab__percona-binlog-server/mtr/binlog_streaming/std_data/"
               f"data_80045_position/binlog.00000{i}" for i in (1, 2)]


def _values(path: Path) -> set[str]:
    """Every row value and statement text (4 characters or more) ``pcap --json`` shows."""
    out = io.StringIO()
    main(["pcap", "--json", str(path)], out=out, err=io.StringIO())
    found: set[str] = set()
    for line in out.getvalue().splitlines():
        d = json.loads(line)
        found.update(s for s in _strings(d.get("rows")) if len(s) >= 4)
        for lit in re.findall(r"'((?:[^'\\]|\\.)*)'", d.get("query") or ""):
            if len(lit) >= 4:  # a statement's string literals (its keywords stay)
                found.add(lit)
    # (a short number's keyed stand-in digits may spell another short original number by
    # chance - 1.25 -> 6.25 - made up, not copied: numbers are searched from 6 characters)
    return {s for s in found if len(s) >= 6 or not _NUMBER.fullmatch(s)}


def _stream(path: Path) -> tuple[set[str], list[tuple[str, int, int]], int]:
    """(the frames' algorithms, each event's (type, size, log_pos), decode errors)."""
    algos: set[str] = set()
    events: list[tuple[str, int, int]] = []
    errors = 0
    for item in read_capture(str(path), None):
        ev = item.event
        if isinstance(ev, CompressedFrame):
            algos.add(ev.frame.algorithm)
        elif isinstance(ev, PacketDecoded) and ev.binlog_event is not None:
            h = ev.binlog_event.header
            assert h is not None
            events.append((ev.binlog_event.type_name, h.event_size, h.log_pos))
        elif type(ev).__name__ == "DecodeError":
            errors += 1
    return algos, events, errors


def _check(src: Path, out: Path, algorithm: str, least: int = 5) -> None:
    r = Redactor(key=b"binlogscope-test-key")  # (the stand-ins are keyed: the test repeats)
    bundle = redact_capture(src, out, redactor=r)
    assert bundle.compression == algorithm and bundle.capture is not None
    algos, wire, errors = _stream(bundle.capture)
    assert algos == {algorithm} and errors == 0
    # the bundle's capture carries the bundle's events (the dump's made-up ones beside them)
    files = [(e.type_name, e.header.event_size, e.header.log_pos)
             for f in bundle.files for e in read_binlog_file(f, record=False)
             if e.header is not None]
    real = [w for w in wire if w[2] and not w[0].startswith("HEARTBEAT")]
    assert [w for w in real if w in files] == real and len(real) >= len(files) - 2
    _, orig, _ = _stream(src)
    assert [(t, n) for t, n, _ in wire] == [(t, n) for t, n, _ in orig]  # event for event
    # no original value survives: in the files' bytes, the pcapng's bytes, what it inflates to
    values = _values(src)
    assert len(values) >= least, values
    shown = _values(bundle.capture)
    blobs = [f.read_bytes() for f in [*bundle.files, bundle.capture, out / "scenario.toml"]]
    # (a name's stand-in is keyed random letters: a window of one may spell a short original
    # value by chance - made up, not copied; blanked before the search, as test_redact does)
    for stand_in in sorted(r.names.values(), key=len, reverse=True):
        blobs = [b.replace(stand_in.encode(), b"\0" * len(stand_in.encode())) for b in blobs]
    for v in values:
        assert v not in shown, v
        assert all(v.encode() not in b for b in blobs), v
    login = out.joinpath("capture.pcapng").read_bytes()
    assert b"redacted" in login and b"repl\0" not in login  # the made-up user, not the real one


@pytest.mark.parametrize("name", ["pcap-compressed-zlib.pcap",
                                  "pcap-compressed-catchup-zlib.pcapng"])
def test_a_zlib_capture_is_redacted_in_zlib_frames(name: str, tmp_path: Path) -> None:
    _check(CAPTURES / name, tmp_path / "b", "zlib")


@pytest.mark.network
def test_a_zstd_recording_is_redacted_in_zstd_frames(
        mock_master: Callable[..., ThreadedMockMaster], tmp_path: Path) -> None:
    if not all(f.exists() for f in MYSQL_FILES):
        pytest.fail(f"the MySQL 8.0.45 fixture binlogs are missing: {MYSQL_FILES}")
    mm = mock_master(Scenario(flavor="mysql", server_version="8.0.45",
                                 sources=[BinlogSource(list[str | Path](MYSQL_FILES))]))
    rec = tmp_path / "zstd.pcapng"
    r = subprocess.run([sys.executable, "-m", "binlogscope", "live", "--host", mm.host,
                        "--port", str(mm.port), "-u", "repl", "--compression-algorithms", "zstd",
                        "--start", "binlog.000001:4", "--non-blocking", "--json", "--record",
                        str(rec)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "MYSQL_PWD": "replpass"})
    assert r.returncode == 0, r.stderr
    # (the MySQL 8.0.45 fixture's rows are integers only: no value long enough to search)
    _check(rec, tmp_path / "b", "zstd", least=0)


def test_a_tls_capture_is_refused(tmp_path: Path) -> None:
    """A TLS session's events are not in the capture's cleartext: one line, exit 1, nothing
    written that could leak."""
    from tests.helpers import FIXTURES

    tls = next((p for p in sorted(FIXTURES.rglob("*.pcap*")) if "ssl" in p.name.lower()
                or "tls" in p.name.lower()), None)
    if tls is None:
        pytest.fail(f"no TLS capture under {FIXTURES}")
    out, err = io.StringIO(), io.StringIO()
    rc = main(["redact", str(tls), "--out", str(tmp_path / "b")], out=out, err=err)
    assert rc == 1 and "Traceback" not in err.getvalue()
    assert len(err.getvalue().strip().splitlines()) == 1, err.getvalue()
    left: Any = list((tmp_path / "b").rglob("*")) if (tmp_path / "b").exists() else []
    assert not [p for p in left if p.is_file()], left


@pytest.mark.mysql
@pytest.mark.network
def test_a_zlib_semi_sync_recording_of_a_real_mariadb(mariadb: Any, tmp_path: Path) -> None:
    """A semi-sync dump (every event behind a 0xEF header) in zlib frames, recorded from a
    real MariaDB: the bundle's made-up login repeats the replica's semi-sync variable, so its
    capture decodes with the headers, as the original."""
    from tests.mariadb_server import sql

    db = mariadb
    c = db.connect()
    cur = c.cursor()
    cur.execute("FLUSH BINARY LOGS")
    cur.execute("CREATE TABLE IF NOT EXISTS red_z (id INT PRIMARY KEY, note VARCHAR(60))")
    for i in range(6):
        cur.execute("REPLACE INTO red_z VALUES (%s, %s)", (i, f"lemon-secret-{i}-padding"))
    name = str(sql(db, "SHOW MASTER STATUS")[0][0])
    rec = tmp_path / "z.pcapng"
    r = subprocess.run([sys.executable, "-m", "binlogscope", "live", "--host", db.host,
                        "--port", str(db.port), "-u", db.repl_user, "--ssl-mode", "DISABLED",
                        "--semi-sync", "--compression-algorithms", "zlib", "--count", "24",
                        "--start", f"{name}:4", "--json", "--record", str(rec)],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "MYSQL_PWD": db.repl_password, "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr + "\n".join(r.stdout.splitlines()[-6:])
    _check(rec, tmp_path / "b", "zlib")
    semi = [ev.semi_sync is not None for item in read_capture(str(tmp_path / "b" /
                                                                  "capture.pcapng"), None)
            if isinstance(ev := item.event, PacketDecoded) and ev.binlog_event is not None]
    assert semi and all(semi)  # every event read behind its semi-sync header
    data = (tmp_path / "b" / "capture.pcapng").read_bytes()
    assert b"lemon-secret" not in data
