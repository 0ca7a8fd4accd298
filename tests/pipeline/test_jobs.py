"""``--jobs``: one process per input, the outputs and messages in input order (pipeline/jobs.py
and ``file --jobs``), a damaged input among good ones, Ctrl-C."""

from __future__ import annotations

import functools
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from binlogscope.pipeline import jobs as jobs_module
from binlogscope.pipeline.jobs import default_jobs, run_in_order

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "captures" / "mariadb-10.11-workload.000001"
SMALL = sorted((REPO / "captures").glob("pcap-*.binlog"))


@pytest.mark.parametrize(("inputs", "cores", "load", "expected"), [
    (1, 8, 0.0, 1),     # one input: one process, however idle the machine
    (0, 8, 0.0, 1),
    (5, 2, 0.0, 2),     # idle 2-core machine: both cores
    (5, 2, 0.4, 2),     # a little load rounds away
    (5, 2, 0.6, 1),     # about one core busy: one process
    (5, 2, 10.0, 1),    # no core free (the busy box of bench/README.md): one process
    (3, 16, 0.0, 3),    # never more than one per input
    (12, 16, 5.2, 11),  # the free cores
    (10, 4, 0.0, 4),    # never more than the usable cores
])
def test_default_jobs_counts_inputs_and_free_cores(inputs: int, cores: int, load: float,
                                                   expected: int) -> None:
    assert default_jobs(inputs, cores=cores, load=load) == expected


def test_default_jobs_reads_this_machines_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs_module, "usable_cores", lambda: 4)
    monkeypatch.setattr(os, "getloadavg", lambda: (3.0, 1.0, 1.0))
    assert default_jobs(6) == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert default_jobs(6) == 4

    def no_load() -> tuple[float, float, float]:
        raise OSError("no load average")
    monkeypatch.setattr(os, "getloadavg", no_load)
    assert default_jobs(6) == 4  # no load average: the cores


def test_file_help_says_what_the_default_jobs_is() -> None:
    text = subprocess.run([sys.executable, "-m", "binlogscope", "file", "--help"],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "COLUMNS": "200"}).stdout
    assert "load average" in " ".join(text.split())


def _slow_job(item: tuple[int, float], spool: str) -> int:
    n, delay = item
    time.sleep(delay)
    with open(spool, "w") as f:
        f.write(f"input {n}\n" * (n + 1))
    return n * 10


def test_outputs_and_results_come_in_input_order(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The first inputs are the slowest: the later ones finish first and wait their turn."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    items = [(n, 0.3 if n < 2 else 0.0) for n in range(7)]
    out = io.BytesIO()
    seen: list[tuple[int, int]] = []
    run_in_order(items, _slow_job, 3, out, lambda item, r: seen.append((item[0], r)))
    assert out.getvalue().decode() == "".join(f"input {n}\n" * (n + 1) for n in range(7))
    assert seen == [(n, n * 10) for n in range(7)]
    assert list(tmp_path.iterdir()) == []  # no spool left


def _failing_job(n: int, spool: str) -> int:
    if n == 2:
        raise RuntimeError("job 2 failed")
    Path(spool).write_text(f"{n}\n")
    return n


def test_a_failing_job_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    out = io.BytesIO()
    with pytest.raises(RuntimeError, match="job 2 failed"):
        run_in_order(list(range(5)), _failing_job, 2, out, lambda item, r: None)
    assert out.getvalue() == b"0\n1\n"
    assert list(tmp_path.iterdir()) == []


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    return subprocess.run([sys.executable, "-m", "binlogscope", "file", *args],
                          capture_output=True, env=env, check=False)


@pytest.mark.parametrize("mode", ["--json", "--summary"])
def test_file_jobs_writes_what_one_process_writes(tmp_path: Path, mode: str) -> None:
    """Several inputs, the big one first, with a damaged input among the good ones: the same
    bytes on stdout, the same messages on stderr in input order, exit 1."""
    damaged = tmp_path / "damaged.binlog"
    data = bytearray(WORKLOAD.read_bytes())
    del data[len(data) // 2 :]  # cut inside an event
    damaged.write_bytes(bytes(data))
    garbage = tmp_path / "not-a-binlog"
    garbage.write_bytes(b"not a binlog at all")
    paths = [str(WORKLOAD), *map(str, SMALL[:2]), str(damaged), str(garbage), str(SMALL[2])]
    one = _cli(mode, "-j", "1", *paths)
    many = _cli(mode, "-j", "3", *paths)
    assert one.returncode == many.returncode == 1
    assert many.stdout == one.stdout and len(one.stdout) > 1000
    assert many.stderr == one.stderr
    messages = many.stderr.decode().splitlines()
    assert len(messages) == 2 and "damaged.binlog" in messages[0] and \
        "not-a-binlog" in messages[1], messages
    assert b"Traceback" not in many.stderr


def _interrupt_jobs(tmp_path: Path, command: str, data: bytes, suffix: str, copies: int
                    ) -> None:
    """``COMMAND --json -j 2`` over many copies of one input, Ctrl-C (SIGINT to the process
    group, as a terminal sends it) once the workers run: one line, exit 130, no worker left,
    no spool left."""
    inputs = []
    for i in range(copies):  # (enough work that an idle machine does not finish first)
        p = tmp_path / f"copy{i:03d}{suffix}"
        p.write_bytes(data)
        inputs.append(str(p))
    spools = tmp_path / "tmp"
    spools.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
           "TMPDIR": str(spools)}
    out = (tmp_path / "out.json").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "binlogscope", command, "--json", "-j", "2",
                             *inputs], stdout=out, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while not any(spools.iterdir()) and time.monotonic() < deadline:  # the pool has started
        time.sleep(0.01)
    time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    out.close()
    assert proc.returncode == 130, err
    assert err.decode().splitlines() == [f"binlogscope: {command}: interrupted"]
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # no process of the group is left
    assert list(spools.iterdir()) == []


def test_file_jobs_ctrl_c(tmp_path: Path) -> None:
    """Ctrl-C while workers decode binlog files."""
    _interrupt_jobs(tmp_path, "file", WORKLOAD.read_bytes(), ".binlog", 400)


CAPTURES = sorted((REPO / "captures").glob("pcap-*.pcap*"))


def _pcap(*args: str, unbuffered: bool = False) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"  # (stdout unbuffered: a LineWriter per capture on it)
    return subprocess.run([sys.executable, "-m", "binlogscope", "pcap", *args],
                          capture_output=True, env=env, check=False)


@pytest.mark.parametrize("mode", [("--json",), ("--summary", "--json"), ("--brief",)])
def test_pcap_of_several_captures_jobs_writes_what_separate_runs_write(
        tmp_path: Path, mode: tuple[str, ...]) -> None:
    """Several captures, a truncated one and a file that is no capture among them: ``--jobs 3``
    writes what ``--jobs 1`` writes, which is what one ``pcap`` per capture writes, in the
    captures' order, the messages too; the worst exit status."""
    truncated = tmp_path / "truncated.pcap"
    data = CAPTURES[0].read_bytes()
    truncated.write_bytes(data[: len(data) * 2 // 3])
    garbage = tmp_path / "garbage.pcap"
    garbage.write_bytes(b"not a capture at all")
    paths = [*map(str, CAPTURES[:2]), str(truncated), str(garbage), *map(str, CAPTURES[2:])]
    one = _pcap(*mode, "-j", "1", *paths, unbuffered=True)
    many = _pcap(*mode, "-j", "3", *paths)
    alone = [_pcap(*mode, p) for p in paths]
    assert many.stdout == one.stdout == b"".join(r.stdout for r in alone)
    assert len(one.stdout) > 1000
    assert many.stderr == one.stderr == b"".join(r.stderr for r in alone)
    assert many.returncode == one.returncode == max(r.returncode for r in alone) == 1
    messages = many.stderr.decode()
    assert "truncated.pcap" in messages and "garbage.pcap" in messages
    assert messages.index("truncated.pcap") < messages.index("garbage.pcap")
    assert b"Traceback" not in many.stderr + one.stderr


def test_pcap_jobs_ctrl_c(tmp_path: Path) -> None:
    """Ctrl-C while the workers decode captures."""
    data = max(CAPTURES, key=lambda p: p.stat().st_size).read_bytes()
    _interrupt_jobs(tmp_path, "pcap", data, ".pcap", 150)


@pytest.mark.slow
def test_a_failing_job_never_hangs_the_run() -> None:
    """200 failing runs in a row with a busy background thread (tests/pipeline/jobs_stress.py),
    in a process of their own under a time limit: each ends with the job's error. With
    multiprocessing.Pool 2 of 6 such processes hung for good in pool.join() (a worker forked
    just before terminate() missed its SIGTERM, then waited for the task queue's lock
    terminate() held): that process is killed at the limit and the test fails. (About 40 s on
    an idle 2-core box: the busy thread holds the GIL.)"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    try:
        proc = subprocess.run([sys.executable, "-m", "tests.pipeline.jobs_stress", "200"],
                              capture_output=True, text=True, env=env, timeout=400,
                              check=False, start_new_session=True)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"a run hung: {(exc.stdout or b'')[-200:]!r}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("run 200 done")


def _record_job(running: Path, item: tuple[int, float], spool: str) -> int:
    """Notes itself in ``running`` while it runs; the most workers it saw at once."""
    n, delay = item
    me = running / str(os.getpid())
    me.touch()
    most = len(list(running.iterdir()))
    time.sleep(delay)
    with open(spool, "w") as f:
        f.write(f"{n}\n")
    most = max(most, len(list(running.iterdir())))
    me.unlink()
    return most


def test_at_most_jobs_workers_and_twice_that_in_flight(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow first input: the others finish behind it, but no more than ``jobs`` run at once
    and no more than ``2 * jobs`` spools wait on disk."""
    spools = tmp_path / "spools"
    spools.mkdir()
    running = tmp_path / "running"
    running.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spools))  # (TMPDIR is read once)
    items = [(n, 0.6 if n == 0 else 0.02) for n in range(12)]
    waiting: list[int] = []
    most: list[int] = []

    def done(item: tuple[int, float], result: int) -> None:
        waiting.append(sum(1 for d in spools.iterdir() for _ in d.iterdir()))
        most.append(result)

    out = io.BytesIO()
    run_in_order(items, functools.partial(_record_job, running), 3, out, done)
    assert out.getvalue() == b"".join(f"{n}\n".encode() for n in range(12))
    # (done() comes after the input's own spool is removed: the 5 after it at most)
    assert max(most) <= 3 and max(waiting) <= 5
    assert waiting[0] == 5  # (the slow input held back the next 5: the window was used)


def _pid_job(pids: Path, n: int, spool: str) -> int:
    (pids / str(os.getpid())).touch()
    if n == 0:
        time.sleep(0.3)
        raise ValueError("input 0 is bad")
    time.sleep(60)  # (stopped long before)
    return n


def test_a_failure_stops_the_other_workers_and_leaves_none(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """The first input fails while the others still run: the error comes at once (the others
    are killed, not waited for), with the worker's traceback as its cause, and no worker is
    left, not even as a zombie."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    pids = tmp_path / "pids"
    pids.mkdir()
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="input 0 is bad") as info:
        run_in_order(list(range(6)), functools.partial(_pid_job, pids), 3, io.BytesIO(),
                     lambda item, r: None)
    assert time.monotonic() - t0 < 20
    assert "_pid_job" in str(info.value.__cause__)  # (where it was raised)
    started = [int(p.name) for p in pids.iterdir()]
    assert len(started) == 3
    for pid in started:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # (a zombie would still take signal 0)
    assert list(tmp_path.iterdir()) == [pids]


class _UnloadableError(Exception):
    def __init__(self, what: str, code: int) -> None:
        super().__init__(f"{what} ({code})")


def _unloadable_job(n: int, spool: str) -> int:
    raise _UnloadableError("no such table", 7)


def _dying_job(n: int, spool: str) -> int:
    if n == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    Path(spool).write_text(f"{n}\n")
    return n


def test_what_does_not_come_back_is_an_error_not_a_hang(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """An exception that does not come back through pickle comes back as its text; a worker
    killed before its answer is an error of its input."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"_UnloadableError: no such table \(7\)"):
        run_in_order([0, 1], _unloadable_job, 2, io.BytesIO(), lambda item, r: None)
    out = io.BytesIO()
    with pytest.raises(RuntimeError, match=r"input #1 ended without a result \(killed by SIGKILL"):
        run_in_order([0, 1, 2], _dying_job, 2, out, lambda item, r: None)
    assert out.getvalue() == b"0\n"
    assert list(tmp_path.iterdir()) == []
