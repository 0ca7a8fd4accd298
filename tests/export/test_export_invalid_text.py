"""Text that is not valid in its charset (a VARCHAR value, a statement) exports in every
locale: the output is valid UTF-8 as ``file --json`` writes it (U+FFFD for each undecodable
byte), and the raw bytes are kept: a row value's in the ``before``/``after`` maps (``0x`` hex),
a statement's in ``events.query_raw``."""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pyarrow.dataset as pads
import pytest

from binlogscope.cli.main import main

REPO = Path(__file__).resolve().parents[2]
BINLOG = REPO / "captures" / "mariadb-10.11-workload.000001"


def _file_json(path: Path) -> list[dict[str, Any]]:
    buf = io.StringIO()
    main(["file", "--json", str(path)], out=buf, err=io.StringIO())
    return [json.loads(x) for x in buf.getvalue().splitlines()]


def _poke(data: bytearray, off: int, size: int, needle: bytes, at: int) -> None:
    """Set byte ``at`` of ``needle`` inside the event at ``off`` to 0xFF; fix its CRC32."""
    ev = data[off:off + size]
    i = ev.find(needle)
    assert i > 0
    ev[i + at] = 0xFF
    ev[-4:] = struct.pack("<I", zlib.crc32(bytes(ev[:-4])) & 0xFFFFFFFF)
    data[off:off + size] = ev


@pytest.fixture(scope="module")
def bad_text(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    data = bytearray(BINLOG.read_bytes())
    value = column = ""
    query_done = False
    for o in _file_json(BINLOG):
        if not value and o["event_type"].startswith("WRITE_ROWS") and o["table"] == "t_str":
            for k, v in (o["rows"][0]["after"] or {}).items():
                if isinstance(v, str) and len(v) >= 3 and v.isascii() and v.isalpha():
                    _poke(data, o["offset"], o["event_size"], v.encode(), 1)
                    value, column = v, k
                    break
        if not query_done and o["event_type"] == "QUERY_EVENT" and "CREATE TABLE t_str" in (
                o["query"] or ""):
            _poke(data, o["offset"], o["event_size"], b"CREATE TABLE t_str", 15)
            query_done = True
    assert value and query_done
    p = tmp_path_factory.mktemp("bad") / "bad.000001"
    p.write_bytes(bytes(data))
    return p, value, column


@pytest.mark.parametrize("locale", ["C", "C.UTF-8", "POSIX"])
def test_invalid_text_exports_valid_with_the_raw_bytes_kept(
        bad_text: tuple[Path, str, str], tmp_path: Path, locale: str) -> None:
    path, value, column = bad_text
    out = tmp_path / "ds"
    env = {**os.environ, "LC_ALL": locale, "LANG": locale, "PYTHONIOENCODING": "",
           "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    env.pop("PYTHONUTF8", None)
    p = subprocess.run([sys.executable, "-m", "binlogscope", "export", str(path), "--out",
                        str(out)], capture_output=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in p.stderr
    raw = value.encode()
    bad = raw[:1] + b"\xff" + raw[2:]
    shown = bad.decode("utf-8", "replace")  # what file --json writes
    rows = pads.dataset(out / "rows", partitioning="hive").to_table(
        filter=pads.field("table") == "t_str").to_pylist()
    hit = [r for r in rows if r["after"] and dict(r["after"]).get(column) == "0x" + bad.hex()]
    assert len(hit) == 1  # the raw bytes, kept
    assert json.loads(hit[0]["after_json"])[column] == shown  # valid text, as file --json
    events = pads.dataset(out / "events", partitioning="hive").to_table().to_pylist()
    queries = [e["query"] for e in events if e["query"] and "TABLE t_\ufffdtr" in e["query"]]
    assert len(queries) == 1
    # the statement's own bytes are kept beside its valid text; valid statements keep none
    (raw_q,) = [e["query_raw"] for e in events if e["query"] == queries[0]]
    assert raw_q is not None and b"CREATE TABLE t_\xfftr" in raw_q
    assert raw_q.decode("utf-8", "replace") == queries[0]
    assert all(e["query_raw"] is None for e in events if e["query"] != queries[0])
    want = [o["query"] for o in _file_json(path) if o["query"] and "t_\ufffdtr" in o["query"]]
    assert queries == want
