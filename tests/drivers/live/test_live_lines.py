"""``live --json`` and ``live --brief`` with the stream's event lines written by the native
kernel (``render/line_layout.py`` ``packet_lines(None)``, ``brief_lines``, ``session/packets.py``
``stream_run``, ``drivers/live/lines.py``) against the Python path (``BINLOGSCOPE_PURE_PYTHON``:
a ``PacketDecoded`` per event -> ``live_item_json`` -> the serializer, ``live_item_text``),
over a real MariaDB stream: the same lines but for the arrival-time values (and the run's
connection id and replica uuid). (``--semi-sync --non-blocking`` does not end against the
test server on either path, so the semi-sync header's lines are held equal by the capture
tests: a replica's are declined when they ask for an ACK.)"""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest

from binlogscope.cli.main import main
from binlogscope.render import line_layout
from tests.native_switch import NativeSwitch
from tests.watch_support import run_sql

pytestmark = pytest.mark.mysql

#: the arrival-time values (a packet's wire_time; a state item's times) and the server's
#: connection id of each run
_TIMES = re.compile(rb'"(wire_time|time|since|seconds|connection_id)":[-0-9.e]+')
#: the replica's uuid of each run (SET @slave_uuid)
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _first_binlog(db: Any) -> str:
    return str(run_sql(db, "SHOW BINARY LOGS")[0][0])


def _live_json(db: Any, monkeypatch: pytest.MonkeyPatch, *extra: str,
               mode: str = "--json") -> tuple[bytes, int, str, int]:
    """``live --json --non-blocking`` (``mode``: or ``--brief``) from the first binlog, in
    process: the output (the arrival times blanked), the status, the messages, the events
    the kernel wrote."""
    taken = [0]
    maker = "packet_lines" if mode == "--json" else "brief_lines"
    real = getattr(line_layout, maker)

    def counting(*flow: Any) -> Any:
        got = real(*flow)
        if got is None:
            return None
        line = got[0]

        class Counting:
            def __call__(self, buf: bytes, pos: int, base: int) -> Any:
                r = line(buf, pos, base)
                taken[0] += r is not None
                return r

            def __getattr__(self, name: str) -> Any:
                return getattr(line, name)

            def __setattr__(self, name: str, value: Any) -> None:
                setattr(line, name, value)

        wrapped = Counting()
        got[1].line = wrapped  # type: ignore[assignment]
        return wrapped, got[1]

    monkeypatch.setenv("MYSQL_PWD", db.repl_password)
    monkeypatch.setenv("HOME", str(db.dir))
    monkeypatch.setattr(line_layout, maker, counting)
    # (a UTF-8 text stream over bytes, as stdout to a pipe or a file: lines go to its buffer)
    raw = io.BytesIO()
    out, err = io.TextIOWrapper(raw, encoding="utf-8", newline="\n"), io.StringIO()
    status = main(["live", "--host", db.host, "--port", str(db.port), "-u", db.repl_user,
                   "--ssl-mode", "DISABLED", mode, "--non-blocking", "--heartbeat", "5",
                   "--server-id", "4242",
                   "--start", f"{_first_binlog(db)}:4", *extra], out, err)
    out.flush()
    text = _UUID.sub(b"uuid", _TIMES.sub(rb'"\1":0', raw.getvalue()))
    return text, status, err.getvalue(), taken[0]


def _both(db: Any, monkeypatch: pytest.MonkeyPatch, native: NativeSwitch, *extra: str,
          mode: str = "--json") -> int:
    fast, status, err, taken = _live_json(db, monkeypatch, *extra, mode=mode)
    with native.off():
        pure, pure_status, pure_err, none = _live_json(db, monkeypatch, *extra, mode=mode)
    assert none == 0
    assert (status, err) == (pure_status, pure_err)
    if mode == "--brief":  # (the escaped statement, as the kernel wrote it)
        assert rb"'a\x01b\u202ec'" in fast
        assert rb"live_\u202e 1 row" in fast
    fl, pl = fast.splitlines(), pure.splitlines()
    assert len(fl) == len(pl)
    for a, b in zip(fl, pl, strict=True):
        assert a == b
    if mode == "--json":
        assert all(isinstance(json.loads(x), dict) for x in fl)
    return taken


def _workload(db: Any) -> None:
    run_sql(db, "CREATE TABLE IF NOT EXISTS live_lines (id INT PRIMARY KEY, v VARCHAR(20), "
                "d DECIMAL(8,2), t DATETIME(3))",
            *(f"REPLACE INTO live_lines VALUES ({i}, 'v{i}', {i}.25, '2026-11-28 10:00:0{i % 10}')"
              for i in range(40)),
            "UPDATE live_lines SET v = CONCAT(v, 'x') WHERE id < 10",
            # (a statement a --brief line shows escaped: the Python path's; a table whose name
            # it shows escaped: the kernel's line goes through the text path)
            "REPLACE INTO live_lines VALUES (90, 'a\x01b\u202ec', 1.5, NULL)",
            "REPLACE INTO live_lines VALUES (91, 'käse€ 中文', 2.5, NULL)",
            "CREATE TABLE IF NOT EXISTS `live_\u202e` (id INT PRIMARY KEY)",
            "REPLACE INTO `live_\u202e` VALUES (1), (2)",  # (its first: the Python path)
            "REPLACE INTO `live_\u202e` VALUES (3)",
            "DELETE FROM live_lines WHERE id >= 35")


@pytest.mark.parametrize("mode", ["--json", "--brief"])
def test_kernel_lines_equal_pure_over_a_real_stream(mariadb: Any, native: NativeSwitch,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    mode: str) -> None:
    native.require()
    _workload(mariadb)
    assert _both(mariadb, monkeypatch, native, mode=mode) > 40


def test_a_brief_line_the_renderer_changed_turns_the_kernel_off(
        mariadb: Any, native: NativeSwitch, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``--brief`` template is the text renderer's: a renderer that writes another head
    (here: the sequence id in hex) has no template, and the lines are the renderer's."""
    from binlogscope.render import text as render_text
    from binlogscope.wire import packet

    native.require()
    _workload(mariadb)
    real = packet.packet_title

    def hex_seq(kind: str, value: Any, seq: int, payload_length: int) -> str:
        return real(kind, value, seq, payload_length).replace(f"(seq {seq},", f"(seq {seq:#x},")

    monkeypatch.setattr(render_text, "packet_title", hex_seq)
    assert line_layout.brief_template() is None
    out, status, _, taken = _live_json(mariadb, monkeypatch, mode="--brief")
    assert status == 0 and taken == 0 and b"(seq 0x" in out


def _ids(items: list[Any], table: str) -> list[int]:
    """The row ids of ``table``'s WRITE_ROWS events as the items' ``--json`` lines show them
    (the kernel's lines as written, the others through ``live_item_json``)."""
    from binlogscope.render.json_out import dumps_line
    from binlogscope.render.shapes import live_item_json
    from binlogscope.session.events import LinesWritten

    ids: list[int] = []
    for item in items:
        if type(item.event) is LinesWritten:
            texts = item.event.data.splitlines()
        else:
            obj = live_item_json(item)
            texts = [] if obj is None else [dumps_line(obj)]
        for text in texts:
            o = json.loads(text)
            if o.get("table") == table and str(o.get("event_type")).startswith("WRITE_ROWS"):
                ids += [r["after"]["id"] for r in o["rows"]]
    return ids


def test_a_killed_dump_resumes_once_over_the_kernels_lines(mariadb: Any, native: NativeSwitch
                                                           ) -> None:
    """KILL the dump thread while a 10k-row transaction streams as the kernel's lines: the
    replica reconnects at the transaction start (its restart point moved over the lines) and
    skips what it delivered - every row once."""
    import functools

    from binlogscope.drivers.live.options import ConnectionOptions
    from binlogscope.drivers.live.replica import LiveReplica, LiveSettings
    from binlogscope.render.line_layout import packet_lines
    from binlogscope.session.events import LinesWritten
    from tests.watch_support import stream_killing_the_dump

    native.require()
    run_sql(mariadb, "DROP TABLE IF EXISTS live_lines_kill",
            "CREATE TABLE live_lines_kill (id INT PRIMARY KEY, pad VARCHAR(2000))")
    name, pos = run_sql(mariadb, "SHOW MASTER STATUS")[0][:2]
    pad = "x" * 2000
    run_sql(mariadb, "BEGIN", *("INSERT INTO live_lines_kill VALUES " + ",".join(
        f"({i}, '{pad}')" for i in range(k, k + 1000)) for k in range(0, 10_000, 1000)),
        "COMMIT")
    conn = ConnectionOptions(host=mariadb.host, port=mariadb.port, user=mariadb.repl_user,
                             password=mariadb.repl_password, ssl_mode="DISABLED")
    settings = LiveSettings(conn=conn, start=f"{name}:{pos}", store_size=4, stream_tree=False)
    settings.json_lines = functools.partial(packet_lines, None)
    rep = LiveReplica(settings)
    rep.start()
    got = stream_killing_the_dump(mariadb, rep, lambda it: len(_ids([it], "live_lines_kill")))
    assert any(type(i.event) is LinesWritten for i in got)
    assert sorted(_ids(got, "live_lines_kill")) == list(range(10_000))
