"""``redact``: the bundle keeps every event's type, length, header, checksum validity, TABLE_MAP
column types and metadata, row counts and NULLs, and no original cell value, name or
statement literal survives in it (the bundle's bytes are searched for each); real binlogs
(the MariaDB workload, MySQL 8 fixtures)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from binlogscope.diagnose.redact import Redactor, redact_files
from binlogscope.drivers.binlog_file import read_binlog_file
from binlogscope.pipeline.filter import event_table
from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.table_map import TableMapEvent

REPO = Path(__file__).resolve().parents[2]
FIX = REPO.parent / "shared" / "fixtures" / "blackbeam__rust_mysql_common" / "test-data" / \
    "binlogs"
INPUTS = [REPO / "captures" / "mariadb-10.11-workload.000001",
          FIX / "mysql-enum-string-set.000001", FIX / "binlog-invisible-columns.000001",
          FIX / "minimal_row_metadata.000001", FIX / "mariadb-bin.000001"]


def _events(path: Path) -> list[tuple[DecodedEvent, Any]]:
    ctx = DecodeContext()
    out = []
    for ev in read_binlog_file(path, record=False, ctx=ctx):
        body = ev.body
        rows = body.rows if isinstance(body, RowsEvent) and ev.error is None else None
        tm = ctx.tables.get(body.table_id) if isinstance(body, RowsEvent | TableMapEvent) \
            else None
        cols = [(c.type, c.meta, c.nullable, c.unsigned, c.charset) for c in tm.columns] \
            if tm is not None else None
        out.append((ev, (rows, cols)))
    return out


def _redact(src: Path, tmp: Path) -> Path:
    if not src.exists():
        pytest.skip(f"{src} is not here")
    out = io.StringIO()
    rc = main(["redact", str(src), "--out", str(tmp / "bundle")], out=out, err=io.StringIO())
    assert rc == 0, out.getvalue()
    return tmp / "bundle" / "binlog" / src.name


def _strings(v: Any) -> list[str]:
    if isinstance(v, dict):
        return [s for x in v.values() for s in _strings(x)]
    if isinstance(v, list):
        return [s for x in v for s in _strings(x)]
    if isinstance(v, str):
        return [v]
    return []


@pytest.mark.parametrize("src", INPUTS, ids=lambda p: p.name)
def test_structure_is_kept(src: Path, tmp_path: Path) -> None:
    red = _redact(src, tmp_path)
    assert red.stat().st_size == src.stat().st_size
    a, b = _events(src), _events(red)
    assert len(a) == len(b)
    for (ea, (ra, ca)), (eb, (rb, cb)) in zip(a, b, strict=True):
        ha, hb = ea.header, eb.header
        assert ha is not None and hb is not None
        assert (ea.offset, ha.type_code, ha.event_size, ha.log_pos, ha.flags, ha.server_id,
                ha.timestamp) == (eb.offset, hb.type_code, hb.event_size, hb.log_pos, hb.flags,
                                  hb.server_id, hb.timestamp)
        assert eb.checksum_ok == ea.checksum_ok  # recomputed: valid where it was
        assert (eb.error is None) == (ea.error is None), (eb.offset, eb.error)
        assert cb == ca  # the TABLE_MAP in force: types, metadata, nullability, charsets
        if ra is not None:
            assert rb is not None and len(rb) == len(ra)
            for x, y in zip(ra, rb, strict=True):
                for img in ("before", "after"):
                    xa, ya = x.get(img), y.get(img)
                    assert (xa is None) == (ya is None)
                    if xa is not None:
                        # the same columns (renamed, the same lengths), in order
                        assert [len(k.encode()) for k in xa] == [len(k.encode()) for k in ya]
                        assert [v is None for v in xa.values()] == [
                            v is None for v in ya.values()]


@pytest.mark.parametrize("src", INPUTS, ids=lambda p: p.name)
def test_no_original_value_survives(src: Path, tmp_path: Path) -> None:
    if not src.exists():
        pytest.skip(f"{src} is not here")
    r = Redactor(key=b"binlogscope-test-key")
    redact_files([src], tmp_path / "bundle", redactor=r)
    data = (tmp_path / "bundle" / "binlog" / src.name).read_bytes()
    # the stand-ins are keyed random letters: a 4-letter window of one may spell a short
    # original value by chance (made up, not copied); they are blanked before the search
    for stand_in in sorted(r.names.values(), key=len, reverse=True):
        data = data.replace(stand_in.encode(), b"\0" * len(stand_in.encode()))
    secrets: set[bytes] = set()
    for ev, (rows, _) in _events(src):
        for v in event_table(ev):
            if v is not None and len(v) >= 4:
                secrets.add(v.encode())
        for c in ev.body.columns if isinstance(ev.body, TableMapEvent) else []:
            n = c.name
            if n is not None and len(n) >= 4:
                secrets.add(n.encode())
        for img in (rows or []):
            for part in (img.get("before"), img.get("after")):
                for v in (part or {}).values():
                    if isinstance(v, str) and len(v.strip()) >= 4 and set(v) != {"x"}:
                        secrets.add(v.encode())
                    elif isinstance(v, bytes) and len(v.strip(b"\0")) >= 4 and \
                            len(set(v)) > 1:  # (0xff * 4 is everywhere: not a value's trace)
                        secrets.add(v.strip(b"\0"))
                    elif isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 100000:
                        secrets.add(str(v).encode())  # (in statements' text)
                    for s in _strings(v) if isinstance(v, dict | list) else []:
                        if len(s) >= 4:
                            secrets.add(s.encode())
    assert secrets
    found = sorted(s for s in secrets if s in data)
    assert not found, found[:10]


def test_the_bundle_is_served(tmp_path: Path) -> None:
    """The scenario names the scrubbed files; the mock master loads it."""
    from mock_master.scenario.scenarios import load_scenario

    _redact(INPUTS[0], tmp_path)
    sc = load_scenario(tmp_path / "bundle" / "scenario.toml")
    stream = sc.load_stream()
    assert stream is not None


def test_refuses_what_it_cannot_scrub(tmp_path: Path) -> None:
    """A row event whose TABLE_MAP is not in the input: refused, nothing half-written."""
    src = INPUTS[0]
    ctx_events = list(read_binlog_file(src, record=False))
    first_rows = next(e for e in ctx_events if e.type_name.startswith("WRITE_ROWS"))
    cut = tmp_path / "cut.000001"
    raw = src.read_bytes()
    fde_end = ctx_events[0].offset + ctx_events[0].size
    cut.write_bytes(raw[:fde_end] + raw[first_rows.offset:])
    err = io.StringIO()
    rc = main(["redact", str(cut), "--out", str(tmp_path / "b")], out=io.StringIO(), err=err)
    assert rc == 1
    assert "no TABLE_MAP" in err.getvalue() and "not written" in err.getvalue()
    assert not list((tmp_path / "b" / "binlog").iterdir())
