"""Every real binlog in ../shared/fixtures decodes: no error node (except the deliberately damaged
ones, which show the error at the damage after every complete event), every tree tiles its event,
and the fast path gives the same values as the tree path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import (
    DAMAGED_FIXTURES,
    FIXTURES,
    assert_tiles,
    binlog_fixtures,
    decode_bytes,
    event_shape,
    read_all,
)

FILES = binlog_fixtures()


def _id(p: Path) -> str:
    return str(p.relative_to(FIXTURES))


def test_corpus_is_there() -> None:
    # the MANIFEST lists 90 binlog files; a few are not binlogs by magic (dumps, damaged copies)
    assert len(FILES) >= 80


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_fixture_decodes(path: Path) -> None:
    data = read_all(path)
    events, dec = decode_bytes(data)
    assert dec.fatal is None
    assert events, "no events"
    for ev in events:
        assert_tiles(ev)
    errors = [(e.offset, e.type_name, e.error) for e in events if e.error]
    error_nodes = [n for e in events if e.node for n in e.node.errors()]
    if path.name in DAMAGED_FIXTURES:
        assert [off for off, _, _ in errors] == DAMAGED_FIXTURES[path.name]
        assert {n.error for n in error_nodes} <= {e for _, _, e in errors}
    else:
        assert errors == []
        assert error_nodes == []
        assert sum(e.size for e in events) + 4 == len(data)


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_fast_path_equals_tree_path(path: Path) -> None:
    data = read_all(path)
    tree, _ = decode_bytes(data, record=True)
    fast, _ = decode_bytes(data, record=False)
    assert [event_shape(e) for e in fast] == [event_shape(e) for e in tree]
