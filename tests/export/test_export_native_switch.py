"""The export writes the same Parquet with the native kernel on and off.

Every binlog in ../shared/fixtures (MANIFEST.md) and in captures/ is exported twice in-process,
once with the kernel (its row reader feeds the mapper's images) and once with
``binlogscope._native.kernel`` set to None (what ``BINLOGSCOPE_PURE_PYTHON=1`` does): the same
part files, and in each the same schema, the same rows and the same values, column by column.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from binlogscope.export.mapper import TableMapper
from binlogscope.export.records import BinlogFileSource, EventRecord, WrittenRun
from binlogscope.export.run import run_export
from tests.helpers import binlog_fixtures
from tests.native_switch import NativeSwitch

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def _inputs() -> list[Path]:
    local = [p for p in sorted(CAPTURES.iterdir())
             if p.is_file() and p.read_bytes()[:4] == b"\xfebin"] if CAPTURES.is_dir() else []
    return [*binlog_fixtures(), *local]


def _parts(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in sorted(root.rglob("*.parquet"))}


def _export(src: Path, out: Path) -> dict[str, Path]:
    run_export(BinlogFileSource([str(src)]), out)
    return _parts(out)


def test_native_and_pure_python_exports_are_the_same(native: NativeSwitch,
                                                     tmp_path: Path) -> None:
    native.require()
    inputs = _inputs()
    assert inputs, "captures/ holds binlogs: the comparison needs at least those"
    compared_rows = 0
    for i, path in enumerate(inputs):
        src = path
        if path.suffix == ".gz":
            src = tmp_path / f"in-{i}.bin"
            src.write_bytes(gzip.decompress(path.read_bytes()))
        on = _export(src, tmp_path / f"on-{i}")
        with native.off():
            off = _export(src, tmp_path / f"off-{i}")
        assert on.keys() == off.keys(), path
        for rel, p in on.items():
            a, b = pq.read_table(p), pq.read_table(off[rel])
            assert a.schema == b.schema, (path, rel)
            for name in a.column_names:
                assert a.column(name).to_pylist() == b.column(name).to_pylist(), (path, rel, name)
            if rel.startswith("rows"):
                compared_rows += a.num_rows
    # the comparison covered row images, not only events
    assert compared_rows > 10_000


def _damaged(data: bytes, seed: int) -> list[bytes]:
    """Copies of a binlog with bytes flipped inside its row events' images, and cut short
    inside the last rows event: what the kernel's image refs meet in a damaged file."""
    import random

    rnd = random.Random(seed)
    copies = []
    # the row events' bodies: WRITE/UPDATE/DELETE v1/v2 (23-25, 30-32) found by the header walk
    spans: list[tuple[int, int]] = []
    p = 4
    while p + 19 <= len(data):
        size = int.from_bytes(data[p + 9:p + 13], "little")
        if size < 19 or p + size > len(data):
            break
        if data[p + 4] in (23, 24, 25, 30, 31, 32) and size > 40:
            spans.append((p + 30, p + size - 4))
        p += size
    if not spans:
        return []
    for k in range(4):
        b = bytearray(data)
        for start, end in rnd.sample(spans, min(5, len(spans))):
            i = rnd.randrange(start, end)
            b[i] ^= 1 << rnd.randrange(8)
            if k == 3:  # the event's CRC32 made right again: the kernel reads the images
                b[end:end + 4] = zlib.crc32(b[start - 30:end]).to_bytes(4, "little")
        copies.append(bytes(b))
    start, end = spans[-1]
    copies.append(data[:rnd.randrange(start, end)])
    return copies


def test_damaged_row_images_export_the_same_both_ways(native: NativeSwitch,
                                                      tmp_path: Path) -> None:
    """Flipped bits in row images (a value changed, a length or null bitmap broken) and a file
    cut inside a rows event: the kernel's refs to images in the bytes, the pure-Python dicts
    and the damage rows all agree."""
    native.require()
    srcs = [p for p in _inputs() if p.suffix != ".gz" and p.stat().st_size < 4_000_000]
    assert srcs
    compared = 0
    for i, path in enumerate(srcs[:12]):
        for j, data in enumerate(_damaged(path.read_bytes(), i)):
            src = tmp_path / f"d-{i}-{j}.bin"
            src.write_bytes(data)
            on = _export(src, tmp_path / f"on-{i}-{j}")
            with native.off():
                off = _export(src, tmp_path / f"off-{i}-{j}")
            assert on.keys() == off.keys(), (path, j)
            for rel, p in on.items():
                a, b = pq.read_table(p), pq.read_table(off[rel])
                assert a.schema == b.schema, (path, j, rel)
                for name in a.column_names:
                    assert a.column(name).to_pylist() == b.column(name).to_pylist(), (
                        path, j, rel, name)
                compared += a.num_rows
    assert compared > 1000


def _mapped(path: Path, kernel: bool) -> tuple[list[tuple[str, Any, Any]], int]:
    """The mapper's rows (as dicts) of a file's records, and how many the kernel read."""
    out: list[tuple[str, Any, Any]] = []
    mapper = TableMapper(lambda t, p, r: out.append((t, p, r)), max_pending_rows=50)
    written = 0
    for rec in BinlogFileSource([str(path)], kernel=kernel).records():
        if isinstance(rec, WrittenRun):
            written += len(rec.values)
            mapper.written(rec)
        elif isinstance(rec, EventRecord):
            mapper.event(rec)
        else:
            mapper.input_done()
    return out, written


def test_the_kernels_event_values_map_as_the_decoded_events(native: NativeSwitch,
                                                            tmp_path: Path) -> None:
    """Every binlog's rows from the kernel's event values (``TableMapper.written``) equal the
    rows of the same events decoded (``TableMapper.event``), value for value, with a small
    held-rows limit (big transactions written as they go) - and the kernel read most events
    of the real MariaDB workload."""
    native.require()
    taken = 0
    for i, path in enumerate(_inputs()):
        src = path
        if path.suffix == ".gz":
            src = tmp_path / f"in-{i}.bin"
            src.write_bytes(gzip.decompress(path.read_bytes()))
        on, written = _mapped(src, True)
        off, none = _mapped(src, False)
        assert none == 0
        assert on == off, path
        taken += written
        if path.name == "mariadb-10.11-workload.000001":
            assert written > len([t for t, _, _ in on if t == "events"]) // 2, written
    assert taken > 500
