"""The export schema (one definition, the doc page generated from it) and the dataset writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from binlogscope.export import arrow
from binlogscope.export.arrow import (
    NULL_PARTITION,
    SCHEMA_VERSION,
    TABLES,
    clean_incomplete,
    data_schema,
    escape_partition,
    full_schema,
    parse_schema_doc,
    read_table,
    render_schema_doc,
)
from binlogscope.export.writer import DatasetWriter

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "export-schema.md"


def test_doc_page_is_generated_from_the_schema() -> None:
    assert DOC.read_text(encoding="utf-8") == render_schema_doc(), (
        "docs/export-schema.md is stale: python -m binlogscope.export.arrow > "
        "docs/export-schema.md")


def test_doc_lists_every_column_with_its_arrow_type() -> None:
    documented = parse_schema_doc(DOC.read_text(encoding="utf-8"))
    assert set(documented) == {"packets", "events", "rows", "health", "errors"}
    for table, cols in (*TABLES.items(), ("health", arrow.HEALTH), ("errors", arrow.ERRORS)):
        assert [name for name, _ in documented[table]] == [c.name for c in cols]
        for (name, typ), col in zip(documented[table], cols, strict=True):
            assert typ == arrow._type_name(col.type), name
    assert f"Schema version: **{SCHEMA_VERSION}**" in DOC.read_text(encoding="utf-8")


def test_partition_columns_are_last_and_not_in_the_files() -> None:
    assert arrow.partition_columns("rows") == ["date", "schema"]
    assert arrow.partition_columns("events") == ["date", "schema"]
    assert arrow.partition_columns("packets") == ["date"]
    assert "schema" not in data_schema("rows").names
    assert full_schema("rows").names[-2:] == ["date", "schema"]
    # the Canal entry model columns
    rows = full_schema("rows")
    assert rows.field("before").type == pa.map_(pa.string(), pa.string())
    assert rows.field("after").type == pa.map_(pa.string(), pa.string())
    assert rows.field("commit_timestamp").type == pa.timestamp("us", tz="UTC")


@pytest.mark.parametrize(("value", "expected"), [
    ("shop", "shop"),
    (None, NULL_PARTITION),
    ("", NULL_PARTITION),
    ("a/b=c", "a%2Fb%3Dc"),
    ("50%", "50%25"),
    ("naïve", "naïve"),  # non-ASCII stays (Spark decodes %XX byte-wise)
    ("x\ny", "x%0Ay"),
])
def test_escape_partition(value: str | None, expected: str) -> None:
    assert escape_partition(value) == expected


def _event_row(i: int) -> dict[str, object]:
    return {"schema_version": SCHEMA_VERSION, "source_kind": "file", "source": "f",
            "binlog_file": "f", "offset": i, "event_type": "QUERY_EVENT"}


def test_writer_hides_parts_until_checkpoint_and_writes_row_groups(tmp_path: Path) -> None:
    w = DatasetWriter(tmp_path, row_group_size=10)
    for i in range(25):
        w.add("events", ("2024-01-02", "shop"), _event_row(i))
    w._flush("events", w._open[("events", ("2024-01-02", "shop"))])
    w._wait()  # row groups are written on the writer thread
    part_dir = tmp_path / "events" / "date=2024-01-02" / "schema=shop"
    assert [p.name for p in part_dir.iterdir()] == [".part-000001-0001.parquet.inprogress"]
    assert read_table(tmp_path, "events").num_rows == 0  # hidden from readers
    done = w.checkpoint()
    assert [p.name for p in done] == ["part-000001-0001.parquet"]
    md = pq.ParquetFile(done[0]).metadata
    assert md.num_rows == 25
    assert md.num_row_groups == 3  # 10 + 10 + 5: written as the stream goes
    t = read_table(tmp_path, "events")
    assert t.column("offset").to_pylist() == list(range(25))
    assert set(t.column("schema").to_pylist()) == {"shop"}
    assert set(t.column("date").to_pylist()) == {"2024-01-02"}


def test_null_partition_reads_back_as_null(tmp_path: Path) -> None:
    w = DatasetWriter(tmp_path)
    w.add("events", ("1970-01-01", ""), _event_row(1))
    w.checkpoint()
    assert (tmp_path / "events" / "date=1970-01-01" / f"schema={NULL_PARTITION}").is_dir()
    assert read_table(tmp_path, "events").column("schema").to_pylist() == [None]


def test_abort_and_clean_incomplete(tmp_path: Path) -> None:
    w = DatasetWriter(tmp_path, row_group_size=2)
    w.add("events", ("2024-01-02", "a"), _event_row(1))
    w.checkpoint()  # checkpoint 1 complete
    for i in range(5):
        w.add("events", ("2024-01-02", "a"), _event_row(10 + i))
    w.abort()  # checkpoint 2 never completes
    assert sorted(p.name for p in (tmp_path / "events").rglob("*")
                  if p.is_file()) == ["part-000001-0001.parquet"]
    # a checkpoint whose renames happened but whose state note was not written
    w2 = DatasetWriter(tmp_path, checkpoint_no=2)
    w2.add("events", ("2024-01-02", "a"), _event_row(99))
    w2.checkpoint()
    assert read_table(tmp_path, "events").num_rows == 2
    assert clean_incomplete(tmp_path, 1) == 1
    assert read_table(tmp_path, "events").column("offset").to_pylist() == [1]


def test_many_partitions_stay_bounded(tmp_path: Path) -> None:
    w = DatasetWriter(tmp_path, max_open=3)
    for i in range(20):
        w.add("events", ("2024-01-02", f"db{i % 7}"), _event_row(i))
        assert len(w._open) <= 3
    w.checkpoint()
    t = read_table(tmp_path, "events")
    assert sorted(t.column("offset").to_pylist()) == list(range(20))
    assert {s for s in t.column("schema").to_pylist()} == {f"db{i}" for i in range(7)}


def test_row_groups_are_cut_by_bytes_too(tmp_path: Path) -> None:
    """A huge row (its weight: the bytes it stands for) closes its row group at once, so it is
    written without waiting in memory for row_group_size rows; add_rows consumes its rows."""
    w = DatasetWriter(tmp_path, row_group_size=1000, row_group_bytes=100)
    names = data_schema("events").names
    part = ("2024-01-02", "a")

    def values(offset: int) -> list[object]:
        row = _event_row(offset)
        return [row.get(n) for n in names]

    rows: list[list[Any]] = [values(1), values(2), values(3), values(4)]
    weights = [10, 500, 0, 0]
    w.add_rows("events", part, rows, weights)
    assert rows == [] and weights == []
    w.add_values("events", part, values(5), 99)
    w.checkpoint()
    files = list((tmp_path / "events").rglob("*.parquet"))
    assert len(files) == 1
    sizes = [pq.ParquetFile(files[0]).metadata.row_group(i).num_rows
             for i in range(pq.ParquetFile(files[0]).metadata.num_row_groups)]
    assert sizes == [2, 3]
    assert read_table(tmp_path, "events").column("offset").to_pylist() == [1, 2, 3, 4, 5]


def test_huge_texts_are_written_plain(tmp_path: Path) -> None:
    """Statements and image JSON get no dictionary and no min/max statistics (each would copy
    a huge value a few times); the small columns keep both."""
    w = DatasetWriter(tmp_path)
    row = _event_row(1)
    row["query"] = "INSERT " + "x" * 1000
    w.add("events", ("2024-01-02", "a"), row)
    w.checkpoint()
    meta = pq.ParquetFile(next((tmp_path / "events").rglob("*.parquet"))).metadata
    cols = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i)
            for i in range(meta.num_columns)}
    assert not cols["query"].is_stats_set
    assert cols["offset"].is_stats_set
    assert "PLAIN_DICTIONARY" in cols["event_type"].encodings or \
        "RLE_DICTIONARY" in cols["event_type"].encodings
    assert not any("DICTIONARY" in e for e in cols["query"].encodings)


def test_image_map_keys_keep_a_dictionary_and_no_statistics(tmp_path: Path) -> None:
    """The row images' map keys (column names, repeated in every row) are dictionary-encoded
    but get no min/max statistics (no reader prunes by them); the top-level small columns keep
    theirs - in the ``rows`` parts of a real binlog's export."""
    from binlogscope.export.records import BinlogFileSource
    from binlogscope.export.run import run_export

    run_export(BinlogFileSource([str(REPO / "captures" / "mariadb-10.11-workload.000001")]),
               tmp_path / "ds")
    parts = sorted((tmp_path / "ds" / "rows").rglob("*.parquet"))
    assert parts
    for f in parts:
        meta = pq.ParquetFile(f).metadata.row_group(0)
        cols = {meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)}
        assert cols["offset"].is_stats_set and cols["table"].is_stats_set
        for key in ("before.key_value.key", "after.key_value.key"):
            if cols[key].num_values:
                assert not cols[key].is_stats_set, (f, key)
                assert any("DICTIONARY" in e for e in cols[key].encodings), (f, key)


def test_named_rows_module_is_generated_from_the_schema() -> None:
    """export/columns.py (the mapper's named rows) is what the schema generates."""
    path = REPO / "src" / "binlogscope" / "export" / "columns.py"
    assert path.read_text(encoding="utf-8") == arrow.render_columns_module(), (
        "src/binlogscope/export/columns.py is stale: python -m binlogscope.export.arrow "
        "--columns > src/binlogscope/export/columns.py")
    from binlogscope.export import columns

    for table in TABLES:
        names = data_schema(table).names
        slots = getattr(columns, table.capitalize() + "Slot")
        assert [getattr(slots, n) for n in names] == list(range(len(names)))
        assert len(names) == slots.WIDTH
        make = getattr(columns, f"{table}_row")
        assert make(**{n: n for n in names}) == names


def _row_groups(root: Path) -> list[tuple[str, list[int], list[int]]]:
    """Each part file of ``events``: its partition directory, row group sizes and offsets."""
    out = []
    for f in sorted((root / "events").rglob("*.parquet")):
        meta = pq.ParquetFile(f).metadata
        out.append((str(f.parent.relative_to(root)),
                    [meta.row_group(i).num_rows for i in range(meta.num_row_groups)],
                    pq.read_table(f).column("offset").to_pylist()))
    return out


def test_add_rows_cuts_row_groups_where_add_values_does(tmp_path: Path) -> None:
    """A transaction's rows handed over per part (``add_rows``: appended at once when they cut
    nothing, else row by row) give the same part files, row groups and rows as one
    ``add_values`` per row - by row count, by a part's bytes, by all buffered bytes, with huge
    rows, over many random runs of parts and weights."""
    import random

    names = data_schema("events").names
    rnd = random.Random(7)
    for trial in range(40):
        limits: dict[str, Any] = dict(
            row_group_size=rnd.choice([3, 7, 50]), row_group_bytes=rnd.choice([50, 400]),
            buffer_bytes=rnd.choice([300, 2000]), huge_row_bytes=rnd.choice([150, 10_000]),
            max_open=rnd.choice([2, 32]), background=False)
        batches: list[tuple[tuple[str, str], list[list[Any]], list[int]]] = []
        offset = 0
        for _ in range(rnd.randrange(1, 30)):
            part = ("2024-01-02", f"db{rnd.randrange(4)}")
            rows: list[list[Any]] = []
            weights: list[int] = []
            for _ in range(rnd.randrange(1, 12)):
                offset += 1
                event = _event_row(offset)
                rows.append([event.get(n) for n in names])
                weights.append(rnd.choice([0, 5, 40, 120, 200]))
            batches.append((part, rows, weights))
        a, b = tmp_path / f"a{trial}", tmp_path / f"b{trial}"
        wa, wb = DatasetWriter(a, **limits), DatasetWriter(b, **limits)
        for part, rows, weights in batches:
            for values, weight in zip(rows, weights, strict=True):
                wa.add_values("events", part, list(values), weight)
            wb.add_rows("events", part, [list(r) for r in rows], list(weights))
        for w in (wa, wb):
            w.checkpoint()
            w.close()
        assert _row_groups(a) == _row_groups(b), (trial, limits)
        assert sum(len(r) for _, r, _ in batches) == sum(
            len(o) for _, _, o in _row_groups(a))
