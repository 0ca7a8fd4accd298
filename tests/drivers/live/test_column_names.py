"""drivers/live/columns.py: column names (and signedness, collations) from information_schema
for TABLE_MAPs written without them - asked once per table, again when the map's bytes
change, a failure noted once and never blocking the stream (the live replica's
``table_map_hook``); end to end through the conformance cases values/metadata-none/minimal."""

from __future__ import annotations

from binlogscope.drivers.live.columns import ColumnNames
from binlogscope.wire.binlog.context import ColumnInfo, TableMap
from binlogscope.wire.binlog.types import ColumnType as T

ROWS: list[list[bytes | None]] = [
    [b"id", b"int", b"int(11)", None],
    [b"u", b"int", b"int(10) unsigned", None],
    [b"s", b"varchar", b"varchar(20)", b"utf8mb4_general_ci"],
    [b"b", b"varbinary", b"varbinary(8)", None],
]


def _tm(raw: bytes = b"m1", names: bool = False) -> TableMap:
    cols = [ColumnInfo(0, T.MYSQL_TYPE_LONG), ColumnInfo(1, T.MYSQL_TYPE_LONG),
            ColumnInfo(2, T.MYSQL_TYPE_VARCHAR), ColumnInfo(3, T.MYSQL_TYPE_VARCHAR)]
    if names:
        for c, n in zip(cols, "abcd", strict=True):
            c.name = n
    return TableMap(7, "conf", "t", cols, raw=raw)


def test_names_signedness_and_collations_from_information_schema() -> None:
    asked: list[str] = []
    notes: list[str] = []

    def answer(sql: str) -> list[list[bytes | None]]:
        asked.append(sql)
        return ROWS

    hook = ColumnNames(answer, notes.append)
    tm = _tm()
    hook(tm)
    assert [c.name for c in tm.columns] == ["id", "u", "s", "b"]
    assert [c.unsigned for c in tm.columns] == [False, True, False, False]
    assert [c.charset for c in tm.columns] == [None, None, 45, 63]
    assert len(asked) == 1 and "ORDER BY ORDINAL_POSITION" in asked[0]
    assert "TABLE_SCHEMA = 'conf'" in asked[0] and "TABLE_NAME = 't'" in asked[0]
    assert len(notes) == 1 and "information_schema.COLUMNS" in notes[0]
    # the same map again: the answer kept, not asked again
    tm2 = _tm()
    hook(tm2)
    assert len(asked) == 1 and tm2.columns[1].name == "u" and tm2.columns[1].unsigned
    # another map of the table (ALTER TABLE): asked again
    hook(_tm(b"m2"))
    assert len(asked) == 2
    # a map with names is left alone
    named = _tm(b"m3", names=True)
    hook(named)
    assert len(asked) == 2 and [c.name for c in named.columns] == list("abcd")


def test_a_failure_is_one_note_and_the_map_stays_as_written() -> None:
    calls: list[str] = []
    notes: list[str] = []

    def refuse(sql: str) -> list[list[bytes | None]]:
        calls.append(sql)
        raise OSError("connection refused")

    hook = ColumnNames(refuse, notes.append)
    tm = _tm()
    hook(tm)
    hook(_tm(b"other"))
    assert [c.name for c in tm.columns] == [None] * 4
    assert len(calls) == 1 and len(notes) == 1 and "connection refused" in notes[0]


def test_another_column_count_is_not_applied() -> None:
    notes: list[str] = []
    hook = ColumnNames(lambda sql: ROWS[:3], notes.append)
    tm = _tm()
    hook(tm)
    assert [c.name for c in tm.columns] == [None] * 4
    assert "3 columns where the map has 4" in notes[0]


def test_a_table_the_filter_drops_is_not_asked_about() -> None:
    asked: list[str] = []

    def answer(sql: str) -> list[list[bytes | None]]:
        asked.append(sql)
        return ROWS

    hook = ColumnNames(answer, lambda _t: None, lambda schema, table: table != "t")
    tm = _tm()
    hook(tm)
    assert not asked and tm.columns[0].name is None
