"""``export --jobs N`` (export/parallel.py): one process per input, published in input order,
the same dataset as one process (``--jobs 1``), a damaged and an unreadable input among good
ones, captures, Ctrl-C (exit 130, only whole inputs kept) and the resume after it."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from binlogscope.cli.main import main
from binlogscope.export.arrow import STATE_FILE, read_state
from binlogscope.export.core import JOBS_STAGING
from binlogscope.export.records import BinlogFileSource, WrittenRun
from tests.export.datasets import assert_same_dataset, assert_same_errors

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "captures"
WORKLOAD = CAPTURES / "mariadb-10.11-workload.000001"
SMALL = [CAPTURES / "pcap-semisync.binlog", CAPTURES / "pcap-pymysqlrepl.binlog",
         CAPTURES / "pcap-mariadb-binlog.binlog"]


def _export(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(["export", *argv], out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def _inputs_by_checkpoint(root: Path) -> list[str]:
    """The ``source`` of the events parts, in checkpoint order (repeats dropped)."""
    seen: list[str] = []
    for part in sorted((root / "events").rglob("part-*.parquet"), key=lambda p: p.name):
        for src in pq.read_table(part, columns=["source"]).column(0).to_pylist():
            if not seen or seen[-1] != src:
                seen.append(src)
    return seen


def test_jobs_export_equals_one_process_with_bad_inputs_among_good(tmp_path: Path) -> None:
    """The big input first (it finishes last), a damaged and an unreadable input among good
    ones: every table equal to ``--jobs 1``'s, the same errors rows, messages and exit code,
    each input one checkpoint, published in input order."""
    damaged = tmp_path / "damaged.000001"
    data = bytearray(WORKLOAD.read_bytes())
    data[5000] ^= 0xFF  # a checksum mismatch in one event
    damaged.write_bytes(bytes(data[: len(data) - 100]))  # and a truncated last event
    garbage = tmp_path / "garbage.000001"
    garbage.write_bytes(b"not a binlog at all")
    inputs = [str(WORKLOAD), str(SMALL[0]), str(damaged), str(garbage), *map(str, SMALL[1:])]
    rc1, out1, err1 = _export(*inputs, "--out", str(tmp_path / "one"), "--jobs", "1")
    rcn, outn, errn = _export(*inputs, "--out", str(tmp_path / "many"), "--jobs", "3")
    assert rc1 == rcn == 1
    assert errn == err1 and "Traceback" not in errn
    lines = errn.splitlines()
    assert len(lines) == 2 and "garbage.000001" in lines[0] and "damaged.000001: damaged" in \
        lines[1], lines
    # the counts line (not the dataset's name, not the time)
    assert outn.split(" to ")[0] == out1.split(" to ")[0]
    assert "1 input(s) failed" in outn
    counts = assert_same_dataset(tmp_path / "one", tmp_path / "many")
    assert counts["events"] > 300 and counts["rows"] > 300
    assert_same_errors(tmp_path / "one", tmp_path / "many")
    state = read_state(tmp_path / "many")
    assert state is not None and state["complete"] and state["resume"] is None
    assert state["checkpoint"] == len(inputs)  # one checkpoint per input
    assert state["counts"] == read_state(tmp_path / "one")["counts"]  # type: ignore[index]
    # the parts of input i are checkpoint i + 1: the inputs' data in input order
    assert _inputs_by_checkpoint(tmp_path / "many") == [inputs[i] for i in (0, 1, 2, 4, 5)]
    assert not (tmp_path / "many" / JOBS_STAGING).exists()


def test_jobs_export_of_captures(tmp_path: Path) -> None:
    caps = [str(CAPTURES / "pcap-semisync.pcap"), str(CAPTURES / "pcap-mariadb-binlog.pcap"),
            str(CAPTURES / "pcap-loss-reorder.pcap")]
    rc1, out1, err1 = _export("--pcap", *caps, "--out", str(tmp_path / "one"), "-j", "1")
    rcn, outn, errn = _export("--pcap", *caps, "--out", str(tmp_path / "many"), "-j", "2")
    assert rc1 == rcn and errn == err1
    assert outn.split(" to ")[0] == out1.split(" to ")[0]
    counts = assert_same_dataset(tmp_path / "one", tmp_path / "many")
    assert counts["packets"] > 100
    assert_same_errors(tmp_path / "one", tmp_path / "many")


def test_jobs_must_be_positive(tmp_path: Path) -> None:
    rc, _, err = _export(str(WORKLOAD), str(SMALL[0]), "--out", str(tmp_path / "x"), "-j", "0")
    assert rc == 2 and err == "binlogscope: export: --jobs must be at least 1\n"
    assert not (tmp_path / "x").exists()


def test_jobs_export_ctrl_c_keeps_whole_inputs_and_resumes(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) while the workers run: one
    line, exit 130, no worker and no staging left; the note claims only inputs whose parts are
    all there, and ``--resume`` finishes the export with the one process export's counts."""
    inputs = []
    data = WORKLOAD.read_bytes()
    for i in range(60):  # (enough work that an idle machine does not finish before the signal)
        p = tmp_path / "in" / f"copy.{i:06d}"
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(data)
        inputs.append(str(p))
    ds = tmp_path / "ds"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    proc = subprocess.Popen([sys.executable, "-m", "binlogscope", "export", *inputs, "--out",
                             str(ds), "-j", "2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    staging = ds / JOBS_STAGING
    while not (staging.is_dir() and any(staging.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.01)  # (a worker has started writing its input)
    time.sleep(0.3)
    assert proc.poll() is None, "the export ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert out == b""
    assert err.decode().splitlines() == [
        f"binlogscope: export: interrupted; {ds} holds everything up to the last checkpoint; "
        f"finish with: binlogscope export --resume --out {ds}"]
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # no worker is left
    assert not staging.exists()
    state = read_state(ds)
    assert state is not None and not state["complete"]
    done = state["resume"]["input_index"]
    assert done < len(inputs) and state["checkpoint"] == done
    # every published input is whole: its events are the one file's, nothing of later inputs
    per_input = pq.read_table(str(ds / "events")).column("source").to_pylist() if done else []
    one = _export(str(WORKLOAD), "--out", str(tmp_path / "one"), "-j", "1")
    assert one[0] == 0
    n = read_state(tmp_path / "one")["counts"]["events"]  # type: ignore[index]
    assert sorted(set(per_input)) == inputs[:done]
    assert all(per_input.count(p) == n for p in inputs[:done])
    assert state["counts"]["events"] == n * done
    rc, _, err2 = _export("--resume", "--out", str(ds), "-j", "2")
    assert rc == 0, err2
    final = read_state(ds)
    assert final is not None and final["complete"]
    assert final["counts"]["events"] == n * len(inputs)
    assert (ds / STATE_FILE).is_file() and not staging.exists()


def test_jobs_resume_of_an_export_stopped_inside_an_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An export left inside an input by one process (``--jobs 1``, SIGTERM after 100 events,
    a checkpoint every 20) is finished by ``--resume --jobs 2`` (one process from there): the
    dataset equals an export that was never stopped."""
    inputs = [str(WORKLOAD), str(SMALL[0])]
    assert _export(*inputs, "--out", str(tmp_path / "whole"), "-j", "1")[0] == 0
    original = BinlogFileSource.records

    def records(self: BinlogFileSource, *args: Any, **kwargs: Any) -> Iterator[Any]:
        seen = 0  # (events: a run the kernel read counts its events)
        for rec in original(self, *args, **kwargs):
            n = len(rec.values) if isinstance(rec, WrittenRun) else 1
            if seen < 100 <= seen + n:
                os.kill(os.getpid(), signal.SIGTERM)
            seen += n
            yield rec

    monkeypatch.setattr(BinlogFileSource, "records", records)
    ds = tmp_path / "ds"
    rc, _, err = _export(*inputs, "--out", str(ds), "-j", "1", "--checkpoint-events", "20")
    assert rc == 130, err
    state = read_state(ds)
    assert state is not None and state["resume"]["offset"] is not None  # inside input 0
    monkeypatch.setattr(BinlogFileSource, "records", original)
    rc, _, err = _export("--resume", "--out", str(ds), "-j", "2")
    assert rc == 0, err
    assert_same_dataset(tmp_path / "whole", ds)
