"""Records -> table rows: transactions (GTID/XID/commit time), row images, redaction."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from binlogscope.export.mapper import TableMapper
from binlogscope.export.packets import redact_payload
from binlogscope.export.records import (
    BinlogFileSource,
    EventRecord,
    PacketRecord,
    SourceError,
    WrittenRun,
)
from binlogscope.wire.binlog.coords import statement_kind

FIX = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
CRC32 = FIX / "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.checksum-crc32"
BB = FIX / "blackbeam__rust_mysql_common/test-data/binlogs"


def _map(path: Path) -> dict[str, list[tuple[tuple[str, ...], dict[str, Any]]]]:
    out: dict[str, list[tuple[tuple[str, ...], dict[str, Any]]]] = {
        "events": [], "rows": [], "packets": []}
    mapper = TableMapper(lambda t, p, r: out[t].append((p, r)))
    for rec in BinlogFileSource([str(path)]).records():
        if isinstance(rec, WrittenRun):  # (the native kernel read it)
            mapper.written(rec)
        elif isinstance(rec, EventRecord):
            mapper.event(rec)
        else:
            mapper.input_done()
    assert mapper.at_boundary
    return out


def test_every_event_once_in_file_order_with_its_transaction() -> None:
    out = _map(CRC32)
    events = [r for _, r in out["events"]]
    assert len(events) == 303
    # no reordering: each partition's rows (a part file's) in file order
    for part in {p for p, _ in out["events"]}:
        offsets = [(r["offset"], r["inner_index"] or 0) for p, r in out["events"] if p == part]
        assert offsets == sorted(offsets), part
    assert len({e["offset"] for e in events}) == len(events)
    # 60 transactions: ANONYMOUS_GTID, BEGIN, TABLE_MAP, rows, XID
    xids = [e for e in events if e["event_type"] == "XID_EVENT"]
    assert len(xids) == 60
    by_trx: dict[int, list[dict[str, Any]]] = {}
    for e in sorted(events, key=lambda e: e["offset"]):
        if e["trx_offset"] is not None:
            by_trx.setdefault(e["trx_offset"], []).append(e)
    assert len(by_trx) == 60
    for start, evs in by_trx.items():
        assert evs[0]["offset"] == start
        assert evs[0]["event_type"] == "ANONYMOUS_GTID_LOG_EVENT"
        assert evs[-1]["event_type"] == "XID_EVENT"
        assert {e["xid"] for e in evs} == {evs[-1]["xid"]}  # XID known on every event
    # outside transactions: FDE, PREVIOUS_GTIDS, ROTATE
    assert sorted(e["event_type"] for e in events if e["trx_offset"] is None) == [
        "FORMAT_DESCRIPTION_EVENT", "PREVIOUS_GTIDS_LOG_EVENT", "ROTATE_EVENT"]


def test_rows_carry_xid_and_commit_time_of_their_transaction() -> None:
    out = _map(CRC32)
    events = [r for _, r in out["events"]]
    xid_of = {e["trx_offset"]: e for e in events if e["event_type"] == "XID_EVENT"}
    rows = [r for _, r in out["rows"]]
    # the counts `binlogscope file --json` gives for this file
    assert Counter(r["operation"] for r in rows) == Counter(INSERT=34, UPDATE=23, DELETE=6)
    for r in rows:
        commit = xid_of[r["trx_offset"]]
        assert r["xid"] == commit["xid"]
        assert r["commit_timestamp"] == commit["timestamp"]
        assert r["gtid"] is None  # anonymous GTIDs are not GTIDs
    # the first row change, checked by hand against `binlogscope file --json`
    first = rows[0]
    assert (first["offset"], first["operation"], first["table"]) == (384, "INSERT", "folder")
    assert first["binlog_file"] == "mysql-bin.checksum-crc32"


def test_update_images_are_text_maps_and_typed_json() -> None:
    out = _map(CRC32)
    upd = next(r for _, r in out["rows"] if r["operation"] == "UPDATE")
    assert upd["before"] is not None and upd["after"] is not None
    import json

    before = json.loads(upd["before_json"])
    assert [k for k, _ in upd["before"]] == list(before)
    for (k, text), v in zip(upd["before"], before.values(), strict=True):
        if isinstance(v, int) and not isinstance(v, bool):
            assert text == str(v), k
        elif isinstance(v, str):
            assert text == v, k
        elif v is None:
            assert text is None


def test_mariadb_gtid_without_begin_groups_rows() -> None:
    out = _map(BB / "mariadb-bin.000001")
    rows = [r for _, r in out["rows"]]
    assert len(rows) == 2
    for r in rows:
        assert r["gtid"] is not None and r["gtid"].count("-") == 2  # domain-server-seq
        assert r["xid"] is not None
        assert r["pk_columns"] is not None  # FULL metadata names the primary key
        assert r["pk"] is not None and [k for k, _ in r["pk"]] == r["pk_columns"]
    gtids = {r["gtid"] for r in rows}
    assert len(gtids) == 2


def test_transaction_payload_inner_events_are_exported() -> None:
    out = _map(BB / "transaction_compression.000001")
    events = [r for _, r in out["events"]]
    inner = sorted((e for e in events if e["inner_index"] is not None),
                   key=lambda e: e["inner_index"])
    assert [e["event_type"] for e in inner] == [
        "QUERY_EVENT", "TABLE_MAP_EVENT", "WRITE_ROWS_EVENT", "XID_EVENT"]
    assert [e["inner_index"] for e in inner] == [0, 1, 2, 3]
    payload = next(e for e in events if e["event_type"] == "TRANSACTION_PAYLOAD_EVENT")
    assert {e["offset"] for e in inner} == {payload["offset"]}
    rows = [r for _, r in out["rows"]]
    assert rows and all(r["inner_index"] == 2 for r in rows)
    assert all(r["xid"] == inner[-1]["xid"] is not None for r in rows)


@pytest.mark.parametrize(("query", "kind"), [
    ("BEGIN", "BEGIN"), ("  begin", "BEGIN"), ("START TRANSACTION", "BEGIN"),
    ("XA START 'x'", "BEGIN"), ("COMMIT", "END"), ("ROLLBACK", "END"),
    ("ROLLBACK TO SAVEPOINT s", "OTHER"), ("XA COMMIT 'x'", "END"), ("XA END 'x'", "OTHER"),
    ("/* c */ COMMIT", "END"), ("CREATE TABLE t (a int)", "OTHER"), (None, "OTHER"),
])
def test_statement_kind(query: str | None, kind: str) -> None:
    assert statement_kind(query) == kind  # (the one definition the mapper and coordinates use)


def _pkt(kind: str, payload: bytes, command: str | None = None) -> PacketRecord:
    return PacketRecord(0, "cap.pcap", "pcap", "client", 1, len(payload), kind,
                        command=command, payload=payload, time=1_700_000_000.5)


def test_redaction_hook_never_exports_auth_material() -> None:
    assert redact_payload(_pkt("HANDSHAKE", b"\x0a5.7\x00scramble")) is None
    assert redact_payload(_pkt("HANDSHAKE_RESPONSE", b"user\x00proof")) is None
    assert redact_payload(_pkt("AUTH_SWITCH_RESPONSE", b"proof")) is None
    assert redact_payload(_pkt("COMMAND", b"\x11user", "COM_CHANGE_USER")) is None
    assert redact_payload(_pkt("COMMAND", b"\x03SET PASSWORD = 'x'", "COM_QUERY")) is None
    assert redact_payload(_pkt("COMMAND", b"\x03SELECT 1", "COM_QUERY")) == b"\x03SELECT 1"


def test_packet_rows_and_no_raw() -> None:
    got: list[tuple[str, tuple[str, ...], dict[str, Any]]] = []
    TableMapper(lambda t, p, r: got.append((t, p, r))).packet(_pkt("OK", b"\x00\x00\x00"))
    TableMapper(lambda t, p, r: got.append((t, p, r)), no_raw=True).packet(
        _pkt("OK", b"\x00\x00\x00"))
    TableMapper(lambda t, p, r: got.append((t, p, r))).packet(_pkt("HANDSHAKE", b"secret"))
    assert [g[0] for g in got] == ["packets"] * 3
    assert got[0][1] == ("2023-11-14",)
    assert got[0][2]["time"] == 1_700_000_000_500_000
    assert [g[2]["payload"] for g in got] == [b"\x00\x00\x00", None, None]


def test_source_resolves_directories_and_reports_missing(tmp_path: Path) -> None:
    (tmp_path / "b.000002").write_bytes(CRC32.read_bytes())
    (tmp_path / "a.000001").write_bytes(CRC32.read_bytes())
    (tmp_path / "notes.txt").write_text("not a binlog")
    src = BinlogFileSource([str(tmp_path)])
    assert [Path(p).name for p in src.inputs()] == ["a.000001", "b.000002"]
    with pytest.raises(SourceError, match="no such file"):
        BinlogFileSource([str(tmp_path / "missing")])


def test_a_transaction_over_the_byte_limit_is_written_as_it_goes() -> None:
    """Held rows stand for their events' bytes: a transaction holding more than
    max_pending_bytes goes to the writer at once (its rows then lack the XID, as documented)."""
    out: dict[str, list[dict[str, Any]]] = {"events": [], "rows": [], "packets": []}
    mapper = TableMapper(lambda t, p, r: out[t].append(r), max_pending_bytes=1)
    for rec in BinlogFileSource([str(CRC32)]).records():
        if isinstance(rec, WrittenRun):
            mapper.written(rec)
        elif isinstance(rec, EventRecord):
            mapper.event(rec)
    assert len(out["rows"]) == 63
    assert all(r["xid"] is None for r in out["rows"])
    assert all(e["xid"] is not None for e in out["events"] if e["event_type"] == "XID_EVENT")
