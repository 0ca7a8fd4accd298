"""The Spark stream's task (``read_slice``) with ``semiSync``: a semi-sync dump's thread the
source would not KILL is one warning line on the task's stderr (the executor's log), as
``export --live`` prints it; the slice's rows stand."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from binlogscope.drivers.live import replica as live_replica
from binlogscope.export.arrow import full_schema
from binlogscope.export.spark.stream import StreamSlice, read_slice
from binlogscope.export.spark.stream_options import StreamOptions
from binlogscope.wire.binlog.types import EventType
from tests.watch_support import WORKLOAD, RefusedKill, acking_master

pytestmark = pytest.mark.network


@pytest.fixture
def master() -> Iterator[Any]:
    with acking_master() as mm:
        yield mm


def _last_xid_end() -> int:
    data = WORKLOAD.read_bytes()
    p, end = 4, 0
    while p + 19 <= len(data):
        size = int.from_bytes(data[p + 9:p + 13], "little")
        if data[p + 4] == EventType.XID_EVENT:
            end = p + size
        p += size
    assert end
    return end


def _slice(master: Any) -> tuple[StreamOptions, StreamSlice]:
    name = master.master.stream.files[0].name
    opts = StreamOptions(host="127.0.0.1", port=master.port, user="repl", ssl_mode="DISABLED",
                         semi_sync=True, table="events")
    return opts, StreamSlice(0, name, 4, name, _last_xid_end(), None)


@pytest.mark.parametrize("refused", [True, False], ids=["refused", "taken"])
def test_a_refused_kill_is_one_warning_line_of_the_stream_task(
        master: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        refused: bool) -> None:
    if refused:
        monkeypatch.setattr(live_replica, "InformationSchema", RefusedKill)
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    opts, part = _slice(master)
    rows = sum(b.num_rows for b in read_slice(opts, part, full_schema("events")))
    assert rows > 100  # the slice's rows stand
    err = capsys.readouterr().err
    warnings = [x for x in err.splitlines() if "could not KILL" in x]
    assert len(warnings) == (1 if refused else 0), err
    if refused:
        assert warnings[0].startswith("binlogscope: spark stream: repl@127.0.0.1:")
        assert "ERR 1095" in warnings[0] and "replpass" not in err
