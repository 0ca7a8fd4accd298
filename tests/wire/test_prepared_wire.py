"""Binary-protocol pieces (wire/prepared.py) and MariaDB's metadata capabilities in result sets
(wire/results.py): encode -> decode round trips and the bytes MariaDB 10.11 sends."""

from __future__ import annotations

from binlogscope.wire.constants import CapabilityFlag
from binlogscope.wire.prepared import (
    StmtPrepareOk,
    decode_stmt_execute,
    encode_binary_row,
    encode_stmt_prepare_ok,
    sql_literal,
)
from binlogscope.wire.reader import ByteReader
from binlogscope.wire.results import (
    MARIADB_CACHE_METADATA as CAP_MARIADB_CACHE_METADATA,
)
from binlogscope.wire.results import (
    MARIADB_EXTENDED_METADATA as CAP_MARIADB_EXTENDED_METADATA,
)
from binlogscope.wire.results import (
    ColumnCount,
    ColumnDefinition41,
    decode_column_count,
    decode_column_definition41,
    encode_column_count,
    encode_column_definition41,
)

P41 = int(CapabilityFlag.CLIENT_PROTOCOL_41)


def test_prepare_ok_bytes_as_mariadb() -> None:
    # captured from MariaDB 10.11: statement 1, 3 columns, 2 parameters
    assert encode_stmt_prepare_ok(StmtPrepareOk(1, 3, 2)).hex() == "000100000003000200000000"


def test_binary_row_as_mariadb() -> None:
    cols = [ColumnDefinition41("a", 253), ColumnDefinition41("b", 8, flags=0x20),
            ColumnDefinition41("c", 252)]
    # captured: ('c', 3, 'NULL') and a NULL in the third column
    assert encode_binary_row(cols, (b"c", b"3", b"NULL")).hex() == \
        "000001630300000000000000044e554c4c"
    assert encode_binary_row(cols, (b"c", b"3", None)).hex() == "001001630300000000000000"


def test_execute_parameters_decoded_by_their_types() -> None:
    body = (b"\x07\x00\x00\x00" + b"\x00" + b"\x01\x00\x00\x00" + b"\x04"  # 3rd is NULL
            + b"\x01" + b"\xfd\x00" + b"\x08\x80" + b"\x06\x00" + b"\x04shop"
            + (2**63 + 5).to_bytes(8, "little"))
    ex = decode_stmt_execute(body, 3)
    assert ex.statement_id == 7 and ex.params == (b"shop", 2**63 + 5, None)
    again = decode_stmt_execute(b"\x07\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x02ab"
                                + (1).to_bytes(8, "little") + b"", 3, ex.types)
    assert again.params == (b"ab", 1, None)
    assert sql_literal(b"it's") == "'it\\'s'" and sql_literal(None) == "NULL"


def test_mariadb_metadata_capabilities_in_result_sets() -> None:
    col = ColumnDefinition41("COLUMN_NAME", 253, "information_schema", "COLUMNS", "COLUMNS",
                             "COLUMN_NAME", "def", 45, 256, 0x1001, 0)
    plain = encode_column_definition41(col, P41)
    ext = encode_column_definition41(col, P41 | CAP_MARIADB_EXTENDED_METADATA)
    assert ext == plain.replace(b"\x0bCOLUMN_NAME\x0c", b"\x0bCOLUMN_NAME\x00\x0c")
    assert decode_column_definition41(ByteReader(ext),
                                      P41 | CAP_MARIADB_EXTENDED_METADATA) == col
    typed = ColumnDefinition41("j", 252, extended=((1, "json"),))
    caps = P41 | CAP_MARIADB_EXTENDED_METADATA
    assert decode_column_definition41(ByteReader(encode_column_definition41(typed, caps)),
                                      caps) == typed
    for follows in (0, 1):
        raw = encode_column_count(ColumnCount(3, follows), P41 | CAP_MARIADB_CACHE_METADATA)
        assert raw == bytes([3, follows])
        assert decode_column_count(ByteReader(raw), P41 | CAP_MARIADB_CACHE_METADATA) == \
            ColumnCount(3, follows)
    assert encode_column_count(ColumnCount(3), P41) == b"\x03"
