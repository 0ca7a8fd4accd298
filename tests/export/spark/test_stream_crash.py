"""``spark.readStream.format("binlog")`` exactly once through crashes (real Spark ``local[2]``,
real MariaDB).

A workload commits 20,000+ row changes (transactions of 1-40 inserts, updates and deletes)
while a streaming query (its own driver program, :mod:`tests.export.spark.stream_driver`)
follows the server into a Parquet sink with a checkpoint. The driver - its Python process, its
JVM and their Python workers, the whole process group - is killed with SIGKILL at least 5
times, most of them while a micro-batch is in flight (its offsets logged, not committed), and
started again from the checkpoint each time; once, the server is shut down and started again
under a running query. A last run (``availableNow``) catches up. The sink must hold exactly the
rows of the server's binlog (the batch source over the binlog files): none lost, none twice.

The password (a fresh random one, from ``MYSQL_PWD``) must be in no file of the checkpoint,
the event log, the sink or the driver's logs, nor in the query plan's strings.
"""

from __future__ import annotations

import os
import random
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.export.spark.stream_support import binlog_rows, master_status, row_tuples

pytestmark = [pytest.mark.spark, pytest.mark.mysql, pytest.mark.slow,
              pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[3]
ROWS = 20_000
KILLS = 5


class Workload(threading.Thread):
    """Row changes in transactions of 1-40 (inserts, updates, deletes), a transaction every
    ``delay`` seconds, up to the changes :meth:`allow` allows (each driver run gets its share,
    committed while it runs); pauses at a transaction boundary on request (the server
    restart). ``changes``: the row changes committed."""

    def __init__(self, db: Any, delay: float) -> None:
        super().__init__(daemon=True)
        self.db = db
        self.delay = delay
        self.allowance = 0
        self.pause = threading.Event()
        self.paused = threading.Event()
        self.resume = threading.Event()
        self.stop = threading.Event()
        self.changes = 0
        self.error: BaseException | None = None

    def allow(self, changes: int) -> None:
        self.allowance = max(self.allowance, changes)

    def caught_up(self) -> bool:
        return self.changes >= self.allowance

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # (reported by the test)
            self.error = exc

    def _run(self) -> None:
        rng = random.Random(28)
        conn = self.db.connect()
        next_id = 0
        live: list[int] = []
        while not self.stop.is_set():
            if self.pause.is_set():
                conn.close()
                self.paused.set()
                self.resume.wait()
                conn = self.db.connect()
            if self.changes >= self.allowance:
                time.sleep(0.05)
                continue
            n = rng.randint(1, 40)
            with conn.cursor() as cur:
                cur.execute("BEGIN")
                ins = n if len(live) < 50 else rng.randint(max(1, n // 2), n)
                ids = list(range(next_id, next_id + ins))
                cur.execute("INSERT INTO ks (id, v, n) VALUES " + ",".join(
                    f"({i}, 'v{i}-{rng.random():.6f}', {i % 997}.5)" for i in ids))
                done = ins
                if n > ins:
                    pick = rng.sample(live, min(n - ins, len(live)))
                    if rng.random() < 0.5:
                        done += cur.execute(f"UPDATE ks SET v = CONCAT(v, 'u'), n = n + 1 "
                                            f"WHERE id IN ({','.join(map(str, pick))})")
                    else:
                        done += cur.execute(f"DELETE FROM ks WHERE id IN "
                                            f"({','.join(map(str, pick))})")
                        gone = set(pick)
                        live = [i for i in live if i not in gone]
                cur.execute("COMMIT")
            next_id += ins
            live += ids
            self.changes += done
            time.sleep(self.delay)
        conn.close()


def _batches(ckpt: Path, sub: str) -> int:
    """The highest batch id in the checkpoint's ``offsets`` or ``commits`` log (-1: none)."""
    d = ckpt / sub
    ids = [int(p.name) for p in d.iterdir() if p.name.isdigit()] if d.is_dir() else []
    return max(ids, default=-1)


class Driver:
    def __init__(self, out: Path, url: str, start: str, env: dict[str, str],
                 available_now: bool = False) -> None:
        self.log = (out / "driver-logs")
        self.log.mkdir(parents=True, exist_ok=True)
        n = len(list(self.log.iterdir()))
        cmd = [sys.executable, "-m", "tests.export.spark.stream_driver", "--url", url,
               "--start", start, "--out", str(out), "--option", "maxReconnects=20"]
        if available_now:
            cmd.append("--available-now")
        self.stdout = open(self.log / f"run-{n}.out", "w")  # noqa: SIM115 (closed in wait)
        self.proc = subprocess.Popen(cmd, cwd=out, env=env, stdout=self.stdout,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL to the driver's process group (Python, the JVM, the Python workers), then
        until none of them is left."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        self.stdout.close()

    def output(self) -> str:
        self.stdout.flush()
        return "".join(p.read_text(errors="replace") for p in sorted(self.log.iterdir()))


def _wait_commit(ckpt: Path, after: int, what: str, driver: Driver, work: Workload,
                 timeout: float = 300) -> None:
    """Until the query has committed a batch after batch ``after``."""
    deadline = time.monotonic() + timeout
    while _batches(ckpt, "commits") <= after:
        assert work.error is None, work.error
        assert driver.alive(), f"the driver ended while waiting for {what}:\n{driver.output()}"
        assert time.monotonic() < deadline, f"no {what} within {timeout} s:\n{driver.output()}"
        time.sleep(0.05)


def test_kill_9_and_a_server_restart_lose_and_repeat_nothing(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    from tests.mariadb_server import ServerStartError, start, stop
    from tests.watch_support import run_sql

    d = tmp_path / "server"
    try:
        db = start(d)
    except ServerStartError as exc:  # pragma: no cover - the mariadb fixture fails the same way
        pytest.fail(str(exc))
    password = f"Spk-{secrets.token_hex(12)}"
    out = tmp_path / "stream"
    out.mkdir()
    ckpt = out / "checkpoint"
    env = dict(os.environ, MYSQL_PWD=password, HOME=str(tmp_path), TMPDIR=str(out / "tmp"),
               PYTHONPATH=f"{REPO / 'src'}{os.pathsep}{REPO}")
    (out / "tmp").mkdir()
    drivers: list[Driver] = []
    work: Workload | None = None
    in_flight = 0
    try:
        run_sql(db, "CREATE USER 'sparkrepl'@'%' IDENTIFIED BY '" + password + "'",
                "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'sparkrepl'@'%'",
                "CREATE TABLE ks (id INT PRIMARY KEY, v VARCHAR(64), n DECIMAL(12,1))")
        begin = master_status(db)
        url = f"mysql://sparkrepl@{db.host}:{db.port}"
        work = Workload(db, delay=0.1)
        work.start()
        for k in range(KILLS):
            print(f"{time.strftime('%H:%M:%S')} run {k}: {work.changes} changes", flush=True)
            drv = Driver(out, url, f"{begin[0]}:{begin[1]}", env)
            drivers.append(drv)
            work.allow(ROWS * (k + 1) // KILLS)  # this run's share, committed while it runs
            _wait_commit(ckpt, _batches(ckpt, "commits"), "committed batch", drv, work)
            if k == 1:  # the server goes away under the running query and comes back
                work.pause.set()
                assert work.paused.wait(120)
                stop(d)
                time.sleep(1.0)
                db = start(d, extra_env={"MARIADB_FIXED_PORT": str(db.port)})
                work.db = db
                work.allow(work.allowance + 400)  # (something to read after the restart)
                work.pause.clear()
                work.resume.set()
                _wait_commit(ckpt, _batches(ckpt, "commits"), "batch after the restart", drv,
                             work)
            # kill while a batch is in flight (offsets logged, not committed), if one comes
            deadline = time.monotonic() + random.uniform(2, 6)
            while time.monotonic() < deadline and \
                    _batches(ckpt, "offsets") <= _batches(ckpt, "commits"):
                assert drv.alive(), drv.output()
                time.sleep(0.02)
            mid = _batches(ckpt, "offsets") > _batches(ckpt, "commits")
            in_flight += mid
            drv.kill()
            print(f"{time.strftime('%H:%M:%S')} killed run {k}"
                  + (" with a batch in flight" if mid else ""), flush=True)
        deadline = time.monotonic() + 600
        while not work.caught_up():
            assert work.error is None and time.monotonic() < deadline, work.error
            time.sleep(0.1)
        work.stop.set()
        work.join(60)
        assert work.error is None, work.error
        end = master_status(db)
        last = Driver(out, url, f"{begin[0]}:{begin[1]}", env, available_now=True)
        drivers.append(last)
        assert last.proc.wait(600) == 0, last.output()
        last.stdout.close()
        files = db.binlog_files()
    finally:
        for drv in drivers:
            if drv.alive():
                drv.kill()
        if work is not None:
            work.stop.set()
            work.resume.set()
        stop(d)
    assert work is not None and work.changes >= ROWS
    assert in_flight >= 1, "no kill came while a batch was in flight"

    spark = request.getfixturevalue("spark")
    from binlogscope.export.spark import register

    register(spark)
    sink = spark.read.parquet(str(out / "sink")).where("`table` = 'ks'")
    got = row_tuples(sink)
    keys = sink.select("binlog_file", "offset", "inner_index", "row_index")
    assert keys.count() == keys.distinct().count(), "a row is in the sink twice"
    want = row_tuples(binlog_rows(spark, files, begin, "ks"))
    assert len(want) == work.changes
    assert got == want
    assert end[0] > begin[0]  # the restart started a new binlog file
    # no secret anywhere it could leak: checkpoint, event log, sink, logs, the plan
    plan = (out / "plan.txt").read_text()
    assert "binlog" in plan
    leaked = [str(p) for p in out.rglob("*") if p.is_file()
              and password.encode() in p.read_bytes()]
    assert leaked == []
    assert any((out / "events").iterdir()) and any(ckpt.rglob("*"))
