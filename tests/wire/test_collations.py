"""The one collation/charset table (``wire/binlog/_collations.py``): the row-value readers and
the QUERY/USER_VAR decoders read it alike, and it agrees with a real server's SHOW COLLATION."""

from __future__ import annotations

import pytest

from binlogscope.wire.binlog import _collations, query_event, status_vars, values
from binlogscope.wire.binlog._collations import (
    charset_of,
    codec_for,
    collation_name,
    decode_text,
    python_codec,
)

#: id -> (name, charset, Python codec) for a few ids every reader of the table relies on
KNOWN = {
    8: ("latin1_swedish_ci", "latin1", "cp1252"),
    33: ("utf8mb3_general_ci", "utf8mb3", "utf-8"),
    45: ("utf8mb4_general_ci", "utf8mb4", "utf-8"),
    46: ("utf8mb4_bin", "utf8mb4", "utf-8"),
    63: ("binary", "binary", None),
    83: ("utf8mb3_bin", "utf8mb3", "utf-8"),
    224: ("utf8mb4_unicode_ci", "utf8mb4", "utf-8"),
    255: ("utf8mb4_0900_ai_ci", "utf8mb4", "utf-8"),  # MySQL 8 only
}


@pytest.mark.parametrize("coll_id", sorted(KNOWN))
def test_known_ids(coll_id: int) -> None:
    name, charset, codec = KNOWN[coll_id]
    assert collation_name(coll_id) == name
    assert charset_of(coll_id) == charset
    assert codec_for(coll_id) == codec


def test_one_table_for_values_and_statements() -> None:
    # the value readers and the query decoder read the same functions (no second table)
    assert values.codec_for is _collations.codec_for
    assert getattr(status_vars, "collation_name") is _collations.collation_name  # noqa: B009
    assert getattr(query_event, "decode_text") is _collations.decode_text  # noqa: B009
    # text that must be text: the binary charset and unknown ids read as utf-8
    assert python_codec(63) == "utf-8"
    assert codec_for(99999) == "utf-8" and collation_name(99999) == "collation 99999"
    assert decode_text("é".encode("cp1252"), 8) == "é"
    assert decode_text("é".encode(), 45) == "é"


def test_every_charset_has_a_python_codec() -> None:
    for coll_id in _collations.COLLATIONS:
        codec = codec_for(coll_id)
        if codec is not None:
            "x".encode(codec)  # a codec Python has


@pytest.mark.mysql
def test_table_agrees_with_show_collation(mariadb: object) -> None:
    conn = mariadb.connect()  # type: ignore[attr-defined]
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW COLLATION")
            server = {int(r[2]): (r[0], r[1]) for r in cur.fetchall() if r[2] is not None}
    finally:
        conn.close()
    for coll_id, (name, charset, _) in KNOWN.items():
        if coll_id in server:  # 255 and the other 0900 ids are MySQL's only
            assert server[coll_id] == (name, charset)
    assert {8, 33, 45, 46, 63, 83, 224} <= set(server)
    # every id the server has is in the table, with its name and charset
    for coll_id, (name, charset) in server.items():
        assert collation_name(coll_id) == name, coll_id
        assert charset_of(coll_id) == charset, coll_id
