"""A binlog file read from inside a transaction (a relay log cut mid-transaction: its TABLE_MAP
is in the previous file) gives "unknown context", not damage; a transaction that begins in
the file without its TABLE_MAP is still damage. Bytes of the real MariaDB workload binlog."""

from __future__ import annotations

from pathlib import Path

from binlogscope.drivers.binlog_file import read_binlog_file
from binlogscope.wire.binlog.rows import UNKNOWN_CONTEXT

WORKLOAD = Path(__file__).resolve().parents[2] / "captures" / "mariadb-10.11-workload.000001"


def _pieces() -> tuple[bytes, bytes, bytes, bytes]:
    """(magic + FDE, GTID..ANNOTATE before the TABLE_MAP, the TABLE_MAP, the rest from the
    row event on) of the first row transaction."""
    raw = WORKLOAD.read_bytes()
    evs = list(read_binlog_file(WORKLOAD, record=False))
    fde_end = evs[0].offset + evs[0].size
    i = next(k for k, e in enumerate(evs) if e.type_name.startswith("WRITE_ROWS"))
    tm, rows = evs[i - 1], evs[i]
    assert tm.type_name == "TABLE_MAP_EVENT"
    g = max(k for k in range(i) if evs[k].type_name == "GTID_EVENT")
    return (raw[:fde_end], raw[evs[g].offset:tm.offset], raw[tm.offset:rows.offset],
            raw[rows.offset:])


def test_a_file_that_begins_inside_a_transaction(tmp_path: Path) -> None:
    head, _trx_start, _tm, rest = _pieces()
    p = tmp_path / "relay-bin.000002"
    p.write_bytes(head + rest)
    first = next(e for e in read_binlog_file(p, record=False)
                 if e.type_name.startswith("WRITE_ROWS"))
    assert first.error is not None and first.error.startswith(UNKNOWN_CONTEXT)


def test_a_transaction_begun_in_the_file_without_its_table_map(tmp_path: Path) -> None:
    head, trx_start, _tm, rest = _pieces()
    p = tmp_path / "damaged.000001"
    p.write_bytes(head + trx_start + rest)
    first = next(e for e in read_binlog_file(p, record=False)
                 if e.type_name.startswith("WRITE_ROWS"))
    assert first.error is not None and "no TABLE_MAP" in first.error
    assert not first.error.startswith(UNKNOWN_CONTEXT)
