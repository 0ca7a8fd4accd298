"""``locate`` against the real server's own answers: every event boundary of MariaDB's binlog
files (``SHOW BINLOG EVENTS``: start, end) and the GTID position there (``BINLOG_GTID_POS()``),
positions that are not boundaries (NULL), every GTID's transaction; over the files on disk and
over the live server."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from binlogscope.diagnose.locate import Archive, at_gtid, at_position, locate_live
from binlogscope.diagnose.walk import ServerUrl
from tests.ci_support import unavailable
from tests.mariadb_server import MariaDB, ServerStartError, sql, start, stop

pytestmark = [pytest.mark.mysql, pytest.mark.network]


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    """A server of this module's own: its second GTID domain and extra server id stay out of
    the shared server's GTID state (other tests read it as one domain)."""
    d = tmp_path_factory.mktemp("locate-server")
    try:
        server = start(d)
    except ServerStartError as exc:
        unavailable(f"MariaDB could not be started: {exc}")
    try:
        yield server
    finally:
        stop(d)


@pytest.fixture(scope="module")
def history(own: MariaDB) -> Iterator[tuple[list[str], dict[str, list[tuple[Any, ...]]]]]:
    """Closed binlog files holding two GTID domains, two server ids in one domain, DDL,
    multi-statement transactions; with SHOW BINLOG EVENTS of each."""
    sql(own, "FLUSH BINARY LOGS")
    first = sql(own, "SHOW MASTER STATUS")[0][0]
    conn = own.connect(database=None)
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS loc")
        cur.execute("CREATE TABLE IF NOT EXISTS loc.t (id INT PRIMARY KEY, v TEXT)")
        cur.execute("DELETE FROM loc.t")
        for i in range(5):
            cur.execute(f"INSERT INTO loc.t VALUES ({i}, 'v{i}')")
        cur.execute("SET SESSION gtid_domain_id = 7")
        cur.execute("BEGIN")
        cur.execute("INSERT INTO loc.t VALUES (100, 'x'), (101, 'y')")
        cur.execute("UPDATE loc.t SET v = 'z' WHERE id = 0")
        cur.execute("COMMIT")
        cur.execute("SET SESSION gtid_domain_id = 0")
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("DO SLEEP(1.1)")  # a second header time, for the time queries
        cur.execute("SET SESSION server_id = 55")
        cur.execute("INSERT INTO loc.t VALUES (200, 'other server id')")
        cur.execute("SET SESSION server_id = @@GLOBAL.server_id")
        cur.execute("ALTER TABLE loc.t ADD COLUMN w INT")
        cur.execute("SET SESSION gtid_domain_id = 7")
        cur.execute("DELETE FROM loc.t WHERE id = 101")
        cur.execute("SET SESSION gtid_domain_id = 0")
        cur.execute("FLUSH BINARY LOGS")
    conn.close()
    time.sleep(1.5)  # the BINLOG_CHECKPOINT MariaDB writes after a FLUSH, a moment later
    names = [r[0] for r in sql(own, "SHOW BINARY LOGS")]
    files = names[names.index(first):-1]
    events = {f: sql(own, f"SHOW BINLOG EVENTS IN '{f}'") for f in files}
    yield files, events


def _server_gtid_pos(mariadb: MariaDB, f: str, pos: int) -> str | None:
    v = sql(mariadb, f"SELECT BINLOG_GTID_POS('{f}', {pos})")[0][0]
    return None if v is None else str(v)


def _same_state(ours: str | None, theirs: str | None) -> bool:
    return ours == theirs


def test_every_boundary_against_the_server(own: MariaDB, history: Any,
                                           tmp_path: Path) -> None:
    files, events = history
    arch = Archive([str(own.binlog_dir)], tmp_path)
    checked = 0
    for f in files:
        rows = events[f]
        for r in rows:
            pos, end = int(r[1]), int(r[4])
            a = at_position(arch.events(arch.named(f)), f, pos)  # type: ignore[arg-type]
            assert a.found and a.event is not None, (f, pos)
            assert (a.event.offset, a.event.end) == (pos, end), (f, r)
            srv = _server_gtid_pos(own, f, pos)
            assert _same_state(a.gtid_position, srv), (f, pos, a.gtid_position, srv)
            e = at_position(arch.events(arch.named(f)), f, end, end=True)  # type: ignore[arg-type]
            assert e.event is not None and e.event.offset == pos
            inside = pos + 3
            n = at_position(arch.events(arch.named(f)), f, inside)  # type: ignore[arg-type]
            assert n.gtid_position is None and not n.boundary
            assert _server_gtid_pos(own, f, inside) is None
            checked += 1
        last = int(rows[-1][4])
        a = at_position(arch.events(arch.named(f)), f, last)  # type: ignore[arg-type]
        assert a.boundary
        assert _same_state(a.gtid_position, _server_gtid_pos(own, f, last))
    assert checked > 30
    # several domains, and a state with more than one domain, were compared
    states = [_server_gtid_pos(own, f, int(r[1])) or "" for f in files for r in events[f]]
    assert any("7-" in s and "0-" in s for s in states)


def _gtids(events: dict[str, list[tuple[Any, ...]]]) -> list[tuple[str, str, int]]:
    out = []
    for f, rows in events.items():
        for r in rows:
            if r[2] == "Gtid":
                gtid = str(r[5]).split("GTID ", 1)[1].split()[0]
                out.append((f, gtid, int(r[1])))
    return out


def test_every_gtid_against_the_server(own: MariaDB, history: Any, tmp_path: Path
                                       ) -> None:
    _files, events = history
    arch = Archive([str(own.binlog_dir)], tmp_path)
    gtids = _gtids(events)
    assert len(gtids) >= 8
    for f, gtid, pos in gtids:
        a = at_gtid(arch.events(arch.named(f)), gtid)  # type: ignore[arg-type]
        assert a.found and a.trx_start is not None
        assert (a.trx_start.binlog_file, a.trx_start.offset) == (f, pos)
        # the transaction ends where the server's next GTID position moves on to
        nxt = [int(r[1]) for r in events[f] if int(r[1]) >= (a.trx_end or 0)]
        assert a.trx_end in nxt or a.trx_end == int(events[f][-1][4])


def test_the_cli_over_files_and_the_live_server(own: MariaDB, history: Any,
                                                 tmp_path: Path, monkeypatch: Any) -> None:
    files, events = history
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    gtids = _gtids(events)
    f, gtid, gpos = gtids[-1]
    some = next(r for r in events[files[0]] if r[2] == "Write_rows_v1")
    queries = [f"{files[0]}:{some[1]}", f"end:{files[0]}:{some[4]}", gtid]
    out = io.StringIO()
    rc = main(["locate", *queries, "--source", str(own.binlog_dir), "--json"], out=out,
              err=io.StringIO())
    assert rc == 0
    ans = [json.loads(line) for line in out.getvalue().splitlines()]
    assert ans[0]["event"]["end"] == int(some[4])
    assert _same_state(ans[0]["gtid_position"],
                       _server_gtid_pos(own, files[0], int(some[1])))
    assert ans[1]["event"]["offset"] == int(some[1])
    assert ans[2]["transaction_start"]["offset"] == gpos
    assert list((tmp_path / "binlogscope" / "catalog").glob("*.json"))  # the catalog cache
    # a second run: the catalog says which files cannot hold the GTID
    out = io.StringIO()
    main(["locate", gtid, "--source", str(own.binlog_dir), "--json"], out=out,
         err=io.StringIO())
    again = json.loads(out.getvalue())
    assert again["transaction_start"]["offset"] == gpos
    assert files[0] in again["files_skipped"] or f == files[0]

    cnf = tmp_path / "my.cnf"  # the password as live takes it (never in the URL)
    cnf.write_text(f"[client]\npassword={own.repl_password}\n")
    monkeypatch.delenv("MYSQL_PWD", raising=False)
    url = ServerUrl(own.host, own.port, own.repl_user, str(cnf))
    live = locate_live(url, queries)
    assert [a.event.end if a.event else None for a in live] == [
        x["event"]["end"] for x in ans]
    assert _same_state(live[0].gtid_position, ans[0]["gtid_position"])
    assert live[2].trx_start is not None and live[2].trx_start.offset == gpos
    # the CLI: --defaults-file, and MYSQL_PWD, give the same answers as the files
    src = f"mysql://{own.repl_user}@{own.host}:{own.port}"
    for extra, env in ((["--defaults-file", str(cnf)], None), ([], own.repl_password)):
        if env is not None:
            monkeypatch.setenv("MYSQL_PWD", env)
        out, err = io.StringIO(), io.StringIO()
        rc = main(["locate", *queries, "--source", src, *extra, "--json"], out=out, err=err)
        assert rc == 0, err.getvalue()
        got = [json.loads(line) for line in out.getvalue().splitlines()]
        assert [g["event"]["end"] for g in got] == [x["event"]["end"] for x in ans]
        assert own.repl_password not in out.getvalue() + err.getvalue()
    # a password in the URL is refused before anything connects, and never repeated
    for cmd in (["locate", queries[0]], ["explain", f"end:{files[0]}:{some[4]}"]):
        out, err = io.StringIO(), io.StringIO()
        rc = main([*cmd, "--source", f"mysql://{own.repl_user}:{own.repl_password}"
                   f"@{own.host}:{own.port}"], out=out, err=err)
        assert rc == 1
        assert len(err.getvalue().splitlines()) == 1, err.getvalue()
        assert "a password in the URL is refused" in err.getvalue()
        assert own.repl_password not in out.getvalue() + err.getvalue()


def test_every_time_against_mariadb_binlog(own: MariaDB, history: Any,
                                           tmp_path: Path) -> None:
    """A time query gives the event ``mariadb-binlog --start-datetime`` starts at (the first
    after the FORMAT_DESCRIPTION it always prints)."""
    import shutil
    import subprocess

    from binlogscope.diagnose.locate import at_time
    from binlogscope.drivers.binlog_file import read_binlog_file

    exe = shutil.which("mariadb-binlog")
    assert exe, "mariadb-binlog comes with the MariaDB server package"
    files, _ = history
    compared = 0
    for f in files:
        path = own.binlog_dir / f
        stamps = sorted({ev.header.timestamp for ev in read_binlog_file(path, record=False)
                         if ev.header is not None and ev.header.timestamp})
        for t in stamps:
            a = at_time(read_binlog_file(path, record=False), t)
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
            out = subprocess.run([exe, f"--start-datetime={when}", str(path)],
                                 capture_output=True, text=True, env={"TZ": "UTC"},
                                 timeout=60).stdout
            ats = [int(line.split()[2]) for line in out.splitlines()
                   if line.startswith("# at ")]
            theirs = next((x for x in ats if x != 4), None)
            assert (a.event.offset if a.event else None) == theirs, (f, t, ats[:3])
            compared += 1
    assert compared >= 2
