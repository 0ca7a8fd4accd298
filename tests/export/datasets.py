"""Two export datasets compared: every table, column and row (after sorting), the partition
directories and the ``errors`` table (the local export against ``--spark`` and ``--jobs``)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from binlogscope.export.arrow import TABLES, read_table


def table_rows(root: Path, table: str) -> list[str]:
    t = read_table(root, table)
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in t.to_pylist())


def assert_same_dataset(a_root: Path, b_root: Path) -> dict[str, int]:
    """Every table: the same schema and the same rows (every column) after sorting."""
    counts = {}
    for table in TABLES:
        a, b = read_table(a_root, table), read_table(b_root, table)
        assert a.schema == b.schema, table
        ra, rb = table_rows(a_root, table), table_rows(b_root, table)
        assert len(ra) == len(rb), (table, len(ra), len(rb))
        assert ra == rb, table
        counts[table] = len(ra)
        # the parts' own schema (no partition columns) is the same too
        for pa_file, pb_file in zip(sorted((a_root / table).rglob("*.parquet"))[:1],
                                    sorted((b_root / table).rglob("*.parquet"))[:1],
                                    strict=False):
            assert pq.read_schema(pa_file).remove_metadata().equals(
                pq.read_schema(pb_file).remove_metadata()), table
    # the same partition directories
    for table in TABLES:
        dirs_a = sorted(str(p.parent.relative_to(a_root)) for p in a_root.rglob("*.parquet")
                        if p.parts[len(a_root.parts)] == table)
        dirs_b = sorted(str(p.parent.relative_to(b_root)) for p in b_root.rglob("*.parquet")
                        if p.parts[len(b_root.parts)] == table)
        assert sorted(set(dirs_a)) == sorted(set(dirs_b)), table
    return counts


def assert_same_errors(a_root: Path, b_root: Path) -> None:
    """The ``errors`` tables hold the same rows."""
    def rows(root: Path) -> list[str]:
        if not (root / "errors").exists():
            return []
        return sorted(json.dumps(r, sort_keys=True) for r in
                      pq.read_table(root / "errors").to_pylist())

    assert rows(a_root) == rows(b_root)
