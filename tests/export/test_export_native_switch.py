"""The export writes the same Parquet with the native kernel on and off.

Every binlog in ../shared/fixtures (MANIFEST.md) and in captures/ is exported twice in-process,
once with the kernel (its row reader feeds the mapper's images) and once with
``binlogscope._native.kernel`` set to None (what ``BINLOGSCOPE_PURE_PYTHON=1`` does): the same
part files, and in each the same schema, the same rows and the same values, column by column.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow.parquet as pq

from binlogscope.export.records import BinlogFileSource
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
    for _ in range(3):
        b = bytearray(data)
        for start, end in rnd.sample(spans, min(5, len(spans))):
            i = rnd.randrange(start, end)
            b[i] ^= 1 << rnd.randrange(8)
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
