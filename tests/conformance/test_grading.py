"""The value grading of the conformance cases: what passes, what is non-strict, what fails."""

from __future__ import annotations

from typing import Any

import pytest

from mock_master.conformance.columns import column
from mock_master.conformance.grade import compare_value
from mock_master.conformance.model import Verdict

P, N, F = Verdict.PASS, Verdict.NON_STRICT, Verdict.FAIL


@pytest.mark.parametrize(("sql", "expected", "got", "verdict"), [
    ("DATE", "0000-00-00", "0000-00-00", P),
    ("DATE", "0000-00-00", None, F),  # a zero date is a value, not NULL
    ("DATE", None, None, P),
    ("YEAR", 0, 0, P),
    ("YEAR", 0, 1900, F),
    ("FLOAT", 3.14, 3.140000104904175, P),  # the float32 value as a JSON number
    ("FLOAT", 3.14, "3.14", P),
    ("FLOAT", 3.14, "3.140000104904175", N),  # right value, a double's digits
    ("FLOAT", 3.14, 3.15, F),
    ("DECIMAL(10,2)", "-12.50", "-12.50", P),
    ("DECIMAL(10,2)", "-12.50", "-12.5", N),
    ("DECIMAL(10,2)", "-12.50", -12.5, N),
    ("DECIMAL(30,20)", "0.10000000000000000001", 0.1, F),
    ("BINARY(4)", b"a\0\0\0", {"hex": "61000000"}, P),
    ("BINARY(4)", b"a\0\0\0", {"hex": "61"}, F),
    ("VARCHAR(5) CHARACTER SET ucs2", "hé", {"hex": "006800e9"}, N),
    ("VARCHAR(5) CHARACTER SET utf16", "hé", "栀\ue900", F),
    ("DATETIME(3)", "2024-02-29 12:34:56.789", "2024-02-29T12:34:56.789000", P),
    ("DATETIME(3)", "2024-02-29 12:34:56.789", "2024-02-29 12:34:56.780", F),
    ("TIME(3)", "-12:30:00.250", "-12:30:00.750000", F),
    ("TIMESTAMP(6)", "0000-00-00 00:00:00.000000", "1970-01-01 00:00:00", F),
    ("ENUM('a','b')", "b", "b", P),
    ("ENUM('a','b')", "b", 2, N),
    ("SET('a','b','c')", "a,c", ["c", "a"], P),
    ("SET('a','b','c')", "", None, F),
    ("BIT(8)", 165, 165, P),
    ("BIT(8)", 165, "10100101", N),
    ("JSON", '{"a": [1, 2]}', {"a": [1, 2]}, P),
    ("JSON", '{"a": "x"}', {'{"hex": "61"}': {"hex": "78"}}, F),
    ("INT UNSIGNED", 4294967295, -1, F),
])
def test_compare_value(sql: str, expected: Any, got: Any, verdict: Verdict) -> None:
    v, why = compare_value(column("c", sql), expected, got)
    assert v == verdict, why


def test_hex_strings_are_bytes_for_a_client_that_says_so() -> None:
    col = column("b", "BINARY(2)")
    assert compare_value(col, b"\x00\x01", "0001", bytes_mode="hex")[0] == P
    assert compare_value(col, b"\x00\x01", "0001")[0] == F


def test_a_length_header_one_byte_short_is_caught_from_the_client_writes() -> None:
    """The framing judge reads the client's writes as the relay received them: a
    COM_BINLOG_DUMP whose header says 14 while 15 bytes follow it (python-mysql-replication
    1.0.17 with is_mariadb=True) fails; the same request with a right header passes."""
    from mock_master.conformance.judges import client_framing
    from mock_master.conformance.model import Setup
    from mock_master.conformance.observe import Observation
    from mock_master.diff.capture import Conversation
    from mock_master.scenario.scenarios import Scenario

    def dump(header_len: int) -> bytes:
        payload = (b"\x12" + (4).to_bytes(4, "little") + b"\x00\x00"
                   + (99).to_bytes(4, "little") + b"bin")  # 14 bytes
        payload += b"\x00"  # the 15th byte the header may not count
        return header_len.to_bytes(3, "little") + b"\x00" + payload

    def obs(chunk: bytes) -> Observation:
        conv = Conversation(0, [("client", b"\x01\x00\x00\x00\x0e", 0.0),  # COM_PING
                                ("client", chunk, 0.1)])
        return Observation("x", "mariadb", Setup(Scenario()), [conv], 0.0, [], [], "", 0,
                           False, 0.1, [])

    bad = client_framing(obs(dump(14)))
    assert len(bad) == 1 and bad[0].verdict == Verdict.FAIL
    assert "length header says 14 bytes, but the client wrote 15" in bad[0].text
    assert client_framing(obs(dump(15))) == []


def test_the_evidence_keeps_a_huge_reported_string_short() -> None:
    """A client that reports a 17 MB statement (semisync/ack-multi-packet-event) must not make
    a 17 MB report: each string of the evidence is cut, saying how much was left out."""
    from mock_master.conformance.observe import MAX_TEXT, Observation
    from mock_master.conformance.setup import Setup
    from mock_master.scenario.scenarios import Scenario

    big = "x" * (17 * 1024 * 1024)
    obs = Observation("events/x", "mysql", Setup(Scenario()), [], 0.0,
                      [{"type": "query", "query": big, "_at": 0.1}], [big], "", 0, False, 1.0,
                      [])
    ev = obs.evidence()
    q = ev["client_output"][0]["query"]
    assert len(q) < MAX_TEXT + 100 and q.endswith(f"({len(big) - MAX_TEXT} more characters)")
    assert len(ev["client_other_output"][0]) < MAX_TEXT + 100
    assert obs.lines[0]["query"] == big  # the judges still see what the client reported


def test_the_forms_a_partial_json_update_may_take() -> None:
    """events/partial-json-update: the diff as mysqlbinlog writes it (any column label), as
    operations, or the updated document pass; anything else does not."""
    from mock_master.conformance.catalogue.events import _diff_ok

    ops: list[tuple[int, str, object]] = [(0, "$.age", 41), (1, "$.x", 1)]
    doc = {"age": 41, "name": "Pete", "x": 1}
    text = ("JSON_INSERT(JSON_REPLACE(@2, '$.age', CAST('41' AS JSON)), '$.x', "
            "CAST('1' AS JSON))")
    assert _diff_ok(text, ops, doc) == "the diff in mysqlbinlog's form"
    assert _diff_ok(text.replace("@2", "j"), ops, doc) == "the diff in mysqlbinlog's form"
    assert _diff_ok('{"age": 41, "name": "Pete", "x": 1}', ops, doc) == "the updated document"
    assert _diff_ok([{"op": "REPLACE", "path": "$.age", "value": 41},
                     {"op": "INSERT", "path": "$.x", "value": 1}], ops, doc) \
        == "the diff as operations"
    # the first operation only (python-mysql-replication 1.0.17), the old document, NULL
    assert _diff_ok({"op": "REPLACE", "path": "$.age", "value": 41}, ops, doc) is None
    assert _diff_ok('{"age": 40, "name": "Pete"}', ops, doc) is None
    assert _diff_ok(None, ops, doc) is None


@pytest.mark.parametrize(("reported", "verdict"), [
    ({"id": 1}, P),  # the column the MINIMAL image leaves out: missing
    ({"id": 1, "v": None}, N),  # reported as NULL: a reader cannot tell it from a NULL value
    ({"id": 1, "v": "x"}, F),
    ({"id": 2}, F),
])
def test_a_column_not_in_a_minimal_image_is_missing_not_null(reported: dict[str, Any],
                                                              verdict: Verdict) -> None:
    from binlogscope.wire.binlog.context import TableMap
    from mock_master.conformance.columns import columns
    from mock_master.conformance.grade import judge_rows
    from mock_master.conformance.observe import Observation
    from mock_master.conformance.setup import ABSENT, ExpectedRows, Setup
    from mock_master.scenario.scenarios import Scenario

    t = TableMap(1, "conf", "t", columns([("id", "INT"), ("v", "VARCHAR(20)")]))
    setup = Setup(Scenario(), expected=[ExpectedRows("delete", t, [(1, ABSENT)])])
    line = {"type": "delete", "schema": "conf", "table": "t", "rows": [{"before": reported}],
            "_at": 0.1}
    obs = Observation("events/x", "mysql", setup, [], 0.0, [line], [], "", 0, False, 1.0, [])
    worst = max((c.verdict for c in judge_rows(obs)), key=lambda v: [P, N, F].index(v))
    assert worst == verdict
