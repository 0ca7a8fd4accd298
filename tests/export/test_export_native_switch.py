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
