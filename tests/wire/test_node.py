from __future__ import annotations

import pytest

from binlogscope.wire.node import Node, check_tiling, json_value
from binlogscope.wire.reader import ByteReader, ShortRead


def _sample() -> Node:
    r = ByteReader(bytes.fromhex("0102 03040506 07"), base=100)
    r.u16("a", doc="first")
    with r.group("g"):
        r.u8("b")
        r.raw("c", 3)
    r.u8("d")
    return r.finish("root")


def test_spans_are_absolute_and_tile() -> None:
    root = _sample()
    assert (root.offset, root.length) == (100, 7)
    assert [(c.name, c.offset, c.length) for c in root.children] == [
        ("a", 100, 2), ("g", 102, 4), ("d", 106, 1)]
    assert root.find("g.c").value == bytes.fromhex("040506")
    assert root.find("a").value == 0x0201
    assert check_tiling(root) == []


def test_at_returns_deepest_node() -> None:
    root = _sample()
    assert root.at(103).name == "c"  # type: ignore[union-attr]
    assert root.at(102).name == "b"  # type: ignore[union-attr]
    assert root.at(99) is None
    assert root.at(107) is None


def test_find_missing_raises() -> None:
    with pytest.raises(KeyError):
        _sample().find("g.zz")
    assert _sample().get("nope") is None


def test_check_tiling_reports_gaps_and_overlaps() -> None:
    gap = Node("r", 0, 4, children=(Node("a", 0, 1), Node("b", 2, 2)))
    assert any("gap" in p for p in check_tiling(gap))
    overlap = Node("r", 0, 4, children=(Node("a", 0, 2), Node("b", 1, 3)))
    assert any("overlap" in p for p in check_tiling(overlap))
    short = Node("r", 0, 4, children=(Node("a", 0, 2),))
    assert any("children end" in p for p in check_tiling(short))


def test_fast_mode_builds_no_nodes_and_same_values() -> None:
    data = bytes.fromhex("fc e8 03 05 68 65 6c 6c 6f 41 42 00")
    values = []
    for record in (True, False):
        r = ByteReader(data, record=record)
        values.append((r.lenenc("n"), r.lenenc_str("s"), r.nul_str("z")))
        assert (r.children() != []) is record
    assert values[0] == values[1] == (1000, "hello", "AB")


def test_short_read_names_offset_and_field() -> None:
    r = ByteReader(b"\x01\x02", base=50)
    r.u8("x")
    with pytest.raises(ShortRead) as ei:
        r.u32("log_pos")
    assert ei.value.offset == 51
    assert "log_pos" in str(ei.value) and "at offset 51" in str(ei.value)


def test_partial_claims_rest_as_error_leaf() -> None:
    r = ByteReader(b"\x01\x02\x03", base=10)
    r.begin("g")
    r.u8("x")
    try:
        r.u32("y")
    except ShortRead as exc:
        node = r.partial("root", exc)
    assert node.error and "at offset 11" in node.error
    assert check_tiling(node) == []
    err = node.find("g.error")
    assert (err.offset, err.length, err.value) == (11, 2, b"\x02\x03")


def test_lenenc_all_widths() -> None:
    r = ByteReader(bytes.fromhex("fa fb fc 0100 fd 010203 fe 0102030405060708"))
    assert [r.lenenc(str(i)) for i in range(5)] == [
        250, None, 1, 0x030201, 0x0807060504030201]
    with pytest.raises(ValueError, match="0xFF"):
        ByteReader(b"\xff").lenenc("bad")


def test_json_value() -> None:
    assert json_value(b"\x01\xff") == "01ff"
    assert json_value({"a": [1, b"\x00"]}) == {"a": [1, "00"]}
