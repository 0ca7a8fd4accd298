"""Every differential client scenario of issue 15, runnable on its own:

    python tests/mock_master/diff_scenarios.py [NAME ...]    # starts a throw-away MariaDB

prints each scenario's report (the mock master against the real server, packet by packet).
The test suite (test_differential_clients.py) runs every one of them (the live ones last).

A scenario is ``fn(ctx) -> DiffReport``; ``ctx`` is a :class:`Context` (the real server with
its binlog copies, and a replica server started on first use).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# runnable on its own: the repository root (for tests.*, mock_master) and src/ - not tests/
# itself, whose tests/mysql package would shadow mysql-connector-python's 'mysql'
for p in (HERE.parents[1], HERE.parents[1] / "src"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from mock_master.diff.compare import DiffReport, compare  # noqa: E402
from mock_master.diff.run import copy_binlogs, differential, record  # noqa: E402
from tests.mariadb_server import MariaDB, start, stop  # noqa: E402
from tests.mock_master.diff_support import (  # noqa: E402
    TABLE_DDL,
    Source,
    pmr_session,
    raw_dump_session,
    run_workload,
    settle_binlog,
)


@dataclass
class Context:
    source: Source
    workdir: Path
    replica: MariaDB | None = None
    notes: list[str] = field(default_factory=list)

    def get_replica(self) -> MariaDB:
        if self.replica is None:
            self.replica = start(self.workdir / "replica")
            sql(self.replica, "SET GLOBAL server_id = 2")
        return self.replica

    def close(self) -> None:
        if self.replica is not None:
            stop(self.replica.dir)


def sql(server: MariaDB, text: str) -> list[tuple[Any, ...]]:
    conn = server.connect(database=None)
    try:
        with conn.cursor() as cur:
            cur.execute(text)
            return list(cur.fetchall())
    finally:
        conn.close()


def _diff(ctx: Context, session: Any, **mock_kw: Any) -> DiffReport:
    mm = ctx.source.mock(**mock_kw)
    try:
        rep, real, mock = differential(session, ctx.source.real, mock=(mm.host, mm.port))
    finally:
        mm.stop()
    if real.result != mock.result:
        rep.notes.append(f"the client's result differs: real {str(real.result)[:300]} | "
                         f"mock {str(mock.result)[:300]}")
    return rep


# ------------------------------------------------------------------ python-mysql-replication
def pmr_file_pos(ctx: Context) -> DiffReport:
    return _diff(ctx, pmr_session(log_file=ctx.source.names[0], log_pos=4, resume_stream=True))


def pmr_file_pos_mid_file(ctx: Context) -> DiffReport:
    pos = _event_positions(ctx.source.files[0])[6]  # a GTID event in the middle of the file
    return _diff(ctx, pmr_session(log_file=ctx.source.names[0], log_pos=pos,
                                  resume_stream=True))


def pmr_gtid_inside(ctx: Context) -> DiffReport:
    return _diff(ctx, pmr_session(is_mariadb=True, auto_position="0-1-3"))


def pmr_gtid_unknown_domain(ctx: Context) -> DiffReport:
    return _diff(ctx, pmr_session(is_mariadb=True, auto_position="0-1-3,7-1-5"))


def pmr_annotate_on(ctx: Context) -> DiffReport:
    return _diff(ctx, pmr_session(is_mariadb=True, auto_position="0-1-2",
                                  annotate_rows_event=True))


def pmr_annotate_off(ctx: Context) -> DiffReport:
    return _diff(ctx, pmr_session(is_mariadb=True, auto_position="0-1-2",
                                  annotate_rows_event=False))


def pmr_blocking_heartbeats(ctx: Context) -> DiffReport:
    n = len(record(pmr_session(log_file=ctx.source.names[0], log_pos=4, resume_stream=True),
                   *ctx.source.real).result or [])  # type: ignore[arg-type]
    return _diff(ctx, pmr_session(blocking=True, stop_after=n, heartbeats=2, slave_heartbeat=0.3,
                                  log_file=ctx.source.names[0], log_pos=4, resume_stream=True))


# --------------------------------------------------------------- clients without the capability
def raw_dump_no_capability(ctx: Context) -> DiffReport:
    return _diff(ctx, raw_dump_session(ctx.source.names[0]))


def raw_dump_capability_2(ctx: Context) -> DiffReport:
    return _diff(ctx, raw_dump_session(ctx.source.names[0], capability=2))


# ------------------------------------------------------------------------------- mariadb-binlog
def _mariadb_binlog(*args: str) -> list[str]:
    exe = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog") or "mariadb-binlog"
    return [exe, "--read-from-remote-server", "--host={host}", "--port={port}", "--user=repl",
            "--password=replpass", *args]


def mariadb_binlog_raw(ctx: Context) -> DiffReport:
    out = ctx.workdir / "raw"
    out.mkdir(exist_ok=True)
    rep = _diff(ctx, _mariadb_binlog("--raw", f"--result-file={out}/", "--to-last-log",
                                     ctx.source.names[0]))
    return rep


def mariadb_binlog_start_position(ctx: Context) -> DiffReport:
    pos = _event_positions(ctx.source.files[0])[6]
    return _diff(ctx, _mariadb_binlog(f"--start-position={pos}", "--to-last-log",
                                      ctx.source.names[0]))


def mariadb_binlog_gtid_start(ctx: Context) -> DiffReport:
    return _diff(ctx, _mariadb_binlog("--start-position=0-1-4", "--to-last-log",
                                      ctx.source.names[0]))


def mariadb_binlog_text(ctx: Context) -> DiffReport:
    return _diff(ctx, _mariadb_binlog("--to-last-log", ctx.source.names[0]))


# ------------------------------------------------------------------------ mysql-connector-python
def connector_information_schema(ctx: Context, *, compress: bool = False) -> DiffReport:
    def run(host: str, port: int) -> object:
        import mysql.connector

        conn = mysql.connector.connect(host=host, port=port, user="repl", password="replpass",
                                       use_pure=True, compress=compress)
        try:
            cur = conn.cursor()
            cur.execute("SELECT COLUMN_NAME, ORDINAL_POSITION, DATA_TYPE, COLUMN_TYPE, "
                        "CHARACTER_SET_NAME, COLUMN_KEY, IS_NULLABLE "
                        "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                        "'binlogscope_test' AND TABLE_NAME = 'items' ORDER BY ORDINAL_POSITION")
            cols = cur.fetchall()
            cur.close()
            ps = conn.cursor(prepared=True)
            ps.execute("SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
                       "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
                       ("binlogscope_test", "items"))
            prepared = ps.fetchall()
            ps.close()
            return [cols, prepared]
        finally:
            conn.close()

    return _diff(ctx, run)


def connector_schema_queries(ctx: Context) -> DiffReport:
    """What CDC clients read besides COLUMNS: SHOW CREATE TABLE, the primary key from
    KEY_COLUMN_USAGE and STATISTICS, TABLES (the columns a mock can know: no row counts or
    times), SHOW TABLES, SHOW DATABASES."""
    queries = (
        "SHOW CREATE TABLE binlogscope_test.items",
        "SELECT COLUMN_NAME, ORDINAL_POSITION FROM information_schema.KEY_COLUMN_USAGE "
        "WHERE TABLE_SCHEMA = 'binlogscope_test' AND TABLE_NAME = 'items' "
        "AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
        "SELECT INDEX_NAME, NON_UNIQUE, SEQ_IN_INDEX, COLUMN_NAME FROM "
        "information_schema.STATISTICS WHERE TABLE_SCHEMA = 'binlogscope_test' "
        "AND TABLE_NAME = 'items' ORDER BY INDEX_NAME, SEQ_IN_INDEX",
        "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, ENGINE, TABLE_COLLATION FROM "
        "information_schema.TABLES WHERE TABLE_SCHEMA = 'binlogscope_test'",
        "SHOW TABLES FROM binlogscope_test",
    )

    def run(host: str, port: int) -> object:
        import mysql.connector

        conn = mysql.connector.connect(host=host, port=port, user="repl", password="replpass",
                                       use_pure=True)
        try:
            out = []
            for q in queries:
                cur = conn.cursor()
                cur.execute(q)
                out.append(cur.fetchall())
                cur.close()
            return out
        finally:
            conn.close()

    return _diff(ctx, run)


def connector_compressed(ctx: Context) -> DiffReport:
    """The same over the compressed protocol (the harness inflates both conversations)."""
    return connector_information_schema(ctx, compress=True)


# ---------------------------------------------------------------------------- a MariaDB replica
def _replica_session(ctx: Context, change: str, *, until: str = "", slave_pos: str = "",
                     create_table: bool = False, semi_sync: bool = False,
                     compressed: bool = False,
                     live: Callable[[], None] | None = None) -> Callable[[str, int], object]:
    """A real replica replicating through the relay until it has read everything (or has
    stopped at its UNTIL). Starting past the CREATE TABLE (``slave_pos``, a file position),
    ``create_table`` creates the table on the replica first."""
    replica = ctx.get_replica()

    def caught_up(live_done: bool) -> bool:
        """Stopped at its UNTIL, or read and applied the whole binlog: the copies' (what both
        servers have before a live commit), after it the real server's (whose new events the
        mock has had appended)."""
        rows = replica.connect(database=None, cursorclass=__import__(
            "pymysql").cursors.DictCursor)
        try:
            with rows.cursor() as cur:
                cur.execute("SHOW SLAVE STATUS")
                st = cur.fetchone() or {}
        finally:
            rows.close()
        if st.get("Last_IO_Error") or st.get("Last_SQL_Error"):
            raise AssertionError(f"replica error: {st.get('Last_IO_Error')} "
                                 f"{st.get('Last_SQL_Error')}")
        if until:
            return st.get("Slave_SQL_Running") == "No"
        last = ctx.source.server.binlog_files()[-1] if live_done else ctx.source.files[-1]
        size = last.stat().st_size
        return (st.get("Master_Log_File") == last.name
                and int(st.get("Read_Master_Log_Pos") or 0) == size
                and st.get("Relay_Master_Log_File") == last.name
                and int(st.get("Exec_Master_Log_Pos") or 0) == size)

    def run(host: str, port: int) -> object:
        sql(replica, "STOP SLAVE")
        sql(replica, "RESET SLAVE ALL")
        sql(replica, f"SET GLOBAL rpl_semi_sync_slave_enabled = {'ON' if semi_sync else 'OFF'}")
        sql(replica, f"SET GLOBAL slave_compressed_protocol = {'ON' if compressed else 'OFF'}")
        sql(replica, "DROP DATABASE IF EXISTS binlogscope_test")
        sql(replica, "CREATE DATABASE binlogscope_test")
        sql(replica, f"SET GLOBAL gtid_slave_pos = '{slave_pos}'")
        if create_table:
            conn = replica.connect(database="binlogscope_test")
            try:
                with conn.cursor() as cur:
                    cur.execute(TABLE_DDL)
            finally:
                conn.close()
        sql(replica, f"CHANGE MASTER TO MASTER_HOST='{host}', MASTER_PORT={port}, "
                     f"MASTER_USER='repl', MASTER_PASSWORD='replpass', MASTER_CONNECT_RETRY=1, "
                     f"{change}")
        sql(replica, f"START SLAVE {until}")
        for step in ([None] if live is None else [None, live]):
            if step is not None:
                step()
            deadline = time.monotonic() + 30
            while not caught_up(step is not None):
                if time.monotonic() > deadline:
                    raise AssertionError("the replica did not catch up in 30 s")
                time.sleep(0.1)
        sql(replica, "STOP SLAVE")
        return sorted(sql(replica, "SELECT id, small, name, kind FROM binlogscope_test.items"))

    return run


def replica_file_pos(ctx: Context) -> DiffReport:
    return _diff(ctx, _replica_session(
        ctx, f"MASTER_LOG_FILE='{ctx.source.names[0]}', MASTER_LOG_POS=4, MASTER_USE_GTID=no"))


def replica_gtid(ctx: Context) -> DiffReport:
    return _diff(ctx, _replica_session(ctx, "MASTER_USE_GTID=slave_pos"))


def replica_gtid_compressed(ctx: Context) -> DiffReport:
    """slave_compressed_protocol = ON (the harness inflates both conversations)."""
    return _diff(ctx, _replica_session(ctx, "MASTER_USE_GTID=slave_pos", compressed=True))


def replica_resume_mid_file(ctx: Context) -> DiffReport:
    pos = _event_positions(ctx.source.files[0])[6]  # a GTID event in the middle of the file
    return _diff(ctx, _replica_session(
        ctx, f"MASTER_LOG_FILE='{ctx.source.names[0]}', MASTER_LOG_POS={pos}, "
             "MASTER_USE_GTID=no", create_table=True))


def replica_until_gtid(ctx: Context) -> DiffReport:
    return _diff(ctx, _replica_session(ctx, "MASTER_USE_GTID=slave_pos", slave_pos="0-1-2",
                                       create_table=True,
                                       until="UNTIL master_gtid_pos = '0-1-6'"))


def _event_positions(path: Path) -> list[int]:
    data = path.read_bytes()
    out, pos = [], 4
    while pos + 19 <= len(data):
        out.append(pos)
        pos += int.from_bytes(data[pos + 9 : pos + 13], "little")
    return out


# ------------------------------------------------------------------------- live (appended) events
def _live_events(ctx: Context, statements: list[str]) -> list[list[bytes]]:
    """Commit ``statements`` on the real server one by one (autocommit: with semi-sync each
    waits for the replica's ACK); per statement, the events it added to the active file."""
    active = ctx.source.server.binlog_files()[-1]
    conn = ctx.source.server.connect()
    groups: list[list[bytes]] = []
    try:
        with conn.cursor() as cur:
            for s in statements:
                before = active.stat().st_size
                cur.execute(s)
                time.sleep(0.3)
                data = active.read_bytes()[before:]
                events, pos = [], 0
                while pos + 19 <= len(data):
                    size = int.from_bytes(data[pos + 9 : pos + 13], "little")
                    events.append(data[pos : pos + size])
                    pos += size
                groups.append(events)
    finally:
        conn.close()
    return groups


def _live_diff(ctx: Context, make_session: Callable[[Callable[[], None]],
                                                     Callable[[str, int], object]],
               statements: list[str], **mock_kw: Any) -> DiffReport:
    """Real side: commits while the client runs. Mock side: the same events appended through
    the mock's API while the client runs, a commit at a time as on the real side. The copies
    are refreshed afterwards."""
    appended: list[list[bytes]] = []

    def on_real() -> None:
        appended.extend(_live_events(ctx, statements))

    def on_mock() -> None:
        for group in appended:
            mm.append_events(list(group))
            time.sleep(0.3)

    real = record(make_session(on_real), *ctx.source.real)
    mm = ctx.source.mock(**mock_kw)
    try:
        mock = record(make_session(on_mock), mm.host, mm.port)
    finally:
        mm.stop()
    settle_binlog(ctx.source.server)
    ctx.source.files = copy_binlogs(ctx.source.server.binlog_files(), ctx.workdir / "copies2")
    rep = compare(real.conversations, mock.conversations)
    for side, run in (("real server", real), ("mock", mock)):
        if run.error is not None:
            rep.notes.append(f"the session raised against the {side}: {run.error!r}")
    if real.result != mock.result:
        rep.notes.append(f"the client's result differs: real {str(real.result)[:300]} | "
                         f"mock {str(mock.result)[:300]}")
    return rep


def replica_semi_sync_live(ctx: Context) -> DiffReport:
    def make(live: Callable[[], None]) -> Callable[[str, int], object]:
        return _replica_session(ctx, "MASTER_USE_GTID=slave_pos", live=live, semi_sync=True)

    return _live_diff(ctx, make, [
        "INSERT INTO items (id, name) SELECT MAX(id) + 1, 'live' FROM items",
        "UPDATE items SET small = 1 ORDER BY id DESC LIMIT 1"])


def mariadb_binlog_stop_never(ctx: Context) -> DiffReport:
    out = ctx.workdir / "stop-never"

    def make(live: Callable[[], None]) -> Callable[[str, int], object]:
        def run(host: str, port: int) -> object:
            d = Path(tempfile.mkdtemp(dir=out.parent))
            cmd = [a.replace("{host}", host).replace("{port}", str(port)) for a in
                   _mariadb_binlog("--raw", f"--result-file={d}/", "--stop-never",
                                   "--stop-never-slave-server-id=4343", ctx.source.names[0])]
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
            try:
                want = {f.name: f.stat().st_size for f in ctx.source.files}
                _wait_sizes(d, want)
                live()
                _wait_sizes(d, {ctx.source.names[-1]: want[ctx.source.names[-1]] + 1})
                time.sleep(0.3)
            finally:
                proc.terminate()
                proc.wait(10)
            return sorted((f.name, f.stat().st_size) for f in d.iterdir())

        return run

    return _live_diff(ctx, make, ["INSERT INTO items (id, name) SELECT MAX(id) + 1, 'never' "
                                  "FROM items"])


def _wait_sizes(d: Path, want: dict[str, int], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all((d / n).exists() and (d / n).stat().st_size >= s for n, s in want.items()):
            return
        time.sleep(0.05)
    raise AssertionError(f"mariadb-binlog did not write {want} in {timeout} s")


SCENARIOS: dict[str, Callable[[Context], DiffReport]] = {
    "pmr_file_pos": pmr_file_pos,
    "pmr_file_pos_mid_file": pmr_file_pos_mid_file,
    "pmr_gtid_inside": pmr_gtid_inside,
    "pmr_gtid_unknown_domain": pmr_gtid_unknown_domain,
    "pmr_annotate_on": pmr_annotate_on,
    "pmr_annotate_off": pmr_annotate_off,
    "pmr_blocking_heartbeats": pmr_blocking_heartbeats,
    "raw_dump_no_capability": raw_dump_no_capability,
    "raw_dump_capability_2": raw_dump_capability_2,
    "mariadb_binlog_raw": mariadb_binlog_raw,
    "mariadb_binlog_text": mariadb_binlog_text,
    "mariadb_binlog_start_position": mariadb_binlog_start_position,
    "mariadb_binlog_gtid_start": mariadb_binlog_gtid_start,
    "connector_information_schema": connector_information_schema,
    "connector_compressed": connector_compressed,
    "connector_schema_queries": connector_schema_queries,
    "replica_file_pos": replica_file_pos,
    "replica_gtid": replica_gtid,
    "replica_gtid_compressed": replica_gtid_compressed,
    "replica_resume_mid_file": replica_resume_mid_file,
    "replica_until_gtid": replica_until_gtid,
    # these two append to the real server's binlog (the copies are refreshed after each)
    "mariadb_binlog_stop_never": mariadb_binlog_stop_never,
    "replica_semi_sync_live": replica_semi_sync_live,
}


def make_context(workdir: Path) -> Context:
    """The source server under ``workdir`` (started, and the workload run, unless a server is
    already running there: ``--keep DIR`` reuses one between runs)."""
    fresh = not (workdir / "source" / "server.env").exists()
    server = start(workdir / "source")
    if fresh:
        conn = server.connect()
        run_workload(conn)
        conn.close()
    settle_binlog(server)
    files = copy_binlogs(server.binlog_files(), workdir / "copies")
    return Context(Source(server, files), workdir)


def main(argv: list[str]) -> int:
    """``[--keep DIR] [--verbose] [NAME ...]``: run the scenarios (all by default) and print
    their reports; with --keep the servers stay up in DIR for the next run."""
    keep = None
    if argv[:1] == ["--keep"]:
        keep, argv = Path(argv[1]), argv[2:]
    verbose = "--verbose" in argv
    names = [a for a in argv if a != "--verbose"] or list(SCENARIOS)
    work = keep or Path(tempfile.mkdtemp(prefix="mm-diff-scenarios-"))
    ctx = make_context(work)
    bad = 0
    try:
        for name in names:
            t = time.monotonic()
            try:
                rep = SCENARIOS[name](ctx)
            except Exception as exc:
                print(f"##### {name}: ERROR {type(exc).__name__}: {exc}\n", flush=True)
                bad += 1
                continue
            bad += not rep.ok
            print(f"##### {name} ({time.monotonic() - t:.1f} s)\n{rep.text(max_tree_lines=40)}",
                  flush=True)
            if verbose:
                for d in rep.differences[1:]:
                    print(f"  {d.title()}: " + "; ".join(
                        f"{f.path}: real {f.real[:80]} | mock {f.mock[:80]}" for f in d.fields))
            print()
    finally:
        if keep is None:
            ctx.close()
            stop(ctx.source.server.dir)
            shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
