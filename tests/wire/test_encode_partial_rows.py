"""MySQL's PARTIAL_UPDATE_ROWS encoded (JsonDiff values in the after image): the decoder reads
back what was encoded, and the real MySQL 8.0.22 event of ../shared/fixtures
(json.binlog.000001, binlog_row_value_options=PARTIAL_JSON, binlog_row_image=MINIMAL) is
re-encoded byte for byte from its decoded rows."""

from __future__ import annotations

import re
from typing import Any

import pytest

from binlogscope.wire.binlog.context import DecodeContext, TableMap
from binlogscope.wire.binlog.decode import decode_event
from binlogscope.wire.binlog.encode_events import encode_event
from binlogscope.wire.binlog.encode_rows import (
    JSON_INSERT,
    JSON_REMOVE,
    JSON_REPLACE,
    JsonDiff,
    encode_rows_event,
    encode_table_map,
    rows_event,
    rows_event_type,
)
from binlogscope.wire.binlog.rows import UPDATE, RowsEvent
from binlogscope.wire.binlog.types import ChecksumAlg
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.types import EventType as E
from mock_master.history.loaders import load_binlog_files
from tests.conftest import fixtures_dir


def _decode(tm: TableMap, body: bytes, record: bool) -> Any:
    ctx = DecodeContext(fde_seen=True, verify_checksums=False)
    assert decode_event(encode_event(E.TABLE_MAP_EVENT, encode_table_map(tm), checksum=False),
                        ctx).error is None
    d = decode_event(encode_event(E.PARTIAL_UPDATE_ROWS_EVENT, body, checksum=False), ctx,
                     record=record)
    assert d.error is None, d.error
    return d.body


@pytest.mark.parametrize("record", [False, True])
def test_a_partial_update_round_trips(record: bool) -> None:
    from mock_master.conformance.columns import columns

    tm = TableMap(0x20, "conf", "t", columns([("id", "INT"), ("j", "JSON"),
                                              ("name", "VARCHAR(20)")]), primary_key=[0])
    diff = JsonDiff([(JSON_REPLACE, "$.age", 25), (JSON_INSERT, "$.x", [1, "a"]),
                     (JSON_REMOVE, "$.data", None)])
    ev = rows_event(tm, UPDATE, [((1, None, None), (None, diff, "Joe")),
                                 ((2, None, None), (None, '{"a": 1}', "Sue"))])
    ev.columns, ev.columns_after, ev.partial = ["id"], ["j", "name"], True
    assert rows_event_type(UPDATE, 2, partial=True) == E.PARTIAL_UPDATE_ROWS_EVENT
    rows = _decode(tm, encode_rows_event(ev, tm), record).rows
    assert rows[0] == {"before": {"id": 1}, "after": {
        "j": "JSON_REMOVE(JSON_INSERT(JSON_REPLACE(j, '$.age', CAST('25' AS JSON)), '$.x', "
             "CAST('[1, \"a\"]' AS JSON)), '$.data')", "name": "Joe"}}
    assert rows[1] == {"before": {"id": 2}, "after": {"j": '{"a": 1}', "name": "Sue"}}


_DIFF = re.compile(r"^JSON_REPLACE\((@\d+), '([^']*)', CAST\('([^']*)' AS JSON\)\)$")


def test_the_real_mysql_event_re_encodes_byte_for_byte() -> None:
    path = fixtures_dir() / "blackbeam__rust_mysql_common/test-data/binlogs/json.binlog.000001"
    if not path.exists():
        pytest.fail(f"fixture missing: {path}")
    f = load_binlog_files([path]).files[0]
    import json

    found = 0
    ctx = DecodeContext(checksum_alg=ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32 if f.checksum
                        else ChecksumAlg.BINLOG_CHECKSUM_ALG_OFF, fde_seen=True,
                        verify_checksums=False)
    for raw in f.events:
        d = decode_event(raw, ctx, record=raw[4] == E.PARTIAL_UPDATE_ROWS_EVENT)
        if raw[4] != E.PARTIAL_UPDATE_ROWS_EVENT:
            continue
        body_raw = raw[19:-4] if f.checksum else raw[19:]
        real = d.body
        assert isinstance(real, RowsEvent)
        tm = ctx.tables[real.table_id]
        assert d.error is None and real.partial
        rows = []
        for r in real.rows:
            after: dict[str, Any] = {}
            for k, v in r["after"].items():
                m = _DIFF.match(v) if isinstance(v, str) else None
                col = next(c for c in tm.columns if c.label == k)
                if m and col.type == T.MYSQL_TYPE_JSON:
                    after[k] = JsonDiff([(JSON_REPLACE, m.group(2), json.loads(m.group(3)))])
                else:
                    after[k] = v
            rows.append({"before": r["before"], "after": after})
        ev = RowsEvent(real.table_id, real.schema, real.table, UPDATE, rows, flags=real.flags,
                       version=2, columns=list(real.columns),
                       columns_after=list(real.columns_after or []), partial=True,
                       extra_data=list(real.extra_data))
        assert encode_rows_event(ev, tm) == body_raw
        found += 1
    assert found == 1
